#!/usr/bin/env bash
# output_types.sh — an output is written by replacing a regular file, so every command that takes
# one refuses an output that is a device, a FIFO or a symbolic link (exit 2, saying what it is;
# the node is left as it was), and a folder output that is a file; `export -o -` writes to
# standard output instead. As root a character device is made here (the null device's numbers):
# `-o /dev/null` used to turn /dev/null itself into a regular file.
set -uo pipefail
fail=0
# refused WHAT ARGS...: exit 2 and WHAT in the message
refused() {
  local what=$1; shift
  local err rc
  err=$(timeout 120 "$ASCENT" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne 2 ]]; then echo "FAIL: ascent $* exited $rc, expected 2: $err"; fail=1; return; fi
  grep -qF -- "$what" <<<"$err" || { echo "FAIL: ascent $*: message lacks '$what': $err"; fail=1; return; }
  echo "ok: ascent $* -> 2"
}
# still TYPE PATH: the node is still what it was (stat's words)
still() { local t; t=$(stat -c %F "$2"); [[ $t == "$1" ]] || { echo "FAIL: '$2' became a $t, was a $1"; fail=1; }; }

for i in $(seq 1 200); do echo "line $i: the quick brown fox jumps over the lazy dog"; done >corpus.txt
"$ASCENT" train --preset tiny --n-layer 2 --n-embd 64 --n-head 2 --max-seq 64 --steps 2 --batch 2 --seq 32 \
  --data corpus.txt --eval-every 0 --threads 1 --profile --out run >train.log 2>&1 || { cat train.log; echo "FAIL: train"; exit 1; }
[[ -f run/trace.db ]] || { echo "FAIL: no profile"; exit 1; }
mkdir parts && cp run/trace.db parts/rank-00000.db
K="$ASCENT_ROOT/tests/fixtures/kineto/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"

mkfifo fifo
echo kept >target.txt
ln -s target.txt link
nodes=(fifo link)
if [[ $(id -u) == 0 ]] && mknod nul c 1 3 2>/dev/null; then nodes+=(nul); else echo "(not root: no device node made)"; fi
for n in "${nodes[@]}"; do
  case $n in fifo) what="is a FIFO (named pipe), not a regular file"; t=fifo ;;
    link) what="is a symbolic link (to 'target.txt')"; t="symbolic link" ;;
    nul) what="is a character device, not a regular file"; t="character special file" ;; esac
  refused "$what" import "$K" -o $n
  refused "$what" export run/trace.db -o $n
  refused "$what" merge parts --keep -o $n
  refused "$what" tokenize corpus.txt -o $n
  refused "not a folder" train --data corpus.txt --out $n --steps 1 --threads 1
  refused "not a folder" quant ptq --ckpt run -o $n --calib-seqs 2 --sens-seqs 0 --seq 32 --threads 1
  still "$t" $n
done
[[ $(cat target.txt) == kept ]] || { echo "FAIL: the link's target changed"; fail=1; }
refused "is a folder; give a file name" import "$K" -o parts
refused "is a regular file, not a folder" train --data corpus.txt --out target.txt --steps 1 --threads 1
[[ $(cat target.txt) == kept ]] || { echo "FAIL: target.txt changed"; fail=1; }

# -o - : the trace on standard output, plain or gzip, and no file named '-'
"$ASCENT" export run/trace.db -o - 2>/dev/null >out.json || { echo "FAIL: export -o -"; fail=1; }
"$ASCENT" export run/trace.db -o - --gzip 2>/dev/null | zcat >outgz.json || { echo "FAIL: export -o - --gzip"; fail=1; }
"$ASCENT" export run/trace.db -o file.json 2>/dev/null || { echo "FAIL: export -o file.json"; fail=1; }
cmp -s out.json file.json && cmp -s outgz.json file.json || { echo "FAIL: export -o - differs from the file"; fail=1; }
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["traceEvents"]' out.json || { echo "FAIL: not JSON"; fail=1; }
[[ ! -e ./- ]] || { echo "FAIL: a file named '-' was written"; fail=1; }
[[ $fail == 0 ]] && echo ok
exit $fail
