#!/usr/bin/env bash
# diag comm slow-rank detection and the connectivity sweep with comm/'s fault knob: rank 2 delays
# every send and collective by 20 ms (ASCENT_FAULT=delay), which puts its 64 KiB ping-pongs about
# 1000x below a shared-memory link; the matrix must name rank 2 and only rank 2 as slow, the sweep
# with a 10 ms timeout must name exactly the pairs that involve it, and without the fault nothing is
# flagged.
# A loaded 2-core host running 4 ranks can deschedule a healthy rank during all of its ping-pongs
# (under a load of 8, all three links of rank 0 once measured 3% of the median): the healthy ranks'
# links are a measurement the test checks before it judges the verdicts. When a healthy rank or link
# is itself below the product's rules (0.5 x the median of the healthy ranks' best links, 0.5 x the
# median of the healthy links; the test computes both from the matrix), or a pair of healthy ranks
# did not answer the sweep within its timeout, the run is measured again, up to 6 times; every
# verdict assertion is the same on the run that is judged. Rank 2's own side of each of its pairs
# takes at least the 20 ms it sleeps, so its pairs are late under any load.
set -u
fail() { echo "FAIL: $*"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
MPI=(mpirun -np 4 --oversubscribe --mca mpi_yield_when_idle 1)
ARGS=(--ops allreduce -b 8 -e 1K -f 8 --iters 2 --warmup 1 --matrix-bytes 64K --json)

source "$ASCENT_ROOT/tests/integration/diag_common.inc"   # healthy_clean

# measure OUT EXPECTED_RC SLOW_RANK... -- MPI_ARGS... : run diag comm into OUT.json/OUT.err until
# its healthy ranks and links are clean, at most 6 times
measure() {
  local out=$1 want=$2 bad=() rc try; shift 2
  while [[ $1 != -- ]]; do bad+=("$1"); shift; done; shift
  for try in 1 2 3 4 5 6; do
    "${MPI[@]}" "$@" >"$out.json" 2>"$out.err"
    rc=$?
    [[ $rc -eq $want ]] || fail "$out: exit $rc, expected $want: $(tail -5 "$out.err")"
    healthy_clean "$out.json" "${bad[@]}" && return 0
    echo "$out: measurement $try of 6 disturbed"
  done
  fail "$out: a healthy rank or link was below the rules in 6 measurements"
}

# unanswered pairs exit 1
measure slow 1 2 -- -x ASCENT_FAULT=delay:rank=2,ms=20 "$ASCENT" diag comm "${ARGS[@]}" --matrix-iters 20 --timeout 0.01
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
# no fault: best of 30 (no delay here, so it costs milliseconds)
measure ok 0 -- "$ASCENT" diag comm "${ARGS[@]}" --matrix-iters 30
python3 - <<'PY' || exit 1
import json
c = {x["name"]: x for x in json.load(open("ok.json"))["checks"]}
for n in ("comm.connectivity", "comm.slow_rank", "comm.slow_link"):
    assert c[n]["status"] == "PASS", c[n]
PY
echo ok
