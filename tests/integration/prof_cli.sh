#!/usr/bin/env bash
# tests/integration/prof_cli.sh — `ascent report`, `export` and `merge` on a profile written by
# samples/hooks_example, every --by and format, and the errors for bad input (exit 2, clear text).
set -u
EX="$ASCENT_BUILD/samples/hooks_example"
if [[ ! -x $EX ]]; then echo "samples/hooks_example is not built ($EX)"; exit 77; fi
fail() { echo "FAIL: $*"; exit 1; }
"$EX" run 12 >/dev/null || fail "hooks_example"
[[ -f run/trace.db ]] || fail "no trace.db"
"$ASCENT" report run/trace.db >all.txt || fail "report"
grep -q "Operators" all.txt && grep -q "Communication" all.txt || fail "default report sections"
for by in op comm step rank mem stack overhead; do
  "$ASCENT" report run/trace.db --by $by >/dev/null || fail "report --by $by"
  "$ASCENT" report run/trace.db --by $by --format csv >/dev/null || fail "report --by $by csv"
done
n=$("$ASCENT" report run/trace.db --by step --steps 3:5 --format csv | wc -l)
[[ $n -eq 4 ]] || fail "--steps 3:5 gave $n csv lines (want header + 3)"
"$ASCENT" report run/trace.db --format json >r.json || fail "json"
for k in ops comm steps ranks mem overhead; do grep -q "\"$k\":" r.json || fail "json lacks $k"; done
"$ASCENT" export run/trace.db >/dev/null 2>&1 || fail "export"
[[ -s run/trace.json ]] || fail "default export path run/trace.json"
"$ASCENT" export run/trace.db --gzip -o t.json.gz || fail "export gzip"
gzip -t t.json.gz || fail "not gzip"
# finding 22: hooks_example records no call stacks, so folded stacks are refused with how to record them
"$ASCENT" export run/trace.db --format folded -o f.txt 2>err.txt; rc=$?
[[ $rc -eq 2 ]] && grep -q "no call stacks" err.txt && grep -q -- "--profile-stacks" err.txt || fail "folded without stacks: rc $rc $(cat err.txt)"
[[ ! -e f.txt && ! -e f.txt.tmp ]] || fail "folded without stacks left a file"
# errors
echo "not a database" >bad.db
"$ASCENT" report bad.db 2>err.txt; rc=$?
[[ $rc -eq 2 ]] && grep -q "not a database" err.txt || fail "text file: rc $rc $(cat err.txt)"
"$ASCENT" report run/trace.db --by nonsense 2>err.txt; [[ $? -eq 2 ]] || fail "bad --by"
"$ASCENT" report run/trace.db --steps 5:2 2>err.txt; [[ $? -eq 2 ]] || fail "bad --steps"
mkdir empty
"$ASCENT" merge empty 2>err.txt; rc=$?
[[ $rc -eq 2 ]] && grep -q "no rank-NNNNN.db" err.txt || fail "empty merge: rc $rc $(cat err.txt)"
"$ASCENT" report missing.db 2>err.txt; [[ $? -eq 2 ]] || fail "missing file"
echo ok
