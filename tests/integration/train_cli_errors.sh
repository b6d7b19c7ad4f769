#!/usr/bin/env bash
# tests/integration/train_cli_errors.sh — bad options and bad inputs of train/eval/generate/tokenize
# exit 2 with a message that names the option (or file) and what is accepted.
set -u
fail=0
# expect CODE PATTERN -- ARGS...: run ascent, check the exit code and that stderr matches PATTERN
expect() {
  local code=$1 pat=$2; shift 3
  local err rc
  err=$("$ASCENT" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne $code ]]; then echo "FAIL: ascent $* exited $rc, expected $code: $err"; fail=1; return; fi
  if ! grep -qF -- "$pat" <<<"$err"; then echo "FAIL: ascent $*: message lacks '$pat': $err"; fail=1; return; fi
  echo "ok: ascent $* -> $rc"
}
expect 2 "--steps' of 'ascent train' expects an integer in [1, 1000000000], got 'abc'" -- train --steps abc
expect 2 "--batch' of 'ascent train' must be in [1, 65536], got 0" -- train --batch 0
expect 2 "--lr' of 'ascent train' must be in (0, 10], got -1" -- train --lr -1
expect 2 "--grad-accum" -- train --grad-accum 0
expect 2 "tiny|small|gpt2-124m" -- train --preset huge
expect 2 "unknown option '--stepz'" -- train --stepz 3
expect 2 "needs a value" -- train --steps
expect 2 "max_seq" -- train --seq 100000 --out x
echo '{"steps": 3, "bogus": 1}' > bad.json
expect 2 "'bad.json': unknown key 'bogus'" -- train --config bad.json
echo '{"batch": "eight"}' > bad2.json
expect 2 "'bad2.json': key 'batch' must be an integer" -- train --config bad2.json
echo '{"steps": ' > bad3.json
expect 2 "not valid JSON" -- train --config bad3.json
expect 2 "no-such.json" -- train --config no-such.json
expect 2 "does not exist" -- train --data no-such-file --out r --steps 1
expect 2 "cannot resume from 'nowhere'" -- train --resume nowhere
expect 2 "needs --ckpt" -- eval
expect 2 "does not exist" -- eval --ckpt nowhere
expect 2 "needs --prompt" -- generate --ckpt nowhere
expect 2 "needs -o" -- tokenize x.txt
printf 'hello' > x.txt
expect 2 "needs at least one INPUT" -- tokenize -o x.bin
# a shard with a bad magic and a truncated shard are refused as data
head -c 2048 /dev/zero > zero.bin
expect 2 "not an llm.c token shard: magic 0" -- train --data zero.bin --out r2 --steps 1
"$ASCENT" tokenize x.txt -o ok.bin >/dev/null || { echo "FAIL: tokenize"; fail=1; }
head -c 1030 ok.bin > trunc.bin
expect 2 "truncated" -- train --data trunc.bin --out r3 --steps 1
# --help works for each command
for c in train eval generate tokenize; do
  "$ASCENT" "$c" --help | grep -q "usage: ascent $c" || { echo "FAIL: $c --help"; fail=1; }
done
exit $fail
