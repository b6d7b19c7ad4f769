#!/usr/bin/env bash
# diag comm slow-rank detection and the connectivity sweep with comm/'s fault knob: rank 2 delays
# every send and collective by 20 ms (ASCENT_FAULT=delay); the matrix must name rank 2 and only
# rank 2 as slow, the sweep with a 10 ms timeout must name exactly the pairs that involve it, and
# without the fault nothing is flagged. Best of 10 ping-pongs per pair: with 3, a link between two
# healthy ranks oversubscribed on a loaded 2-core host once measured 48% of the median (flagged).
set -u
fail() { echo "FAIL: $*"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
MPI=(mpirun -np 4 --oversubscribe --mca mpi_yield_when_idle 1)
ARGS=(--ops allreduce -b 8 -e 1K -f 8 --iters 2 --warmup 1 --matrix-bytes 64K --matrix-iters 10 --json)
"${MPI[@]}" -x ASCENT_FAULT=delay:rank=2,ms=20 "$ASCENT" diag comm "${ARGS[@]}" --timeout 0.01 >slow.json 2>slow.err
rc=$?
[[ $rc -eq 1 ]] || fail "unanswered pairs must exit 1 (got $rc): $(tail -5 slow.err)"
python3 - <<'PY' || exit 1
import json
d = json.load(open("slow.json"))
c = {x["name"]: x for x in d["checks"]}
sr = c["comm.slow_rank"]
assert sr["status"] == "WARN", sr
assert "rank 2 (" in sr["message"] and "1 slow rank(s)" in sr["message"], sr["message"]
assert "0.50 x median" in sr["message"], "rule and threshold stated"
assert c["comm.slow_link"]["status"] == "PASS", c["comm.slow_link"]   # its links are explained by the rank
cn = c["comm.connectivity"]
assert cn["status"] == "FAIL", cn
bad = {(p["a"], p["b"]) for p in d["connectivity"]["pairs"] if not p["ok"]}
assert bad == {(0, 2), (1, 2), (2, 3)}, bad
g = d["matrix"]["gbs"]
assert max(g[2][j] for j in (0, 1, 3)) < 0.5 * min(g[0][1], g[0][3], g[1][3]), g
PY
"${MPI[@]}" "$ASCENT" diag comm "${ARGS[@]}" >ok.json 2>ok.err || fail "no fault must pass: $(tail -5 ok.err)"
python3 - <<'PY' || exit 1
import json
c = {x["name"]: x for x in json.load(open("ok.json"))["checks"]}
for n in ("comm.connectivity", "comm.slow_rank", "comm.slow_link"):
    assert c[n]["status"] == "PASS", c[n]
PY
echo ok
