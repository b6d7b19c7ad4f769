#!/usr/bin/env bash
# tests/integration/dist_hang.sh — a real training job that hangs: under DP=2, rank 1 never enters
# its 12th collective on the world communicator (a blocking one: the per-step loss and gradient-norm
# sums; ASCENT_FAULT=hang:...,comm=world); the watchdog (ASCENT_COMM_TIMEOUT=2) stops the job within
# seconds, the flight recorder leaves dumps in RUN/flight/, and `ascent diag hang RUN` names rank 0
# as stuck in that collective and rank 1 as the one that never arrived. (A hang inside the
# overlapped gradient buckets, where many non-blocking collectives are in flight at once, is
# tests/integration/diag_hang_buckets.sh.)
set -uo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
export ASCENT_COMM_TIMEOUT=2 ASCENT_FAULT=hang:rank=1,seq=12,comm=world
start=$(date +%s)
timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 --mca odls_base_sigkill_timeout 5 -x ASCENT_COMM_TIMEOUT -x ASCENT_FAULT -np 2 \
  "$ASCENT" train "${SMALL[@]}" --dp 2 --out run >out.txt 2>&1
rc=$?
el=$(( $(date +%s) - start ))
[[ $rc -ne 0 && $rc -ne 124 ]] || { tail -20 out.txt; echo "FAIL: job exit $rc (expected a non-zero exit, not the test's timeout)"; exit 1; }
[[ $el -le 40 ]] || { echo "FAIL: took ${el}s to stop"; exit 1; }
grep -q "comm timeout on rank 0" out.txt || { tail -20 out.txt; echo "FAIL: no timeout message from rank 0"; exit 1; }
[[ -s run/flight/rank-00000.json && -s run/flight/rank-00001.json ]] || { ls -R run; echo "FAIL: no flight dumps"; exit 1; }
"$ASCENT" diag hang run >hang.txt 2>&1
cat hang.txt
grep -q "rank 1 ([^)]*) never arrived at .* seq 12 on 'world'" hang.txt || { echo "FAIL: missing rank not named"; exit 1; }
grep -q "rank 0 ([^)]*) in .* seq 12 on 'world'" hang.txt || { echo "FAIL: stuck rank not named"; exit 1; }
echo "ok (stopped after ${el}s)"
