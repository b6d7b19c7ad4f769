#!/usr/bin/env python3
"""tests/integration/import_compare.py A.db B.db [-v] — two profiles hold the same data: every table's
rows compared as multisets (sqlite3, independent of ascent), string ids replaced by their text (the
order strings were interned in may differ), creation times left out. Exit 1 and the first rows that
differ when they do not."""
import sqlite3, sys, collections
a, b = sys.argv[1], sys.argv[2]
def tables(db):
    return sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"))
def rows(db, t):
    cols = [r[1] for r in db.execute(f"PRAGMA table_info({t})")]
    sel, joins = [], []
    for i, c in enumerate(cols):
        if c == "created_utc":
            continue
        if c in ("name_id", "site_id") and t != "string":
            sel.append(f"s{i}.value"); joins.append(f"LEFT JOIN string s{i} ON s{i}.id = x.{c}")
        else:
            sel.append(f"x.{c}")
    q = f"SELECT {', '.join(sel)} FROM {t} x {' '.join(joins)}"
    if t == "meta":
        q += " WHERE x.key NOT IN ('created_utc')"
    if t == "string":
        q = "SELECT value FROM string"
    return collections.Counter(db.execute(q).fetchall())
A, B = sqlite3.connect(a), sqlite3.connect(b)
ta, tb = tables(A), tables(B)
bad = 0
if ta != tb:
    print("tables differ:", set(ta) ^ set(tb)); bad = 1
for t in ta:
    if t not in tb: continue
    ra, rb = rows(A, t), rows(B, t)
    n = sum(ra.values())
    if ra != rb:
        bad = 1
        print(f"{t}: differ ({n} vs {sum(rb.values())} rows); only in {a}: {list((ra - rb).items())[:3]}; only in {b}: {list((rb - ra).items())[:3]}")
    elif len(sys.argv) > 3 and sys.argv[3] == '-v':
        print(f"{t}: {n} rows equal")
sys.exit(bad)
