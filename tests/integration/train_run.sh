#!/usr/bin/env bash
# tests/integration/train_run.sh — a short training run writes the run directory as trainer.h
# documents (config.json, logs, metrics.jsonl, summary.json keys, checkpoints in HF layout);
# config.json reproduces the run; eval --json and generate work on its checkpoint; --init-from
# fine-tunes from it.
set -euo pipefail
cat /usr/share/games/fortunes/{fortunes,literature,wisdom} > corpus.txt
SMALL=(--n-layer 2 --n-head 2 --n-embd 64 --max-seq 64 --seq 64 --batch 4 --threads 1)
"$ASCENT" train --data corpus.txt "${SMALL[@]}" --steps 6 --eval-every 3 --eval-batches 2 --ckpt-every 4 \
    --out run 2> train.err
for f in config.json summary.json metrics.jsonl logs/rank-00000.log ckpt/step-000004/model.safetensors \
         ckpt/step-000004/config.json ckpt/step-000004/trainer_state.safetensors ckpt/step-000006/model.safetensors; do
  [[ -s run/$f ]] || { echo "missing run/$f"; exit 1; }
done
python3 - <<'PY'
import json, math
s = json.load(open("run/summary.json"))
for k in ["steps", "final_train_loss", "final_val_loss", "tokens_per_s", "mfu", "peak_rss_bytes", "wall_s", "peak_gflops"]:
    assert k in s, k
assert s["steps"] == 6, s
assert 0 < s["final_val_loss"] < math.log(256) + 0.5, s
assert s["tokens_per_s"] > 0 and 0 < s["mfu"] < 1 and s["peak_rss_bytes"] > 0, s
lines = [json.loads(l) for l in open("run/metrics.jsonl")]
assert [l["step"] for l in lines] == [1, 2, 3, 4, 5, 6], lines
for l in lines:
    for k in ["step", "loss", "lr", "grad_norm", "tokens_per_s"]:
        assert k in l, (k, l)
assert "val_loss" in lines[2] and "val_loss" in lines[5] and "val_loss" not in lines[0]
assert lines[5]["loss"] < lines[0]["loss"], lines
c = json.load(open("run/config.json"))
assert c["steps"] == 6 and c["n_layer"] == 2 and c["n_embd"] == 64 and c["data"] == "corpus.txt", c
h = json.load(open("run/ckpt/step-000006/config.json"))
assert h["model_type"] == "gpt2" and h["n_embd"] == 64 and h["n_layer"] == 2 and h["n_positions"] == 64
assert h["vocab_size"] == 256 and h["activation_function"] == "gelu_new" and h["layer_norm_epsilon"] == 1e-5
# safetensors header: HF names
import struct
b = open("run/ckpt/step-000006/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n])
assert hdr["h.1.attn.c_attn.weight"]["shape"] == [64, 192], hdr["h.1.attn.c_attn.weight"]
assert hdr["h.0.mlp.c_proj.weight"]["shape"] == [256, 64]
assert "wte.weight" in hdr and "ln_f.bias" in hdr and hdr["wte.weight"]["dtype"] == "F32"
print("run dir ok")
PY
grep -q "step 6/6 | loss" run/logs/rank-00000.log
grep -q "summary: 6 steps" train.err
# the written config.json reproduces the run: same losses
"$ASCENT" train --config run/config.json --out run2 2>/dev/null
python3 - <<'PY'
import json
a = [json.loads(l)["loss"] for l in open("run/metrics.jsonl")]
b = [json.loads(l)["loss"] for l in open("run2/metrics.jsonl")]
assert a == b, (a, b)
PY
# eval --json on the run's data
"$ASCENT" eval --ckpt run --data corpus.txt --batch 4 --seq 64 --batches 3 --json --threads 1 > eval.json
python3 - <<'PY'
import json, math
e = json.load(open("eval.json"))
assert set(["loss", "ppl", "tokens"]) <= set(e), e
assert e["tokens"] == 3 * 4 * 64 and abs(math.exp(e["loss"]) - e["ppl"]) < 1e-3 * e["ppl"], e
PY
"$ASCENT" eval --ckpt run/ckpt/step-000004 --data corpus.txt --batches 1 --threads 1 | grep -q "perplexity"
out=$("$ASCENT" generate --ckpt run --prompt "The " --tokens 20 --threads 1)
[[ ${#out} -ge 20 && $out == "The "* ]] || { echo "generate printed: $out"; exit 1; }
# a fresh run never writes into an existing run directory
if "$ASCENT" train --config run/config.json 2> again.err; then echo "trained over an existing run"; exit 1; fi
grep -q "already holds a run; continue it with --resume run" again.err
# fine-tuning: --init-from a run takes its newest checkpoint's weights and model dimensions, step 0;
# a differing dimension and --resume with it are refused
"$ASCENT" train --init-from run --data corpus.txt --seq 64 --batch 4 --threads 1 --steps 2 --lr 1e-4 --eval-batches 1 \
    --out ft 2> ft.err
grep -q "fine-tuning from the weights of run/ckpt/step-000006 (step 0, fresh optimizer)" ft/logs/rank-00000.log
python3 - <<'PY'
import json
c = json.load(open("ft/config.json"))
assert c["init_from"] == "run/ckpt/step-000006" and c["n_embd"] == 64 and c["n_layer"] == 2, c
m = [json.loads(l) for l in open("ft/metrics.jsonl")]
r = [json.loads(l) for l in open("run/metrics.jsonl")]
assert [l["step"] for l in m] == [1, 2] and m[0]["loss"] < r[0]["loss"] - 0.15, (m, r)   # trained weights, not a fresh init
PY
if "$ASCENT" train --init-from run --n-embd 32 --out ft2 2> ft2.err; then echo "a differing --n-embd was accepted"; exit 1; fi
grep -q "n-embd 32 differs from the --init-from checkpoint's 64" ft2.err
if "$ASCENT" train --init-from run --resume run --out ft3 2> ft3.err; then echo "--resume with --init-from was accepted"; exit 1; fi
grep -q "exclude each other" ft3.err
# the sample configurations parse and train (shrunk to one cheap step by options)
for f in "$ASCENT_ROOT"/samples/train_*.json; do
  "$ASCENT" train --config "$f" --data corpus.txt --steps 1 --batch 1 --seq 16 --eval-batches 1 --threads 1 \
      --out "sample-$(basename "$f" .json)" 2>/dev/null
done
echo "ok"
