#!/usr/bin/env bash
# scripts/demo.sh BIN — the `make demo` job: train the tiny preset on the default corpus (the
# fortunes text) for a short run, then evaluate the final checkpoint and sample some text.
# About a minute or two on 2 cores. Later issues add profiling to this run.
set -euo pipefail
BIN=${1:-bin}
ASCENT="$BIN/ascent"
[[ -x $ASCENT ]] || { echo "demo: '$ASCENT' is missing (run 'make' first)" >&2; exit 1; }
STEPS=${ASCENT_DEMO_STEPS:-150}
OUT=runs/demo-$(date -u +%Y%m%d-%H%M%S)
echo "demo: training the tiny preset for $STEPS steps on the fortunes corpus into $OUT"
"$ASCENT" train --preset tiny --steps "$STEPS" --eval-every 50 --out "$OUT"
echo
echo "demo: evaluating $OUT on the validation split"
"$ASCENT" eval --ckpt "$OUT"
echo
echo "demo: a sample from the model"
"$ASCENT" generate --ckpt "$OUT" --prompt "The meaning of life is " --tokens 200 --temperature 0.8 --seed 1
echo
echo "demo: the run is in $OUT (config.json, metrics.jsonl, summary.json, logs/, ckpt/)"
