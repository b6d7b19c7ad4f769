#!/usr/bin/env bash
# tests/integration/harden_data.sh — issue 14's bad-data findings, on one tiny trained checkpoint:
# corrupt weights, states and quantization configs are refused by name (exit 2, no signal death),
# no command writes over its input or over a checkpoint/profile it did not make (the input stays
# byte-identical), tokenize skips its own output, --data takes regular files only.
set -u
fail=0
# expect CODE PATTERN ARGS...: run ascent, check the exit code and that stderr holds PATTERN
expect() {
  local code=$1 pat=$2; shift 2
  local err rc
  err=$(timeout 60 "$ASCENT" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne $code ]]; then echo "FAIL: ascent $* exited $rc, expected $code: $err"; fail=1; return 1; fi
  if ! grep -qF -- "$pat" <<<"$err"; then echo "FAIL: ascent $*: message lacks '$pat': $err"; fail=1; return 1; fi
  echo "ok: ascent $* -> $rc"
}
# unchanged FILE...: each file still has the checksum recorded in sums.txt
unchanged() { sha256sum --quiet -c sums.txt >/dev/null 2>&1 || { echo "FAIL: an input changed: $*"; sha256sum -c sums.txt | grep -v OK; fail=1; }; }

for i in $(seq 1 400); do echo "line $i: the quick brown fox jumps over the lazy dog $((i * 7919 % 1000))"; done > corpus.txt
"$ASCENT" train --preset tiny --n-layer 2 --n-embd 64 --n-head 2 --max-seq 64 --steps 2 --batch 2 --seq 32 \
  --data corpus.txt --eval-every 0 --threads 1 --profile --out run >train.log 2>&1 || { echo "FAIL: train"; cat train.log; exit 1; }
