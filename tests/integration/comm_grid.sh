#!/usr/bin/env bash
# tests/integration/comm_grid.sh — the dp × tp × pp rank order (TP innermost, then DP, then PP):
# the groups MPI actually formed, printed by rank 0, must be exactly the ones written out by hand
# here; a layout that does not multiply to the world size is a clear error.
set -euo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=60
MPI=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -x ASCENT_COMM_TIMEOUT)

grid() { # NP "DP TP PP" EXPECTED_DP EXPECTED_TP EXPECTED_PP
  local np=$1; read -r dp tp pp <<<"$2"
  "${MPI[@]}" -np "$np" "$ASCENT" comm-selftest --test grid --dp "$dp" --tp "$tp" --pp "$pp" >out.txt 2>err.txt || {
    cat out.txt err.txt; echo "FAIL: grid $2 on $np ranks"; exit 1; }
  grep -qx "dp groups: $3" out.txt || { cat out.txt; echo "FAIL: dp groups for $2, expected: $3"; exit 1; }
  grep -qx "tp groups: $4" out.txt || { cat out.txt; echo "FAIL: tp groups for $2, expected: $4"; exit 1; }
  grep -qx "pp groups: $5" out.txt || { cat out.txt; echo "FAIL: pp groups for $2, expected: $5"; exit 1; }
  grep -q ", 0 failed on $np ranks" out.txt || { cat out.txt err.txt; echo "FAIL: checks for $2"; exit 1; }
  echo "ok grid $2 on $np ranks"
}
# rank = pp_rank·(dp·tp) + dp_rank·tp + tp_rank
grid 8 "2 2 2" "{0,2} {1,3} {4,6} {5,7}" "{0,1} {2,3} {4,5} {6,7}" "{0,4} {1,5} {2,6} {3,7}"
grid 8 "1 4 2" "{0} {1} {2} {3} {4} {5} {6} {7}" "{0,1,2,3} {4,5,6,7}" "{0,4} {1,5} {2,6} {3,7}"
grid 8 "4 1 2" "{0,1,2,3} {4,5,6,7}" "{0} {1} {2} {3} {4} {5} {6} {7}" "{0,4} {1,5} {2,6} {3,7}"
grid 6 "3 2 1" "{0,2,4} {1,3,5}" "{0,1} {2,3} {4,5}" "{0} {1} {2} {3} {4} {5}"
grid 4 "1 1 4" "{0} {1} {2} {3}" "{0} {1} {2} {3}" "{0,1,2,3}"
grid 2 "2 1 1" "{0,1}" "{0} {1}" "{0} {1}"

# dp·tp·pp != world: every rank refuses with a message naming the numbers
if "${MPI[@]}" -np 4 "$ASCENT" comm-selftest --test grid --dp 3 --tp 1 --pp 1 >out.txt 2>err.txt; then
  echo "FAIL: --dp 3 on 4 ranks was accepted"; exit 1; fi
grep -q "needs 3 ranks but the job has 4" err.txt || { cat err.txt; echo "FAIL: unclear layout error"; exit 1; }
echo "comm grid ok"
