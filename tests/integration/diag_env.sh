#!/usr/bin/env bash
# diag env: clean environment passes; inconsistent timeouts, disagreeing launcher variables and a
# full disk fail (exit 1); a generic OpenBLAS core warns; under mpirun every rank agrees.
set -u
fail() { echo "FAIL: $*"; exit 1; }
status() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(c["status"] for c in d["checks"] if c["name"]==sys.argv[2]) or "NONE")' "$1" "$2"; }
CLEAN=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u OMP_NUM_THREADS
       -u OPENBLAS_NUM_THREADS -u HCCL_EXEC_TIMEOUT -u HCCL_EVENT_TIMEOUT -u HCCL_CONNECT_TIMEOUT)

"${CLEAN[@]}" "$ASCENT" diag env --json >a.json 2>/dev/null; rc=$?
[[ $rc -eq 0 ]] || fail "clean environment exited $rc: $(cat a.json)"
[[ $(status a.json env.timeouts) == PASS ]] || fail "timeouts"
[[ $(status a.json env.launcher) == PASS ]] || fail "launcher"

"${CLEAN[@]}" HCCL_EXEC_TIMEOUT=2000 HCCL_EVENT_TIMEOUT=1900 "$ASCENT" diag env --json >b.json 2>/dev/null; rc=$?
[[ $rc -eq 1 ]] || fail "event <= exec timeout exited $rc"
[[ $(status b.json env.timeouts.HCCL_EVENT_TIMEOUT) == FAIL ]] || fail "event timeout check"

"${CLEAN[@]}" RANK=1 WORLD_SIZE=2 PMI_RANK=0 "$ASCENT" diag env >c.txt 2>/dev/null; rc=$?
[[ $rc -eq 1 ]] || fail "RANK vs PMI_RANK exited $rc"
grep -q 'FAIL env.launcher.PMI_RANK: PMI_RANK=0 disagrees with RANK=1' c.txt || fail "$(cat c.txt)"

"${CLEAN[@]}" OPENBLAS_CORETYPE=Prescott "$ASCENT" diag env --json >d.json 2>/dev/null; rc=$?
if grep -q avx512f /proc/cpuinfo || grep -q avx2 /proc/cpuinfo; then
  [[ $(status d.json env.blas_core) == WARN ]] || fail "Prescott on an AVX2/AVX-512 CPU not flagged"
fi
"${CLEAN[@]}" OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=64 "$ASCENT" diag env --json >e.json 2>/dev/null
[[ $(status e.json env.threads) == WARN ]] || fail "64 threads not flagged as oversubscribed"

"${CLEAN[@]}" "$ASCENT" diag env --disk . --min-disk 1000T >f.txt 2>/dev/null; rc=$?
[[ $rc -eq 1 ]] || fail "1000T minimum disk exited $rc"
grep -q 'FAIL env.disk' f.txt || fail "$(cat f.txt)"
"$ASCENT" diag env --min-disk lots >/dev/null 2>g.txt; rc=$?
[[ $rc -eq 2 ]] || fail "bad size exited $rc"

if command -v mpirun >/dev/null; then
  "${CLEAN[@]}" timeout 60 mpirun -np 2 --oversubscribe "$ASCENT" diag env >mpi.txt 2>&1; rc=$?
  [[ $rc -eq 0 ]] || fail "diag env under mpirun -np 2 exited $rc: $(tail -20 mpi.txt)"
  grep -q 'PASS env.launcher: launcher variables agree: rank 0 of 2' mpi.txt || fail "$(cat mpi.txt)"
  grep -q 'PASS env.ranks: 2 ranks' mpi.txt || fail "ranks not compared: $(cat mpi.txt)"
  grep -q 'PASS env.threads' mpi.txt || fail "2 ranks x 1 thread on 2 cores is not oversubscribed: $(cat mpi.txt)"
  [[ $(grep -c '^# ascent diag env' mpi.txt) -eq 1 ]] || fail "only rank 0 prints the report"
  "${CLEAN[@]}" HCCL_EXEC_TIMEOUT=136 timeout 60 mpirun -np 2 --oversubscribe -x HCCL_EXEC_TIMEOUT \
    bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export HCCL_EXEC_TIMEOUT=204; fi; exec "$0" diag env' "$ASCENT" >mpi2.txt 2>&1; rc=$?
  [[ $rc -eq 1 ]] || fail "timeouts differing across ranks exited $rc: $(cat mpi2.txt)"
  grep -q "FAIL env.ranks: rank 1 (.*) has timeouts 'HCCL_EXEC_TIMEOUT=204;'" mpi2.txt || fail "$(cat mpi2.txt)"
fi
echo ok