ck=run/ckpt/step-000002
[[ -f $ck/model.safetensors && -f run/trace.db ]] || { echo "FAIL: no checkpoint or profile"; exit 1; }
sha256sum corpus.txt $ck/* run/trace.db run/config.json > sums.txt

# poison.py IN OUT MODE: a copy of a safetensors file with values or metadata changed
cat > poison.py <<'EOF'
import json, struct, sys
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
b = open(src, 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
hdr, data = json.loads(b[8:8 + n]), bytearray(b[8 + n:])
def span(name):
    return hdr[name]['data_offsets']
if mode in ('nan', 'inf'):            # every 97th float of every tensor
    v = struct.pack('<f', float(mode))
    for i in range(0, len(data) - 3, 4 * 97):
        data[i:i + 4] = v
elif mode.startswith('step='):         # trainer state metadata
    hdr['__metadata__']['step'] = mode[5:]
elif mode in ('v-neg', 'm-nan'):       # one AdamW moment
    name = 'adamw.v' if mode == 'v-neg' else 'adamw.m'
    a, _ = span(name)
    data[a + 40:a + 44] = struct.pack('<f', -1.0 if mode == 'v-neg' else float('nan'))
elif mode.startswith('scale='):        # every weight_scale of a quantized checkpoint
    v = struct.pack('<f', float(mode[6:]))
    for k, t in hdr.items():
        if k.endswith('.weight_scale'):
            a, e = t['data_offsets']
            for i in range(a, e, 4):
                data[i:i + 4] = v
h = json.dumps(hdr).encode()
h += b' ' * (-len(h) % 8)
open(dst, 'wb').write(struct.pack('<Q', len(h)) + h + bytes(data))
EOF
mkck() { rm -rf "$1"; cp -r $ck "$1"; }   # mkck DIR: a copy of the checkpoint to corrupt

# finding 1 + 7: NaN/Inf weights: no SIGSEGV in ptq, no "loss": nan, no NUL bytes; the tensor is named
for m in nan inf; do
  mkck bad-$m; python3 poison.py $ck/model.safetensors bad-$m/model.safetensors $m
  expect 2 "non-finite value" quant ptq --ckpt bad-$m -o q-$m --calib-seqs 2 --sens-seqs 0 --seq 32 --threads 1
  [[ -e q-$m ]] && { echo "FAIL: ptq on $m weights wrote q-$m"; fail=1; }
  expect 2 "tensor '" eval --ckpt bad-$m --data corpus.txt --batches 1 --threads 1
done
expect 2 "non-finite" generate --ckpt bad-nan --prompt "line" --tokens 4 --threads 1
expect 2 "non-finite" train --resume bad-inf --steps 3 --out r-inf --threads 1

# finding 5: a step that is not a count is a corrupt state, not a resume at step -5 or -1
for s in -5 18446744073709551615 " 7" 1000000001; do
  mkck st; python3 poison.py $ck/trainer_state.safetensors st/trainer_state.safetensors "step=$s"
  expect 2 "metadata 'step'" train --resume st --steps 4 --out r-st --threads 1
done
# finding 8: NaN or negative AdamW moments name the optimizer state, not the learning rate
mkck mv; python3 poison.py $ck/trainer_state.safetensors mv/trainer_state.safetensors v-neg
expect 2 "tensor 'adamw.v' holds 1 negative value" train --resume mv --steps 4 --out r-mv --threads 1
mkck mm; python3 poison.py $ck/trainer_state.safetensors mm/trainer_state.safetensors m-nan
expect 2 "corrupt optimizer state" train --resume mm --steps 4 --out r-mm --threads 1
grep -q "lower --lr" <<<"$("$ASCENT" train --resume mm --steps 4 --out r-mm2 --threads 1 2>&1)" &&
  { echo "FAIL: a corrupt moment is blamed on --lr"; fail=1; }

# findings 2-4: never over an input, nor over a checkpoint/profile the command did not make
expect 2 "is its input" quant ptq --ckpt run -o $ck --calib-seqs 2 --sens-seqs 0 --seq 32 --threads 1
mkdir -p other && cp -r $ck other/ck
expect 2 "holds a checkpoint (safetensors) that 'quant ptq' did not make" \
  quant ptq --ckpt run -o other/ck --calib-seqs 2 --sens-seqs 0 --seq 32 --threads 1
expect 2 "is its input" export run/trace.db -o run/trace.db
expect 2 "is a checkpoint (safetensors) that 'export' did not make" export run/trace.db -o other/ck/model.safetensors
expect 2 "is a profile (an SQLite database) that 'tokenize' did not make" tokenize corpus.txt -o run/trace.db
mkdir -p parts && cp run/trace.db parts/rank-00000.db
expect 2 "is its input" merge parts -o parts/rank-00000.db
expect 2 "is its input" tokenize corpus.txt -o corpus.txt
ln -s corpus.txt alias.txt
expect 2 "is its input" tokenize alias.txt -o corpus.txt
mkdir -p dd && cp corpus.txt dd/
expect 2 "is its input" train --data dd --out dd --steps 1
expect 2 "holds a checkpoint" train --data corpus.txt --out other --steps 1 --threads 1
unchanged "after the refused writes"
# what the command makes itself may be replaced: ptq twice into one folder, export twice, --force
"$ASCENT" quant ptq --ckpt run -o q --calib-seqs 2 --sens-seqs 0 --seq 32 --threads 1 -q >/dev/null 2>&1 &&
  "$ASCENT" quant ptq --ckpt run -o q --calib-seqs 2 --sens-seqs 0 --seq 32 --threads 1 -q >/dev/null 2>ptq2.err ||
  { echo "FAIL: ptq into its own earlier output: $(cat ptq2.err)"; fail=1; }
"$ASCENT" export run/trace.db -o t.json 2>/dev/null && "$ASCENT" export run/trace.db -o t.json 2>/dev/null ||
  { echo "FAIL: export over its own JSON"; fail=1; }
"$ASCENT" tokenize corpus.txt -o other/ck/model.safetensors --force >/dev/null 2>&1 ||
  { echo "FAIL: tokenize --force"; fail=1; }

# finding 6: tokenize DIR -o DIR/out.bin twice reads what it read the first time, not its own shard
mkdir -p texts && cp corpus.txt texts/
"$ASCENT" tokenize texts -o texts/out.bin >/dev/null 2>&1
"$ASCENT" tokenize texts -o texts/out.bin >/dev/null 2>tok2.err
n=$(( ($(stat -c %s texts/out.bin) - 1024) / 2 ))
if [[ $n -ne $(stat -c %s corpus.txt) ]] || ! grep -q "skipping 'texts/out.bin'" tok2.err; then
  echo "FAIL: second tokenize holds $n tokens (corpus $(stat -c %s corpus.txt)): $(cat tok2.err)"; fail=1
else echo "ok: tokenize skips its own output ($n tokens)"; fi

# finding 12: --data takes regular files (or folders) only: a device or a FIFO is refused at once
expect 2 "is not a regular file but a device" train --data /dev/zero --out r-zero --steps 1
mkfifo fifo
expect 2 "is not a regular file but a FIFO" train --data fifo --out r-fifo --steps 1
expect 2 "is not a regular file but a FIFO" eval --ckpt run --data fifo

# finding 9: quantization_config values ascent does not implement are refused by name
# qset DIR PYTHON: a copy of q whose config.json `c` is changed by the python statement
qset() { rm -rf "$1"; cp -r q "$1"; python3 -c "import json; c = json.load(open('q/config.json')); q = c['quantization_config']; g = q['config_groups']['group_0']; $2; json.dump(c, open('$1/config.json', 'w'))"; }
qset c1 "g['weights']['num_bits'] = 4";                    expect 2 "weights.num_bits is 4; ascent implements 8 only" eval --ckpt c1
qset c2 "g['weights']['symmetric'] = False";               expect 2 "weights.symmetric must be true" eval --ckpt c2
qset c3 "g['weights']['type'] = 'float'";                  expect 2 "weights.type is \"float\"; ascent implements int" eval --ckpt c3
qset c4 "g['weights']['strategy'] = 'tensor'";             expect 2 "weight_scale differs between rows" eval --ckpt c4
qset c5 "g['input_activations']['strategy'] = 'tensor'";   expect 2 "input_activations.strategy is \"tensor\"; ascent implements token" eval --ckpt c5
qset c6 "q['ascent']['weight_layout'] = 'in,out'";         expect 2 "weight_layout is \"in,out\"" eval --ckpt c6
qset c7 "q['ignore'].append('h.9.mlp.c_fc')";              expect 2 "ignore entry \"h.9.mlp.c_fc\" names no linear layer" quant eval --ckpt c7
qset c8 "g['weights']['group_size'] = 128";                expect 2 "group_size must be null" generate --ckpt c8 --prompt x
rm -rf c9 && cp -r q c9 && python3 poison.py q/model.safetensors c9/model.safetensors scale=3e38
expect 2 "weight_scale[0] = 3e+38 is not a scale in (0," eval --ckpt c9 --data corpus.txt --batches 1

# finding 15: a run directory means its newest checkpoint wherever a checkpoint is read
out=$("$ASCENT" quant eval --ckpt q --fp32 run --data corpus.txt --batches 1 --seq 32 --threads 1 --json 2>&1) &&
  grep -q '"int8"' <<<"$out" || { echo "FAIL: quant eval --fp32 RUN_DIR: $out"; fail=1; }
expect 2 "holds no model.safetensors and no checkpoints" quant eval --ckpt q --fp32 texts
# finding 16: the source is stored absolute (quant eval works from another folder) and relative to
# the output (it still works when the two move together)
src=$(python3 -c "import json; print(json.load(open('q/config.json'))['quantization_config']['ascent']['source'])")
[[ $src == /* && -f $src/model.safetensors ]] || { echo "FAIL: source '$src' is not an absolute checkpoint path"; fail=1; }
mkdir -p elsewhere
(cd elsewhere && "$ASCENT" quant eval --ckpt ../q --data ../corpus.txt --batches 1 --seq 32 --threads 1 >/dev/null 2>err) ||
  { echo "FAIL: quant eval from another folder: $(cat elsewhere/err)"; fail=1; }
mkdir -p moved && cp -r run moved/run && cp -r q moved/q && mv run run.away
(cd moved && "$ASCENT" quant eval --ckpt q --data ../corpus.txt --batches 1 --seq 32 --threads 1 >/dev/null 2>err) &&
  echo "ok: quant eval finds the moved source relative to the output" || { echo "FAIL: moved tree: $(cat moved/err)"; fail=1; }
mv run.away run
# finding 17: the model's real n_positions in the message
expect 2 "longer than the model's n_positions 64" eval --ckpt run --seq 100000
expect 2 "longer than the model's n_positions 64" eval --ckpt q --seq 100000
expect 2 "longer than the model's n_positions 64" quant ptq --ckpt run -o q2 --seq 100000

# findings 11 + 27: the final evaluation reads --eval-batches batches and says so; --keep-ckpts keeps
# the newest N plus the folders a user marked with a file named 'keep'
"$ASCENT" train --resume run --steps 5 --ckpt-every 1 --eval-batches 2 --keep-ckpts 2 --threads 1 --out k \
  >k.log 2>&1 || { echo "FAIL: train --keep-ckpts"; cat k.log; fail=1; }
touch k/ckpt/step-000004/keep
"$ASCENT" train --resume k --steps 7 --threads 1 >>k.log 2>&1 || { echo "FAIL: resume --keep-ckpts"; cat k.log; fail=1; }
left=$(cd k/ckpt && echo step-*)
vb=$(python3 -c "import json; print(json.load(open('k/summary.json'))['final_val_batches'])")
if [[ $left != "step-000004 step-000006 step-000007" || $vb != 2 ]] || ! grep -q "evaluating 2 validation batch(es)" k.log; then
  echo "FAIL: checkpoints left '$left', final_val_batches $vb"; grep -i "evaluat\|removed" k.log; fail=1
else echo "ok: --keep-ckpts 2 left $left; final evaluation over --eval-batches 2"; fi
exit $fail
