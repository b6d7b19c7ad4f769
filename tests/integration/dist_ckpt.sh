#!/usr/bin/env bash
# tests/integration/dist_ckpt.sh — checkpoints are canonical whatever the layout: a run saved at
# step 10 with --tp 2 --pp 2 (4 ranks) resumes under --dp 4 and in one process, and a ZeRO-2
# --dp 2 run (sharded optimizer state) resumes under --tp 2; steps 11-20 of each give the losses of
# an uninterrupted one-process run (relative 1e-5), which fails if any shard of the weights or of
# the AdamW moments is lost, misplaced or taken twice. The saved tensors match the one-process
# run's, the files are the Hugging Face layout, and `ascent eval` reads the distributed checkpoint.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
train 1 one "${SMALL[@]}" --ckpt-every 10
train 4 tp2pp2 "${SMALL[@]}" --tp 2 --pp 2 --microbatches 2 --ckpt-every 10
same_loss one tp2pp2 1e-5
train 4 re_dp4 --resume tp2pp2/ckpt/step-000010 --dp 4
same_loss one re_dp4 1e-5
grep -q "resumed from tp2pp2/ckpt/step-000010 at step 10" re_dp4/logs/rank-00000.log
[[ $(wc -l < re_dp4/metrics.jsonl) -eq 10 ]]
train 1 re_one --resume tp2pp2/ckpt/step-000010
same_loss one re_one 1e-5
train 2 z2 "${SMALL[@]}" --dp 2 --zero 2 --ckpt-every 10
train 2 re_tp2 --resume z2/ckpt/step-000010 --tp 2
same_loss one re_tp2 1e-5

# the gathered tensors equal the one-process run's (to rounding), names and shapes of HF GPT-2
python3 - <<'PY'
import json, struct
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    out = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        out[k] = (v["shape"], struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s:8 + n + e]))
    return out
for f in ("model.safetensors", "trainer_state.safetensors"):
    a = load("one/ckpt/step-000010/" + f)
    for run in ("tp2pp2", "z2"):
        b = load(run + "/ckpt/step-000010/" + f)
        assert a.keys() == b.keys(), (run, f, set(a) ^ set(b))
        for k in a:
            assert a[k][0] == b[k][0], (run, k, a[k][0], b[k][0])
            num = sum((x - y) ** 2 for x, y in zip(a[k][1], b[k][1])) ** 0.5
            den = sum(x * x for x in a[k][1]) ** 0.5 or 1
            assert num / den < 1e-4, "%s %s %s: relative difference %g" % (run, f, k, num / den)
m = load("tp2pp2/ckpt/step-000010/model.safetensors")
assert m["h.0.attn.c_attn.weight"][0] == [64, 192] and "lm_head.weight" not in m
print("checkpoints of tp2pp2 and z2 match the one-process run")
PY
e1=$("$ASCENT" eval --ckpt one --data corpus.txt --batches 2 --threads 1 --json)
e2=$("$ASCENT" eval --ckpt tp2pp2 --data corpus.txt --batches 2 --threads 1 --json)
python3 -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); assert abs(a["loss"]-b["loss"]) <= 1e-5*a["loss"], (a, b); print("eval", a["loss"], b["loss"])' "$e1" "$e2"
echo ok
