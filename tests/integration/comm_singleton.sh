#!/usr/bin/env bash
# tests/integration/comm_singleton.sh — without mpirun: the MPI singleton (world size 1) and
# ASCENT_NO_MPI=1 (no MPI at all) both run every collective with exact results; bad environment
# values are refused clearly.
set -euo pipefail
"$ASCENT" comm-selftest >out.txt 2>err.txt || { cat out.txt err.txt; echo "FAIL: singleton"; exit 1; }
cat out.txt
grep -q ", 0 failed on 1 ranks (dp=1 tp=1 pp=1, mpi)" out.txt || { echo "FAIL: singleton summary"; exit 1; }
ASCENT_NO_MPI=1 "$ASCENT" comm-selftest >out.txt 2>err.txt || { cat out.txt err.txt; echo "FAIL: no-mpi"; exit 1; }
grep -q ", 0 failed on 1 ranks (dp=1 tp=1 pp=1, no mpi)" out.txt || { cat out.txt; echo "FAIL: no-mpi summary"; exit 1; }

expect_refused() { # ENV=VALUE TEXT
  if env "$1" ASCENT_NO_MPI=1 "$ASCENT" comm-selftest --test grid >out.txt 2>err.txt; then
    echo "FAIL: $1 accepted"; exit 1; fi
  grep -qF "$2" err.txt || { cat err.txt; echo "FAIL: $1: message lacks '$2'"; exit 1; }
  echo "ok refused $1"
}
expect_refused ASCENT_FAULT=explode:rank=1 "unknown fault kind"
expect_refused ASCENT_FAULT=hang:rank=1 "missing seq="
expect_refused ASCENT_FAULT=delay:rank=1,ms=abc "ms must be"
expect_refused ASCENT_FAULT=hang:rank=5,seq=3 "names rank 5 but the job has 1 ranks"
expect_refused ASCENT_COMM_TIMEOUT=soon "bad ASCENT_COMM_TIMEOUT 'soon'"
expect_refused ASCENT_FLIGHT_SIZE=-4 "ASCENT_FLIGHT_SIZE"
echo "comm singleton ok"
