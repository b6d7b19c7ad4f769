#!/usr/bin/env bash
# diag comm: nccl-tests table and footer as one process and under mpirun (2 and 3 ranks, every
# collective, exact checks), the JSON contract (checks, rows, matrix), --min-busbw failing, and a
# wrong element (ASCENT_DIAG_CORRUPT test knob) failing with exit 1 and naming the rank and host.
set -u
fail() { echo "FAIL: $*"; exit 1; }
SMALL=(-b 8 -e 16K -f 8 --iters 3 --warmup 1 --matrix-bytes 16K --matrix-iters 2)

# one process (singleton MPI)
"$ASCENT" diag comm --ops allreduce,broadcast "${SMALL[@]}" >one.txt 2>one.err || fail "one process: $(cat one.txt one.err)"
grep -q '^#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong$' one.txt \
  || fail "nccl-tests header missing: $(head -20 one.txt)"
grep -q '^# Out of bounds values : 0 OK$' one.txt || fail "footer: $(cat one.txt)"
grep -q '^# Avg bus bandwidth    : ' one.txt || fail "avg busbw footer"
grep -Eq '^ +8 +2 +float +sum +-1 ' one.txt || fail "8-byte allreduce row: $(cat one.txt)"
grep -q '^SKIP comm.connectivity' one.txt || fail "one rank: connectivity must be skipped"
"$ASCENT" diag comm -b 1K -e 512 >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "-b > -e must be a usage error"
"$ASCENT" diag comm --ops allreduce,bogus >/dev/null 2>err.txt; [[ $? -eq 2 ]] || fail "unknown op must exit 2"
grep -q "bogus" err.txt || fail "error must name the op: $(cat err.txt)"

command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
MPI=(mpirun --oversubscribe --mca mpi_yield_when_idle 1)
"${MPI[@]}" -np 2 "$ASCENT" diag comm "${SMALL[@]}" --check --json >two.json 2>two.err || fail "np 2: $(cat two.err)"
python3 - <<'PY' || exit 1
import json
d = json.load(open("two.json"))
names = {c["name"]: c for c in d["checks"]}
for op in ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "sendrecv"):
    assert names["comm.%s.wrong" % op]["status"] == "PASS", names["comm.%s.wrong" % op]
    rows = [r for r in d["rows"] if r["op"] == op]
    assert rows, op
    for r in rows:
        for k in ("bytes", "time_us", "algbw_gbs", "busbw_gbs", "wrong", "in_place"):
            assert k in r, (op, k)
        assert r["wrong"] == 0 and r["time_us"] > 0
        f = {"allreduce": 1.0, "allgather": 0.5, "reducescatter": 0.5, "alltoall": 0.5}.get(op, 1.0)
        assert abs(r["busbw_gbs"] - r["algbw_gbs"] * f) < 1e-9 * max(1, r["algbw_gbs"]), (op, r)
assert {r["in_place"] for r in d["rows"] if r["op"] == "allreduce"} == {True, False}
assert names["comm.connectivity"]["status"] == "PASS"
assert names["comm.slow_rank"]["status"] == "SKIP"          # 2 ranks: undecidable, and says so
m = d["matrix"]
assert len(m["gbs"]) == 2 and m["gbs"][0][1] > 0 and m["gbs"][0][1] == m["gbs"][1][0]
assert "median" in m["rule"] and m["ranks"][1]["host"]
PY
# three ranks: non-power-of-two sizes and counts, still exact
"${MPI[@]}" -np 3 "$ASCENT" diag comm -b 12 -e 3000 -f 5 --iters 2 --warmup 1 --no-matrix >three.txt 2>&1 || fail "np 3: $(tail -30 three.txt)"
grep -q 'Out of bounds values : 0 OK   (all collectives)' three.txt || fail "np 3 footer"
# --min-busbw far above what shared memory does: FAIL, exit 1
"${MPI[@]}" -np 2 "$ASCENT" diag comm --ops allreduce "${SMALL[@]}" --no-matrix --min-busbw 100000 >bw.txt 2>&1; rc=$?
[[ $rc -ne 0 ]] || fail "--min-busbw 100000 must fail"
grep -q '^FAIL comm.allreduce.busbw' bw.txt || fail "$(cat bw.txt)"
grep -q 'Avg bus bandwidth    : .* FAILED' bw.txt || fail "footer must say FAILED"
# a corrupted element on rank 1: counted, named, exit 1
"${MPI[@]}" -np 3 -x ASCENT_DIAG_CORRUPT=1 "$ASCENT" diag comm --ops allreduce,alltoall "${SMALL[@]}" --no-matrix >bad.txt 2>&1; rc=$?
[[ $rc -ne 0 ]] || fail "a wrong element must fail the run"
grep -Eq '^FAIL comm.allreduce.wrong: [0-9]+ wrong element\(s\) over 3 rank\(s\): rank 1 \([^)]+\) [0-9]+$' bad.txt || fail "$(grep comm bad.txt)"
grep -q '^# Out of bounds values : [1-9][0-9]* FAILED$' bad.txt || fail "footer must count the wrong elements"
echo ok
