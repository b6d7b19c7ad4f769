#!/usr/bin/env bash
# tests/integration/import_hosts.sh — the host of an imported Kineto trace (docs/import.md, Kineto's
# mapping): from the trace when it names one (metadata.system.uname.node, as the H100 Qwen trace of
# tests/fixtures/kineto does), else from a file name as torch's tensorboard_trace_handler writes it
# ({host}_{pid}.{timestamp}.pt.trace.json: only the trailing _<digits> is the pid), else none; the
# files named counted in a warning. A job of two hosts × two ranks, made from copies of the real
# trace_filter rank 0 (distributedInfo rank r of 4, the NCCL kernels given the two-member group of
# r and r xor 2, on the other host) with host names holding dots, dashes and underscores: the rank
# table's hosts, `report --by matrix`'s host pairs, the same hosts with -j 2, and the advisor's
# host.slow: quiet when the hosts are alike, naming the host whose ranks were planted 1.5 × slower.
# Hosts' clocks (docs/import.md): host B's timestamps 8 ms ahead are fitted from the NCCL kernels'
# ends (its ranks' clock offset −8 ms, said on stderr, -j 2 alike), so host.slow stays quiet; alike
# clocks are left as they are.
set -euo pipefail
F=$ASCENT_ROOT/tests/fixtures/kineto
fail() { echo "FAIL: $*"; exit 1; }

gen() {   # gen DIR STRETCH [SHIFT_MS]: the four files, host B's ranks STRETCH × slower (times and
          # durations) and its clock SHIFT_MS ahead
  mkdir -p "$1"
  python3 - "$F/trace_filter__sampled_rank-0.json.gz" "$1" "$2" "${3:-0}" <<'PY'
import gzip, json, os, sys
src, out, stretch, shift_us = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]) * 1000
d = json.load(gzip.open(src))
hosts = ["gpu-node.a_rack1", "gpu-node.b_rack1"]
for r in range(4):
    h = r // 2
    lo, hi = sorted((r, r ^ 2))
    e = json.loads(json.dumps(d))
    e["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": 4, "pg_count": 1,
                            "pg_config": [{"pg_name": "pp%d" % lo, "pg_desc": "pipeline", "pg_size": 2, "ranks": [lo, hi]}]}
    evs = e["traceEvents"]
    t0 = min(x["ts"] for x in evs if isinstance(x.get("ts"), (int, float)))
    f = stretch if h == 1 else 1.0
    for x in evs:
        if isinstance(x.get("ts"), (int, float)):
            x["ts"] = round(t0 + (x["ts"] - t0) * f + (shift_us if h == 1 else 0), 3)
        if isinstance(x.get("dur"), (int, float)):
            x["dur"] = round(x["dur"] * f, 3)
        if x.get("cat") == "kernel" and "nccl" in x.get("name", "").lower():
            x.setdefault("args", {}).update({
                "Process Group Name": "pp%d" % lo, "Process Group Description": "pipeline",
                "Process Group Ranks": "[%d, %d]" % (lo, hi), "Group size": 2,
                "In msg nelems": 1 << 22, "Out msg nelems": 1 << 22, "dtype": "Byte"})
    with gzip.open(os.path.join(out, "%s_%d.%d.pt.trace.json.gz" % (hosts[h], 4000 + r, 1682725897226 + r)), "wt") as g:
        json.dump(e, g)
PY
}

# alike hosts: hosts from the names, counted; the matrix by host pair; host.slow runs and stays quiet
gen same 1.0
"$ASCENT" import same -o same.db 2>same.err || fail "import: $(cat same.err)"
grep -q "warning: 4 files whose host is read from their name" same.err || fail "the hosts' source is not counted: $(cat same.err)"
[[ $(sqlite3 same.db "SELECT group_concat(rank || '=' || host, ' ') FROM (SELECT * FROM rank ORDER BY rank)") == \
   "0=gpu-node.a_rack1 1=gpu-node.a_rack1 2=gpu-node.b_rack1 3=gpu-node.b_rack1" ]] ||
  fail "hosts: $(sqlite3 same.db 'SELECT rank, host FROM rank')"
"$ASCENT" report same.db --by matrix --format json >m.json || fail "report --by matrix"
python3 - <<'PY' || fail "the matrix by host"
import json
d = json.load(open("m.json"))
pairs = sorted((r["src_host"], r["dst_host"], r["transfers"], r["bytes"]) for r in d["host_matrix"])
assert pairs == [("gpu-node.a_rack1", "gpu-node.b_rack1", 20, 2 * 10 * 4 << 20),
                 ("gpu-node.b_rack1", "gpu-node.a_rack1", 20, 2 * 10 * 4 << 20)], pairs
