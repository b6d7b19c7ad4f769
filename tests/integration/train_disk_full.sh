#!/usr/bin/env bash
# tests/integration/train_disk_full.sh — issue 14 finding 24: training onto a disk that fills up, on
# small tmpfs mounts made here (skipped where mounting is not permitted). A checkpoint that cannot
# be written ends the run (exit 1, no signal) with an error naming the last complete checkpoint,
# summary.json still says what happened when it fits, and a log that cannot be written is named
# on stderr while its lines go on to stderr.
set -u
fail=0
mkdir -p disk
if ! mount -t tmpfs -o size=2600k tmpfs disk 2>mount.err; then
  echo "skip: cannot mount a tmpfs here ($(head -1 mount.err)); run as root outside a restricted container"; exit 77
fi
trap 'umount disk 2>/dev/null' EXIT
for i in $(seq 1 400); do echo "line $i: the quick brown fox jumps over the lazy dog $((i * 7919 % 1000))"; done > corpus.txt
train=(--preset tiny --n-layer 2 --n-embd 64 --n-head 2 --max-seq 64 --batch 2 --seq 32 --data corpus.txt
       --eval-every 0 --eval-batches 2 --threads 1)

# 2.6 MB hold one checkpoint of this model (1.5 MB) but not two: step 2's is written, step 4's fails
"$ASCENT" train "${train[@]}" --steps 4 --ckpt-every 2 --out disk/run >a.out 2>a.err; rc=$?
msg=$(grep '^error:' a.err | tail -1)
if [[ $rc -ne 1 ]] || ! grep -qF "the checkpoint of step 4 failed" <<<"$msg" ||
   ! grep -qF "No space left on device; the last complete checkpoint is 'disk/run/ckpt/step-000002'" <<<"$msg"; then
  echo "FAIL: exit $rc, error: $msg"; tail -5 a.err; fail=1
else echo "ok: a full disk at step 4 names the last complete checkpoint (exit $rc)"; fi
st=$(python3 -c "import json; s = json.load(open('disk/run/summary.json'))
print(s['status'], s['last_checkpoint'], s['steps'], 'No space left' in s['error'])" 2>&1)
if [[ $st != "failed disk/run/ckpt/step-000002 4 True" ]]; then echo "FAIL: summary.json: $st"; fail=1
else echo "ok: summary.json of the failed run: $st"; fi
# the complete checkpoint is intact: it resumes elsewhere
"$ASCENT" train --resume disk/run/ckpt/step-000002 --steps 3 --out resumed --threads 1 >b.out 2>b.err &&
  echo "ok: step-000002 resumes" || { echo "FAIL: resume from the last complete checkpoint"; tail -3 b.err; fail=1; }
umount disk

# 12 KB: config.json, one page of log, one of metrics; the log fills first and says so on stderr,
# its later lines (the checkpoint error too) reach stderr, and no checkpoint is complete
mount -t tmpfs -o size=12k tmpfs disk || { echo "FAIL: second mount"; exit 1; }
"$ASCENT" train "${train[@]}" --steps 30 --out disk/run >c.out 2>c.err; rc=$?
if [[ $rc -ne 1 ]] || ! grep -q "^warning: rank 0 cannot write its log 'disk/run/logs/rank-00000.log': No space left on device" c.err ||
   ! grep -q "^step 30/30" c.err || ! grep -q "no checkpoint of this run is complete" c.err; then
  echo "FAIL: exit $rc, stderr:"; grep -v '^step [0-9]*/' c.err | tail -8; fail=1
else echo "ok: the unwritable log is named on stderr and its lines continue there (exit $rc)"; fi
exit $fail
