#!/usr/bin/env bash
# scripts/demo.sh BIN — the `make demo` job: train the tiny preset on the default corpus (the
# fortunes text) with data parallelism over 2 MPI ranks and the profiler on, then show the
# profile's overview, export it for Perfetto, evaluate the final checkpoint and sample some text.
# About a minute or two on 2 cores (300 steps of 32 x 64 tokens). Without mpirun it trains in one process.
set -euo pipefail
BIN=${1:-bin}
ASCENT="$BIN/ascent"
[[ -x $ASCENT ]] || { echo "demo: '$ASCENT' is missing (run 'make' first)" >&2; exit 1; }
STEPS=${ASCENT_DEMO_STEPS:-300}
OUT=runs/demo-$(date -u +%Y%m%d-%H%M%S)
# root (containers, CI) needs Open MPI's consent; harmless otherwise
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TRAIN=(train --preset tiny --steps "$STEPS" --batch 32 --eval-every 100 --eval-batches 10 --profile --out "$OUT")
if command -v mpirun >/dev/null; then
  echo "demo: training the tiny preset for $STEPS steps on the fortunes corpus, DP=2 over 2 MPI ranks, profiled, into $OUT"
  mpirun -np 2 "$ASCENT" "${TRAIN[@]}" --dp 2
else
  echo "demo: mpirun not found: training in one process, profiled, into $OUT"
  "$ASCENT" "${TRAIN[@]}"
fi
echo
echo "demo: the profile's overview"
"$ASCENT" report "$OUT/trace.db" --by step --steps 2:4
"$ASCENT" report "$OUT/trace.db" | head -40
echo
"$ASCENT" export "$OUT/trace.db" -o "$OUT/trace.json"
echo
echo "demo: evaluating $OUT on the validation split"
"$ASCENT" eval --ckpt "$OUT"
echo
echo "demo: a sample from the model"
"$ASCENT" generate --ckpt "$OUT" --prompt "The meaning of life is " --tokens 200 --temperature 0.8 --seed 1
echo
echo "demo: the run is in $OUT (config.json, metrics.jsonl, summary.json, logs/rank-*.log, ckpt/)"
echo "demo: the profile is $OUT/trace.db (SQLite: 'ascent report', or sqlite3 with the views op_summary,"
echo "      comm_summary, step_breakdown, mem_peak); the Chrome/Perfetto trace is $OUT/trace.json"
echo "demo: look at it interactively:  $ASCENT view $OUT/trace.db"
