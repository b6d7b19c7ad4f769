#!/usr/bin/env bash
# tests/integration/train_hf_reference.sh — a checkpoint read back by an independent GPT-2 forward
# written from Hugging Face's semantics (pure Python, below) gives the loss `ascent eval` reports:
# the checkpoint's tensor names, (in, out) layouts and config.json are what GPT2LMHeadModel expects,
# and nn computes what it computes.
set -euo pipefail
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
cat /usr/share/games/fortunes/{fortunes,wisdom} > corpus.txt
"$ASCENT" train --data corpus.txt --n-layer 2 --n-head 2 --n-embd 32 --max-seq 16 --seq 16 --batch 4 \
    --steps 5 --eval-batches 1 --threads 1 --out run 2>/dev/null
printf 'Fortune cookies' > text.txt     # 15 bytes: 14 positions
cat > ref.py <<'PY'
import json, math, struct, sys
d = sys.argv[1]; text = sys.argv[2].encode()
cfg = json.load(open(d + "/config.json"))
b = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]; hdr = json.loads(b[8:8 + n]); base = 8 + n
def T(name):
    e = hdr[name]; s, t = e["data_offsets"]; cnt = (t - s) // 4
    flat = struct.unpack("<%df" % cnt, b[base + s: base + t])
    if len(e["shape"]) == 1: return list(flat)
    r, c = e["shape"]; return [flat[i * c:(i + 1) * c] for i in range(r)]
C = cfg["n_embd"]; H = cfg["n_head"]; L = cfg["n_layer"]; hd = C // H
def ln(x, w, bb):
    out = []
    for row in x:
        m = sum(row) / C; v = sum((a - m) ** 2 for a in row) / C; s = 1 / math.sqrt(v + 1e-5)
        out.append([(a - m) * s * w[i] + bb[i] for i, a in enumerate(row)])
    return out
def mm(x, W, bias):  # x (n, in), W (in, out)
    cols = list(zip(*W))
    return [[sum(a * c for a, c in zip(row, col)) + bias[j] for j, col in enumerate(cols)] for row in x]
def gelu(x): return 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
ids = list(text[:-1]); tg = list(text[1:]); n = len(ids)
wte = T("wte.weight"); wpe = T("wpe.weight")
x = [[wte[t][i] + wpe[p][i] for i in range(C)] for p, t in enumerate(ids)]
for l in range(L):
    p = "h.%d." % l
    h = ln(x, T(p + "ln_1.weight"), T(p + "ln_1.bias"))
    qkv = mm(h, T(p + "attn.c_attn.weight"), T(p + "attn.c_attn.bias"))
    att = [[0.0] * C for _ in range(n)]
    for hh in range(H):
        o = hh * hd
        for i in range(n):
            sc = [sum(qkv[i][o + k] * qkv[j][C + o + k] for k in range(hd)) / math.sqrt(hd) for j in range(i + 1)]
            m = max(sc); e = [math.exp(s - m) for s in sc]; z = sum(e)
            for k in range(hd):
                att[i][o + k] = sum(e[j] / z * qkv[j][2 * C + o + k] for j in range(i + 1))
    a = mm(att, T(p + "attn.c_proj.weight"), T(p + "attn.c_proj.bias"))
    x = [[u + v for u, v in zip(r1, r2)] for r1, r2 in zip(x, a)]
    h = ln(x, T(p + "ln_2.weight"), T(p + "ln_2.bias"))
    f = [[gelu(v) for v in row] for row in mm(h, T(p + "mlp.c_fc.weight"), T(p + "mlp.c_fc.bias"))]
    f = mm(f, T(p + "mlp.c_proj.weight"), T(p + "mlp.c_proj.bias"))
    x = [[u + v for u, v in zip(r1, r2)] for r1, r2 in zip(x, f)]
x = ln(x, T("ln_f.weight"), T("ln_f.bias"))
loss = 0
for i in range(n):
    lg = [sum(a * w for a, w in zip(x[i], wte[v])) for v in range(cfg["vocab_size"])]
    m = max(lg); lse = m + math.log(sum(math.exp(v - m) for v in lg)); loss += lse - lg[tg[i]]
print(json.dumps({"loss": loss / n}))
PY
want=$(python3 ref.py run/ckpt/step-000005 "$(cat text.txt)")
got=$("$ASCENT" eval --ckpt run --data text.txt --batch 1 --seq 14 --json --threads 1)
python3 - "$want" "$got" <<'PY'
import json, sys
w = json.loads(sys.argv[1])["loss"]; g = json.loads(sys.argv[2])
assert g["tokens"] == 14, g
assert abs(w - g["loss"]) < 1e-4 * abs(w), (w, g)
print("reference loss %.6f, ascent eval %.6f" % (w, g["loss"]))
PY
