#!/usr/bin/env bash
# export_roundtrip.sh — a DP=2 profile exported as a Chrome trace: a thread's wait on a collective
# is a slice of its own name ("wait: allreduce"), so that viewers counting slices by name
# (speedscope, Perfetto) count each collective once, as the report does; and the export imported
# back gives the same collectives (count, bytes, time, group size), communicators with traffic
# (members, calls, bytes), steps per rank and waits.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
train 2 ddp "${SMALL[@]}" --steps 4 --profile --dp 2
"$ASCENT" report ddp/trace.db --format json >a.json
"$ASCENT" export ddp/trace.db -o ddp.json >/dev/null
"$ASCENT" import ddp.json -o rt.db -q 2>rt.err || { echo "FAIL: import of the export: $(cat rt.err)"; exit 1; }
"$ASCENT" report rt.db --format json >b.json
python3 - <<'PY' || { echo "FAIL: export / round trip"; exit 1; }
import json, sqlite3
a, b = json.load(open("a.json")), json.load(open("b.json"))
tr = json.load(open("ddp.json"))["traceEvents"]
db = sqlite3.connect("ddp/trace.db")
# slices named like a collective are the collectives: as many, as long, as the report's
report = {}
for c in a["comm"]:
    n, t = report.get(c["name"], (0, 0))
    report[c["name"]] = (n + c["count"], t + c["total_ns"])
sl = {}
for e in tr:
    if e.get("ph") == "X" and e["name"] in report:
        n, t = sl.get(e["name"], (0, 0))
        sl[e["name"]] = (n + 1, t + e["dur"])
assert {k: v[0] for k, v in sl.items()} == {k: v[0] for k, v in report.items()}, (sl, report)
assert all(abs(sl[k][1] * 1000 - report[k][1]) <= report[k][0] for k in report), (sl, report)
waits = dict(db.execute("SELECT s.value, count(*) FROM event e JOIN string s ON s.id = e.name_id WHERE e.kind = 10 GROUP BY 1").fetchall())
got = {}
for e in tr:
    if e.get("cat") == "wait" and e.get("ph") in ("X", "b"):
        assert e["name"].startswith("wait: "), e
        got[e["name"][6:]] = got.get(e["name"][6:], 0) + 1
assert waits and got == waits, (got, waits)
# the round trip
key = lambda c: (c["name"], c["count"], c["bytes"], c["total_ns"], c["group_size"], c["matched"])
assert sorted(map(key, a["comm"])) == sorted(map(key, b["comm"])), (sorted(map(key, a["comm"]))[:3], sorted(map(key, b["comm"]))[:3])
assert any(c["bytes"] > 0 for c in b["comm"])
st = lambda d: [(s["rank"], s["step"], s["total_ns"]) for s in d["steps"]]
assert st(a) == st(b) and len(st(a)) == 8, (st(a), st(b))
gr = lambda d, pre: sorted((g["name"][len(pre):] if g["name"].startswith(pre) else g["name"], g["members"], g["count"], g["bytes"])
                           for g in d["groups"] if g["count"])
assert gr(a, "") == gr(b, "pg "), (gr(a, ""), gr(b, "pg "))
assert sorted(r["rank"] for r in b["ranks"]) == [0, 1], b["ranks"]
rt = sqlite3.connect("rt.db")
assert dict(rt.execute("SELECT s.value, count(*) FROM event e JOIN string s ON s.id = e.name_id WHERE e.kind = 10 GROUP BY 1").fetchall()) == waits
print("ok", report, "waits", waits, "groups", gr(b, "pg "))
PY
echo "export_roundtrip: ok"
