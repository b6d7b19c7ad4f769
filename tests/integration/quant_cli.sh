#!/usr/bin/env bash
# tests/integration/quant_cli.sh — a quantized checkpoint through the ordinary commands: `ascent eval
# --json` runs the real INT8 forward (its loss equals `quant eval --json`'s int8 loss on the same
# data, batches and seq, for a weight-only and a W8A8 scheme, and differs from the fp32 loss),
# `ascent generate` samples text from it (deterministic for a seed), and `--db` stores the per-layer
# report of ptq and qat in the profile database's quant_layer table; qat --fp32-control writes a
# plain fp32 checkpoint.
set -u
fail=0
text=corpus.txt
for i in $(seq 1 400); do echo "line $i: the quick brown fox jumps over the lazy dog $((i * 7919 % 1000))"; done > $text
"$ASCENT" train --preset tiny --n-layer 2 --n-embd 64 --n-head 2 --max-seq 64 --steps 3 --batch 2 --seq 64 \
  --data $text --eval-every 0 --threads 1 --out run >train.log 2>&1 || { echo "FAIL: train"; cat train.log; exit 1; }
ck=$(ls -d run/ckpt/step-* | tail -1)
common=(--ckpt "$ck" --calib-seqs 4 --sens-seqs 2 --seq 32 --threads 1)
num() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" <<<"$2" | head -1; }
fp=$("$ASCENT" eval --ckpt "$ck" --data $text --batch 2 --seq 32 --batches 6 --threads 1 --json 2>&1) || { echo "FAIL: fp32 eval: $fp"; exit 1; }
for s in w8 w8a8-static; do
  "$ASCENT" quant ptq "${common[@]}" --scheme $s -o q-$s --db prof.db >ptq-$s.log 2>&1 || { echo "FAIL: ptq $s"; cat ptq-$s.log; fail=1; continue; }
  qe=$("$ASCENT" quant eval --ckpt q-$s --data $text --batch 2 --seq 32 --batches 6 --threads 1 --json 2>&1) || { echo "FAIL: quant eval $s: $qe"; fail=1; continue; }
  ev=$("$ASCENT" eval --ckpt q-$s --data $text --batch 2 --seq 32 --batches 6 --threads 1 --json 2>&1) || { echo "FAIL: eval $s: $ev"; fail=1; continue; }
  for k in '"loss"' '"ppl"' '"tokens": 384' "\"quantized\": \"$s\""; do
    grep -qF -- "$k" <<<"$ev" || { echo "FAIL: eval $s json lacks $k: $ev"; fail=1; }
  done
  qloss=$(sed -n 's/.*"int8":{"loss":\([-0-9.e+]*\).*/\1/p' <<<"$qe")
  eloss=$(num loss "$ev") floss=$(num loss "$fp")
  if ! awk -v a="$qloss" -v b="$eloss" -v f="$floss" 'BEGIN { d = a - b; if (d < 0) d = -d; e = f - b; if (e < 0) e = -e;
        exit !(a != "" && d <= 2e-6 && e > 0) }'; then
    echo "FAIL: $s: eval loss $eloss vs quant eval int8 loss $qloss (fp32 $floss)"; fail=1
  else echo "ok: eval --json on $s = quant eval int8 loss ($eloss; fp32 $floss)"; fi
done
# default data: the default corpus's validation split, as for an fp32 checkpoint
[[ -d /usr/share/games/fortunes ]] && {
  out=$("$ASCENT" eval --ckpt q-w8a8-static --batch 1 --seq 32 --batches 1 --threads 1 --json 2>&1) || { echo "FAIL: eval default data: $out"; fail=1; }
}
# generate: prompt + 40 sampled bytes, the same for the same seed; greedy works too
g1=$("$ASCENT" generate --ckpt q-w8a8-static --prompt "line 7" --tokens 40 --seed 5 --threads 1 2>gen.err) || { echo "FAIL: generate: $(cat gen.err)"; fail=1; }
g2=$("$ASCENT" generate --ckpt q-w8a8-static --prompt "line 7" --tokens 40 --seed 5 --threads 1 2>/dev/null)
g0=$("$ASCENT" generate --ckpt q-w8 --prompt "line 7" --tokens 20 --temperature 0 --threads 1 2>/dev/null) || { echo "FAIL: greedy generate"; fail=1; }
if [[ "${g1:0:6}" != "line 7" || $(printf %s "$g1" | wc -c) -lt 40 || "$g1" != "$g2" || "${g0:0:6}" != "line 7" ]]; then
  echo "FAIL: generate output: '$g1' / '$g2' / '$g0'"; fail=1
else echo "ok: generate on a quantized checkpoint"; fi
# --db: 8 rows per ptq (2 layers x 4 linears), then qat adds its PTQ start and its own rows (a
# delta_ppl_pct below the loss's float resolution is exactly 0, which JSON writes as an integer)
"$ASCENT" quant qat "${common[@]}" --steps 2 --batch 2 -o q-qat --db prof.db >qat.log 2>&1 || { echo "FAIL: qat --db"; cat qat.log; fail=1; }
rows=$(sqlite3 prof.db "SELECT count(*) FROM quant_layer")
stat=$(sqlite3 prof.db "SELECT count(*) FROM quant_layer WHERE method = 'percentile' AND scale > 0 AND sqnr_db > 10
  AND json_extract(detail, '$.scheme') = 'w8a8-static' AND json_type(detail, '$.delta_ppl_pct') IN ('real', 'integer')")
w8=$(sqlite3 prof.db "SELECT count(*) FROM quant_layer WHERE method = 'weight-only' AND json_extract(detail, '$.producer') = 'ptq'")
qat=$(sqlite3 prof.db "SELECT count(*) FROM quant_layer WHERE json_extract(detail, '$.producer') = 'qat' AND sqnr_db IS NOT NULL")
layer=$(sqlite3 prof.db "SELECT layer FROM quant_layer ORDER BY id LIMIT 1")
if [[ "$rows" != 32 || "$stat" != 24 || "$w8" != 8 || "$qat" != 8 || "$layer" != h.0.attn.c_attn ]]; then
  echo "FAIL: quant_layer rows=$rows static=$stat w8=$w8 qat=$qat first=$layer"; sqlite3 prof.db "SELECT * FROM quant_layer LIMIT 3"; fail=1
else echo "ok: --db stored 32 quant_layer rows"; fi
# the QAT control: the same fine-tuning with nothing quantized, a plain fp32 checkpoint
"$ASCENT" quant qat "${common[@]}" --steps 2 --batch 2 --loss ce --fp32-control -o ctl >ctl.log 2>&1 || { echo "FAIL: qat --fp32-control"; cat ctl.log; fail=1; }
out=$("$ASCENT" eval --ckpt ctl --data $text --batch 2 --seq 32 --batches 2 --threads 1 --json 2>&1)
if grep -q '"quantized"' <<<"$out" || ! grep -q '"loss"' <<<"$out"; then echo "FAIL: control checkpoint: $out"; fail=1; else echo "ok: qat --fp32-control"; fi
# a file that is not a database is refused, nothing is half-written
echo "not a database" > bad.db
err=$("$ASCENT" quant ptq "${common[@]}" --scheme w8 -o q-bad --db bad.db 2>&1 >/dev/null); rc=$?
if [[ $rc -ne 2 || -e q-bad ]] || ! grep -q "bad.db.*not a database" <<<"$err"; then echo "FAIL: --db on a non-database exited $rc: $err"; fail=1; else echo "ok: --db bad.db refused"; fi
exit $fail