print("matrix by host:", pairs)
PY
"$ASCENT" advise same.db --format json >same.adv.json || fail "advise"
python3 - same.adv.json ok <<'PY' || fail "host.slow on alike hosts"
import json, sys
d = json.load(open(sys.argv[1]))
rules = {r["rule"]: r for r in d["rules"]}
r = rules["host.slow"]
assert r["state"] == sys.argv[2], r
print("host.slow on alike hosts:", r["state"])
PY

! grep -q "clocks fitted" same.err || fail "alike clocks were moved: $(cat same.err)"
[[ $(sqlite3 same.db "SELECT count(*) FROM rank WHERE clock_offset_ns != 0") == 0 ]] || fail "alike clocks have offsets"

# host B's clock 8 ms ahead (its ranks would look late at every collective: host.slow fired Medium
# before the fit, "7% of their step time"): fitted, its ranks' offsets set, host.slow quiet; -j 2 alike
gen skew 1.0 8
for j in 1 2; do
  "$ASCENT" import skew -o skew$j.db -j $j 2>skew$j.err || fail "import -j $j: $(cat skew$j.err)"
  grep -q "import: hosts' clocks fitted from the collectives matched across hosts: gpu-node.b_rack1 8.00 ms ahead of gpu-node.a_rack1" skew$j.err ||
    fail "the fit is not said (-j $j): $(cat skew$j.err)"
  off=$(sqlite3 skew$j.db "SELECT group_concat(rank || '=' || clock_offset_ns, ' ') FROM (SELECT * FROM rank ORDER BY rank)")
  [[ $off == "0=0 1=0 2=-8000000 3=-8000000" ]] || fail "clock offsets (-j $j): $off"
  "$ASCENT" advise skew$j.db --format json >skew.adv.json || fail "advise"
  python3 - skew.adv.json ok <<'PY' || fail "host.slow on a host whose clock is ahead (-j $j)"
import json, sys
d = json.load(open(sys.argv[1]))
r = {r["rule"]: r for r in d["rules"]}["host.slow"]
assert r["state"] == sys.argv[2], r
print("host.slow with host B's clock 8 ms ahead:", r["state"])
PY
done

# the same hosts with -j 2 (import/parallel.c: each worker reads its files' names)
"$ASCENT" import same -o same2.db -j 2 2>same2.err || fail "import -j 2: $(cat same2.err)"
[[ $(sqlite3 same2.db "SELECT group_concat(rank || '=' || host, ' ') FROM (SELECT * FROM rank ORDER BY rank)") == \
   "0=gpu-node.a_rack1 1=gpu-node.a_rack1 2=gpu-node.b_rack1 3=gpu-node.b_rack1" ]] ||
  fail "hosts with -j 2: $(sqlite3 same2.db 'SELECT rank, host FROM rank')"
diff <(grep 'import: warning' same.err) <(grep 'import: warning' same2.err) || fail "the warnings differ with -j 2"

# a slow host: host.slow names it
gen slow 1.5
"$ASCENT" import slow -o slow.db -q 2>slow.err || fail "import: $(cat slow.err)"
"$ASCENT" advise slow.db --format json >slow.adv.json || fail "advise"
python3 - slow.adv.json <<'PY' || fail "host.slow on the planted host"
import json, sys
d = json.load(open(sys.argv[1]))
rules = {r["rule"]: r for r in d["rules"]}
assert rules["host.slow"]["state"] == "fired", rules["host.slow"]
f = [x for x in d["findings"] if x["rule"] == "host.slow"]
assert len(f) == 1 and "host gpu-node.b_rack1 is slow" in f[0]["title"], f
print("host.slow:", f[0]["title"])
PY

# the trace's own host wins over the name; a name of another form gives none, with no warning
cp "$F/tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz" "other-host_77.1682725897226.pt.trace.json.gz"
"$ASCENT" import "other-host_77.1682725897226.pt.trace.json.gz" -o own.db 2>own.err || fail "import: $(cat own.err)"
[[ $(sqlite3 own.db "SELECT host FROM rank") == ab5ece529443 ]] || fail "the trace's host: $(sqlite3 own.db 'SELECT host FROM rank')"
! grep -q "host is read from their name" own.err || fail "counted a host the trace named: $(cat own.err)"
"$ASCENT" import "$F/kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz" -o none.db -q ||
  fail "import resnet50"
[[ -z $(sqlite3 none.db "SELECT host FROM rank") ]] || fail "a host from a name of another form: $(sqlite3 none.db 'SELECT host FROM rank')"
echo "hosts: from names (dots, dashes, underscores kept; -j 2 alike), from the trace, none otherwise"
