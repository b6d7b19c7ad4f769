#!/usr/bin/env bash
# tests/integration/diag_mem_damaged.sh — `ascent diag mem --check` on a profile whose rank is
# 1000000000 (issue 14, finding 20): ranks are listed, not used as array sizes, so the check runs
# instead of failing with "out of memory"; and a folder given as the profile or a config is named as one.
set -u
command -v sqlite3 >/dev/null || { echo "sqlite3 is not installed"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
head -c 4000 /usr/share/games/fortunes/fortunes >t.txt 2>/dev/null || python3 -c "print('hello world ' * 400)" >t.txt
"$ASCENT" train --data t.txt --n-layer 1 --n-embd 16 --n-head 2 --max-seq 16 --seq 8 --batch 2 --steps 2 \
  --threads 1 --eval-every 0 --eval-batches 1 --out run --profile >train.txt 2>&1 || { cat train.txt; fail "train"; }
"$ASCENT" diag mem --check run/trace.db >good.txt 2>&1; good=$?
[[ $good -le 1 ]] || { cat good.txt; fail "diag mem --check on the intact profile: exit $good"; }
cp run/trace.db big.db
sqlite3 big.db "UPDATE rank SET rank = 1000000000; UPDATE mem_event SET rank = 1000000000" || fail "sqlite3"
"$ASCENT" diag mem --check big.db --json >big.json 2>err.txt; rc=$?
[[ $rc -le 1 ]] || fail "rank 1000000000: exit $rc $(cat err.txt)"
! grep -qi "out of memory" err.txt || fail "rank 1000000000: $(cat err.txt)"
python3 - big.json <<'PY' || fail "rank 1000000000 not checked"
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["rank"] for r in d["check"]["ranks"]] == [1000000000], d["check"]["ranks"]
PY
"$ASCENT" diag mem --check run 2>err.txt; rc=$?
[[ $rc -eq 2 ]] && grep -q "it is a folder" err.txt || fail "a folder as the profile: exit $rc $(cat err.txt)"
# a folder where a JSON file is expected: named as a folder, exit 2 (it said "cannot read 'X'", exit 1)
for cmd in "train --steps 1 --config run" "diag mem --config run"; do
  "$ASCENT" $cmd >/dev/null 2>err.txt; rc=$?
  [[ $rc -eq 2 ]] && grep -q "it is a folder" err.txt || fail "ascent $cmd: exit $rc $(cat err.txt)"
done
echo ok
