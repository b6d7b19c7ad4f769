#!/usr/bin/env bash
# tests/integration/comm_collectives.sh — every collective and send/recv, blocking and non-blocking,
# on the world and every sub-communicator, checked element by element against the expectation each
# rank computes locally (ascent comm-selftest), under real mpirun with 2, 3, 4 and 8 ranks (3: avg
# divides by a group size that is not a power of two, which comm/ does not turn into a multiply).
set -euo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=60
MPI=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -x ASCENT_COMM_TIMEOUT)

run() { # NP ARGS...
  local np=$1; shift
  echo "== np=$np $*"
  "${MPI[@]}" -np "$np" "$ASCENT" comm-selftest --test collectives "$@" >out.txt 2>err.txt || {
    cat out.txt err.txt; echo "FAIL: comm-selftest -np $np $*"; exit 1; }
  cat out.txt
  grep -q ", 0 failed on $np ranks" out.txt || { cat err.txt; echo "FAIL: no clean summary"; exit 1; }
}
run 2
run 3
run 4 --tp 2
run 8 --dp 2 --tp 2 --pp 2
echo "comm collectives ok"
