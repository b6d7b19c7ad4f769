#!/usr/bin/env bash
# diff_ascend.sh — `ascent diff` across two sources (docs/diff.md): the torch_npu database export
# against the text export of the same 2-rank job (tests/fixtures/ascend), both folders imported on
# the fly. Every CPU operator and every kernel name is on both sides as often (nothing added or
# removed: the same job); Python functions whose names hold an object's address (which differ
# between the exports) match once the address is elided, and not with --exact-names; the operators'
# device work on the database side (operator → CANN call → task links) equals a computation of its
# own here in SQL and Python. Imported first (the summary tables import builds), rank by rank too,
# the diff equals the on-the-fly one field by field (docs/diff.md, Speed).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/ascend"
fail() { echo "FAIL: $*"; exit 1; }
tar -xzf "$F/msinsight_db_level1.tar.gz"
tar -xzf "$F/msinsight_text_level1.tar.gz"
DB=msinsight_db_level1 TX=msinsight_text_level1
"$ASCENT" diff $DB $TX --format json >d.json 2>d.err || fail "diff: $(cat d.err)"
"$ASCENT" diff $DB $TX --format json --exact-names >x.json 2>/dev/null || fail "diff --exact-names"
"$ASCENT" import $DB -o db.db -q 2>/dev/null
"$ASCENT" import $TX -o tx.db -q 2>/dev/null
for r in "" "--rank 1" "--rank-a 0 --rank-b 1"; do
  "$ASCENT" diff $DB $TX -q $r --format json >scan.json 2>/dev/null || fail "diff $r"
  "$ASCENT" diff db.db tx.db $r --format json >summary.json || fail "diff db.db tx.db $r"
  python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in ("scan.json", "summary.json"))
for k in ("a", "b"):
    a.pop(k), b.pop(k)
sys.exit(0 if a == b and a["op_device"] else "%s: %s" % (sys.argv[1], [k for k in a if a[k] != b[k]]))' "$r" \
    || fail "the summary tables' diff differs from the events'"
done
python3 - <<'PY' || fail "database vs text export"
import collections, json, sqlite3
d = json.load(open("d.json"))
for o in d["ops"]:
    if o["kind"] in ("op", "kernel"):
        assert o["category"] == "unchanged", o
ops = [o for o in d["ops"] if o["kind"] == "op"]
assert len(ops) > 100, len(ops)
addr = [o for o in d["ops"] if "0x..." in o["name"]]
assert addr and all(o["category"] == "unchanged" for o in addr), [o for o in addr if o["category"] != "unchanged"][:3]
x = json.load(open("x.json"))
assert not any("0x..." in o["name"] for o in x["ops"])
assert sum(o["category"] == "added" for o in x["ops"]) > sum(o["category"] == "added" for o in d["ops"])

# the operators' device work, database side: a launch whose call is the end of an operator → call
# link counts at that operator's start on its thread
db = sqlite3.connect("db.db")
name = dict(db.execute("SELECT id, value FROM string"))
spans = collections.defaultdict(list)
for r, t, s, du, n in db.execute("SELECT rank, tid, start_ns, dur_ns, name_id FROM event WHERE kind = 0"):
    spans[(r, t)].append((s, s + du, name[n]))
dev, launched = collections.Counter(), collections.Counter()
for r, t, ns, ct, cns, dur in db.execute(
        "SELECT f.rank, f.src_tid, f.src_ns, c.src_tid, c.src_ns, max(e.dur_ns) FROM flow f JOIN event e ON e.rank = f.rank"
        " AND e.tid = f.dst_tid AND e.start_ns = f.dst_ns LEFT JOIN flow c ON c.rank = f.rank AND c.kind = 2 AND"
        " c.dst_tid = f.src_tid AND c.dst_ns = f.src_ns WHERE f.kind = 0 AND e.kind IN (1, 11, 12, 13) GROUP BY f.rowid"):
    if ct is not None:
        t, ns = ct, cns
    for n in {o[2] for o in spans[(r, t)] if o[0] <= ns < o[1]}:
        dev[n] += dur
        launched[n] += 1
rows = {o["name"]: o for o in d["op_device"]}
assert dev and set(rows) == set(dev), sorted(set(rows) ^ set(dev))[:10]
for n, o in rows.items():
    assert (o["a_device_ns"], o["a_launched"]) == (dev[n], launched[n]), (n, o, dev[n], launched[n])
print("database vs text: %d operators matched, %d with device work" % (len(ops), len(rows)))
PY
echo "diff_ascend: ok"
