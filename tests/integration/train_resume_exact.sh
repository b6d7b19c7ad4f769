#!/usr/bin/env bash
# tests/integration/train_resume_exact.sh — 6 steps with a checkpoint at 3, then resume from step 3
# to 6: every later loss equals, byte for byte, the uninterrupted run's. Also resume into the
# same run directory after losing its last checkpoint (metrics.jsonl is cut back, then refilled).
set -euo pipefail
cat /usr/share/games/fortunes/{fortunes,wisdom} > corpus.txt
SMALL=(--data corpus.txt --n-layer 2 --n-head 2 --n-embd 64 --max-seq 64 --seq 64 --batch 4 --grad-accum 2 --threads 1 --eval-batches 2)
"$ASCENT" train "${SMALL[@]}" --steps 6 --ckpt-every 3 --warmup 2 --out full 2>/dev/null
[[ -d full/ckpt/step-000003 && -d full/ckpt/step-000006 ]]
# resume from the step-3 checkpoint into a new run directory (config comes from the checkpoint)
"$ASCENT" train --resume full/ckpt/step-000003 --out resumed 2> resumed.err
grep -q "resumed from full/ckpt/step-000003 at step 3" resumed/logs/rank-00000.log
loss_of() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["step"] > 3: print(o["step"], o["loss"], o["lr"], o["grad_norm"])' "$1"; }
# compare the raw text of the loss fields: byte for byte
raw() { sed -E 's/.*"step":([0-9]+),"loss":([^,]+),"lr":([^,]+),"grad_norm":([^,]+),.*/\1 \2 \3 \4/' "$1" | awk '$1 > 3'; }
diff <(raw full/metrics.jsonl) <(raw resumed/metrics.jsonl)
[[ $(raw resumed/metrics.jsonl | wc -l) -eq 3 ]]
cmp full/ckpt/step-000006/model.safetensors resumed/ckpt/step-000006/model.safetensors
python3 -c 'import json; s=json.load(open("resumed/summary.json")); assert s["steps"]==6 and s["steps_this_run"]==3, s'
# lose the last checkpoint of `full` and resume it in place with --resume latest
cp full/metrics.jsonl metrics.orig
rm -rf full/ckpt/step-000006
"$ASCENT" train --resume latest --out full 2>/dev/null
diff <(raw metrics.orig) <(raw full/metrics.jsonl)
[[ $(wc -l < full/metrics.jsonl) -eq 6 ]]
# a checkpoint already at --steps: nothing to do but still a summary
"$ASCENT" train --resume full --out again 2>/dev/null
python3 -c 'import json; s=json.load(open("again/summary.json")); assert s["steps"]==6 and s["steps_this_run"]==0, s'
# a half-written checkpoint directory (as a kill -9 during a save leaves it) is never picked up
mkdir -p full/ckpt/.step-000009.tmp-1 && cp full/ckpt/step-000006/model.safetensors full/ckpt/.step-000009.tmp-1/
"$ASCENT" eval --ckpt full --data corpus.txt --batches 1 --threads 1 | grep -q "step-000006"
echo ok
