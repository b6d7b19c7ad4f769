#!/usr/bin/env bash
# tests/integration/dist_precision.sh — mixed precision keeps fp32 master weights and tracks the
# fp32 loss curve: 20 steps of bf16 and of fp16 stay within 1e-2 (bf16) and 5e-3 (fp16) relative
# of the fp32 loss at every step, and differ from it somewhere (the GEMMs really ran in low
# precision). Why these bounds: bf16 keeps 8 significant bits, so each GEMM operand is rounded by
# at most 2^-9 = 0.2% (fp16: 2^-12 = 0.024%); the loss is a mean over 256 tokens of cross-entropies
# whose rounding errors are independent and mostly cancel (we measure ~1e-4), and 20 small AdamW
# steps cannot amplify them past a few times that. An error of 1% means something systematic —
# a loss scale not undone, an update applied on an overflow step, a stale master weight.
# bf16 under DP=2 equals bf16 in one process within 1e-4 (not 1e-5: the DP gradient sum rounds
# in another order, and a last-bit change of a weight can flip its bf16 rounding, 2^-9 relative). fp16 dynamic loss scaling: started at 2^24
# the gradients overflow, the step is skipped and the scale halves, then it grows again after
# --loss-scale-window clean steps; metrics.jsonl and the profile record the scale and the skips.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
train 1 fp32 "${SMALL[@]}"
train 1 bf16 "${SMALL[@]}" --precision bf16
same_loss fp32 bf16 1e-2 1e-9
train 1 fp16 "${SMALL[@]}" --precision fp16
same_loss fp32 fp16 5e-3 1e-9
train 2 bf16dp2 "${SMALL[@]}" --precision bf16 --dp 2
same_loss bf16 bf16dp2 1e-4

train 2 scale "${SMALL[@]}" --precision fp16 --loss-scale 16777216 --loss-scale-window 3 --dp 2 --profile
python3 - <<'PY'
import json, sqlite3
m = [json.loads(l) for l in open("scale/metrics.jsonl")]
skipped = [o["step"] for o in m if o["skipped"]]
assert skipped, "no step was skipped at loss scale 2^24"
assert m[0]["skipped"] and m[0]["loss_scale"] == 2**23, m[0]
# after a skip the scale is halved; after 3 clean steps it doubles
for a, b in zip(m, m[1:]):
    if b["skipped"]:
        assert b["loss_scale"] == a["loss_scale"] / 2, (a, b)
assert any(b["loss_scale"] == 2 * a["loss_scale"] for a, b in zip(m, m[1:])), "the scale never grew back"
assert all(o["grad_norm"] is None for o in m if o["skipped"]), "a skipped step has a finite norm"
s = json.load(open("scale/summary.json"))
assert s["skipped_steps"] == len(skipped), (s["skipped_steps"], skipped)
db = sqlite3.connect("scale/trace.db")
names = {r[0] for r in db.execute("SELECT DISTINCT s.value FROM counter c JOIN string s ON s.id = c.name_id")}
assert {"loss", "loss_scale", "skipped_steps", "tokens_per_s", "lr"} <= names, names
print("fp16 skipped steps", skipped)
PY
echo ok
