#!/usr/bin/env bash
# tests/integration/dist_errors.sh — bad layouts are refused on every rank with a clear message
# and exit status 2, before any training: dp·tp·pp that is not the world size, a global batch that
# the DP ranks and micro-batches cannot share, tp not dividing the heads, an interleaved schedule
# without virtual stages, more chunks than layers.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
bad() { # NP "EXPECTED MESSAGE PART" ARGS...
  local np=$1 want=$2; shift 2
  set +e
  if [[ $np == 1 ]]; then "$ASCENT" train "${SMALL[@]}" --steps 1 --out bad "$@" >out.txt 2>&1
  else "${MPI[@]}" -np "$np" "$ASCENT" train "${SMALL[@]}" --steps 1 --out bad "$@" >out.txt 2>&1; fi
  local rc=$?
  set -e
  [[ $rc -ne 0 ]] || { cat out.txt; echo "FAIL: accepted: $*"; exit 1; }
  grep -q -- "$want" out.txt || { cat out.txt; echo "FAIL: no '$want' for: $*"; exit 1; }
  [[ $np != 1 ]] || [[ $rc -eq 2 ]] || { cat out.txt; echo "FAIL: exit $rc (expected 2) for: $*"; exit 1; }
  ! [[ -f bad/metrics.jsonl ]] || { echo "FAIL: trained anyway: $*"; exit 1; }
  rm -rf bad
  echo "ok: $* -> $(grep -m1 error: out.txt)"
}
bad 2 "does not match the 2 rank(s)" --dp 3
bad 4 "does not match the 4 rank(s)" --tp 2 --pp 1 --dp 1
bad 1 "not a multiple of tp x pp" --tp 2
bad 2 "must be a multiple of dp x microbatches" --dp 2 --batch 3
bad 1 "must divide the number of heads" --tp 3
bad 1 "needs --virtual-stages >= 2" --pp 2 --schedule interleaved
bad 1 "multiple of --pp" --pp 2 --schedule interleaved --virtual-stages 2 --microbatches 3
bad 1 "cannot fill" --pp 4 --virtual-stages 2 --schedule interleaved --microbatches 4
echo ok
