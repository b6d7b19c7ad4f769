#!/usr/bin/env bash
# tests/integration/quant_ptq.sh — `ascent quant` end to end on a very small trained model: PTQ in
# every scheme (with --skip, --budget, --smooth), quant eval --json's contract, QAT for a few
# steps, and bad input refused with exit 2 and a clear message.
set -u
fail=0
expect() {
  local code=$1 pat=$2; shift 3
  local err rc
  err=$("$ASCENT" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne $code ]]; then echo "FAIL: ascent $* exited $rc, expected $code: $err"; fail=1; return; fi
  if ! grep -qF -- "$pat" <<<"$err"; then echo "FAIL: ascent $*: message lacks '$pat': $err"; fail=1; return; fi
  echo "ok: ascent $* -> $rc"
}
text=corpus.txt
for i in $(seq 1 400); do echo "line $i: the quick brown fox jumps over the lazy dog $((i * 7919 % 1000))"; done > $text
"$ASCENT" train --preset tiny --n-layer 2 --n-embd 64 --n-head 2 --max-seq 64 --steps 3 --batch 2 --seq 64 \
  --data $text --eval-every 0 --threads 1 --out run >train.log 2>&1 || { echo "FAIL: train"; cat train.log; exit 1; }
ck=$(ls -d run/ckpt/step-* | tail -1)
common=(--ckpt "$ck" --calib-seqs 4 --sens-seqs 2 --seq 32 --threads 1)
for s in w8 w8a8-dynamic w8a8-static; do
  "$ASCENT" quant ptq "${common[@]}" --scheme $s -o q-$s >ptq-$s.log 2>&1 || { echo "FAIL: ptq $s"; cat ptq-$s.log; fail=1; continue; }
  for f in model.safetensors config.json quant_report.json; do
    [[ -s q-$s/$f ]] || { echo "FAIL: ptq $s wrote no $f"; fail=1; }
  done
  grep -q '"quant_method":[[:space:]]*"compressed-tensors"' q-$s/config.json || { echo "FAIL: $s config lacks quant_method"; fail=1; }
  out=$("$ASCENT" quant eval --ckpt q-$s --batch 2 --seq 32 --batches 2 --threads 1 --json 2>&1) || { echo "FAIL: eval $s: $out"; fail=1; continue; }
  for k in '"fp32":{"loss"' '"int8":{"loss"' '"ppl"' '"tokens_per_s"' '"bytes"' '"delta_ppl_pct"' '"top1_agreement"' '"mean_kl"' "\"scheme\":\"$s\""; do
    grep -qF -- "$k" <<<"$out" || { echo "FAIL: eval $s json lacks $k: $out"; fail=1; }
  done
  echo "ok: ptq + eval $s"
done
grep -q '"input_scale"' q-w8a8-static/quant_report.json || { echo "FAIL: static report lacks input_scale"; fail=1; }
# --skip keeps layers fp32 and lists them in the ignore list; the table names them
"$ASCENT" quant ptq "${common[@]}" --scheme w8a8-static --method mse --skip mlp.c_proj -o q-skip >skip.log 2>&1 || { echo "FAIL: skip"; cat skip.log; fail=1; }
grep -q '"h.1.mlp.c_proj"' q-skip/config.json || { echo "FAIL: --skip not in ignore list"; fail=1; }
grep -q 'h.0.mlp.c_proj .*fp32' skip.log || { echo "FAIL: --skip not shown in the table"; cat skip.log; fail=1; }
# --budget 0 with --smooth: falls back until the sensitivity set's dPPL <= 0 (or nothing is left)
"$ASCENT" quant ptq "${common[@]}" --scheme w8a8-dynamic --smooth 0.5 --budget 0 -o q-budget >budget.log 2>&1
rc=$?
if [[ $rc -ne 0 && $rc -ne 2 ]]; then echo "FAIL: budget exited $rc"; cat budget.log; fail=1; fi
# QAT, 3 steps
"$ASCENT" quant qat "${common[@]}" --steps 3 --batch 2 --lr 1e-4 -o q-qat >qat.log 2>&1 || { echo "FAIL: qat"; cat qat.log; fail=1; }
[[ -s q-qat/model.safetensors && -s q-qat/ptq/model.safetensors && -s q-qat/quant_report.json ]] || { echo "FAIL: qat outputs"; fail=1; }
"$ASCENT" quant eval --ckpt q-qat --batch 2 --seq 32 --batches 1 --threads 1 >/dev/null 2>&1 || { echo "FAIL: eval of qat output"; fail=1; }
# bad input
expect 2 "does not exist" -- quant ptq --ckpt no-such-dir -o x
expect 2 "missing -o OUTDIR" -- quant ptq --ckpt "$ck"
expect 2 "is already quantized" -- quant ptq --ckpt q-w8 -o x
expect 2 "does not apply to scheme w8a8-dynamic" -- quant ptq --ckpt "$ck" --method kl -o x
expect 2 "--smooth does not apply to scheme w8" -- quant ptq "${common[@]}" --scheme w8 --smooth 0.5 -o x
expect 2 "expects one of w8|w8a8-dynamic|w8a8-static, got 'w4'" -- quant ptq --ckpt "$ck" --scheme w4 -o x
expect 2 "is not an ascent quantized checkpoint" -- quant eval --ckpt "$ck"
expect 2 "missing subcommand" -- quant
expect 2 "unknown subcommand 'bogus'" -- quant bogus
# a checkpoint with a missing tensor: a dynamic file under a config that claims static scales
mkdir -p broken
cp q-w8a8-dynamic/model.safetensors broken/model.safetensors
python3 -c "import json; c = json.load(open('q-w8/config.json')); q = c['quantization_config']
q['ascent']['scheme'] = 'w8a8-static'
q['config_groups']['group_0']['input_activations'] = {'num_bits': 8, 'type': 'int', 'symmetric': True, 'strategy': 'tensor', 'dynamic': False}
json.dump(c, open('broken/config.json', 'w'))"
expect 2 "has no tensor 'h.0.attn.c_attn.input_scale'" -- quant eval --ckpt broken --fp32 "$ck"
exit $fail
