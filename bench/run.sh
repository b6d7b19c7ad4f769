#!/usr/bin/env bash
# bench/run.sh BUILD BIN — run every benchmark program in $BUILD/bench/ (each prints JSON lines,
# passed through unchanged), then bench/pytorch_gpt.py when /usr/bin/python3 can import torch
# (a like-for-like PyTorch baseline for bench_nn; MFU against the peak bench_nn measured in this run).
# Benchmarks never fail the build on speed; a program that exits non-zero is reported as a JSON line.
#
# PyTorch is not in scripts/deps.sh (about 1 GB). To get the baseline:
#     apt-get install -y python3-torch
set -u
BUILD=${1:-build}
BIN=${2:-bin}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
# bench_pmpi runs programs under `ascent profile`
export ASCENT_BIN="$ROOT/$BIN/ascent"
[[ "$BIN" = /* ]] && ASCENT_BIN="$BIN/ascent"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
for b in "$BUILD"/bench/*; do
  [[ -f $b && -x $b ]] || continue
  name=$(basename "$b")
  "$b" | tee -a "$out"
  s=${PIPESTATUS[0]}
  if [[ $s -ne 0 ]]; then
    echo "{\"bench\":\"$name\",\"error\":\"exited with status $s\"}"
    rc=1
  fi
done

if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  peak=$(sed -n 's/.*"bench":"fma_peak".*"peak_gflops":\([0-9.]*\).*/\1/p' "$out" | tail -1)
  OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} /usr/bin/python3 "$ROOT/bench/pytorch_gpt.py" \
      --threads "${ASCENT_BENCH_THREADS:-2}" --peak "${peak:-0}" || rc=1
else
  echo '{"bench":"train_step","impl":"pytorch","skipped":"python3 cannot import torch; install it with: apt-get install -y python3-torch"}'
fi
exit $rc
