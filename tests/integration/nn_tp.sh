#!/usr/bin/env bash
# tests/integration/nn_tp.sh — nn's Megatron tensor parallelism on real ranks: the test program
# tests/mpi/nn_tp_selftest.c under mpirun with TP = 2 and TP = 4 compares each rank's TP shard (whole layer range; with
# recomputation; two pipeline chunks with 2 micro-batches in flight) against the whole model built
# on the same rank: losses and every gradient slice within relative 1e-5, replicated gradients
# bitwise equal across TP ranks, and the gathered parameters rebuilding the model exactly.
set -euo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=60
MPI=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -x ASCENT_COMM_TIMEOUT)
T="$ASCENT_BUILD/tests/mpi/nn_tp_selftest"
[[ -x $T ]] || { echo "skip: $T is not built (make all-tests)"; exit 77; }

for np in 2 4; do
  "${MPI[@]}" -np "$np" "$T" >out.txt 2>err.txt || {
    cat out.txt err.txt; echo "FAIL: nn-selftest on $np ranks"; exit 1; }
  grep -q ", 0 failed on $np ranks (tp=$np" out.txt || { cat out.txt err.txt; echo "FAIL: nn-selftest tp=$np"; exit 1; }
  cat out.txt
done

# the checks can fail: an impossible tolerance must be reported as a failure
if "${MPI[@]}" -np 2 "$T" --tol 1e-12 >out.txt 2>err.txt; then
  cat out.txt err.txt; echo "FAIL: nn-selftest passed with --tol 1e-12"; exit 1; fi
grep -q "relative" err.txt || { cat err.txt; echo "FAIL: no gradient difference reported"; exit 1; }
echo "ok nn_tp"
