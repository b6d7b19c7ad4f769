#!/usr/bin/env bash
# output_interrupted.sh — outputs are built in a temporary that cannot outlive its process:
# 40 `kill -9`s of an import at random moments, then SIGINT, SIGTERM and SIGHUP, leave nothing in
# the output's folder but OUT, and OUT is the old profile or the new one, whole; `-o file:x.db`
# leaves nothing beside it; two merges into one output at once both succeed; a temporary a dead
# process left (an earlier version's name) is removed and reported by the next import.
set -uo pipefail
K="$ASCENT_ROOT/tests/fixtures/kineto"
OLD_SRC="$K/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
NEW_SRC="$K/nccl_parser_config__nccl_data.json.gz"
fail() { echo "FAIL: $*"; exit 1; }
events() { sqlite3 "$1" "SELECT count(*) FROM event" 2>/dev/null; }
whole() { [[ "$(sqlite3 "$1" "PRAGMA integrity_check" 2>&1)" == ok ]]; }

"$ASCENT" import "$OLD_SRC" -o old.db -q 2>/dev/null || fail "import of the old trace"
"$ASCENT" import "$NEW_SRC" -o new.db -q 2>/dev/null || fail "import of the new trace"
n_old=$(events old.db) n_new=$(events new.db)
[[ $n_old -gt 0 && $n_new -gt $n_old ]] || fail "fixture counts: old $n_old, new $n_new"

# only OUT.db may be in w/, and it is the old or the new profile, whole
check_dir() {
  local left; left=$(ls -A w | tr '\n' ' ')
  [[ "$left" == "OUT.db " ]] || fail "$1: the folder holds '$left', not just OUT.db"
  whole w/OUT.db || fail "$1: OUT.db is damaged"
  local n; n=$(events w/OUT.db)
  [[ $n == "$n_old" || $n == "$n_new" ]] || fail "$1: OUT.db has $n events, neither the old $n_old nor the new $n_new"
}

mkdir w
cp old.db w/OUT.db
finished=0
for i in $(seq 1 40); do
  # delays spread over the import (about a second here) and a little past it
  ms=$(( (RANDOM % 1200) + 1 ))
  "$ASCENT" import "$NEW_SRC" -o w/OUT.db -q 2>/dev/null &
  pid=$!
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null && finished=$((finished + 1))
  check_dir "kill -9 after $ms ms (round $i)"
  # the next rounds start from the old profile again while most imports are cut short
  (( i % 2 )) && cp old.db w/OUT.db
done
echo "40 kill -9s: $finished imports had finished before their kill; nothing else left behind"

for sig in INT TERM HUP; do
  cp old.db w/OUT.db
  "$ASCENT" import "$NEW_SRC" -o w/OUT.db -q 2>/dev/null &
  pid=$!
  sleep 0.2
  kill -s $sig $pid 2>/dev/null
  wait $pid 2>/dev/null
  check_dir "SIG$sig"
done

# an output whose name begins with file: (SQLite would read it as a URI)
mkdir f && (cd f && "$ASCENT" import "$OLD_SRC" -o file:x.db -q 2>../f.err) || fail "-o file:x.db: $(cat f.err)"
[[ "$(ls -A f | tr '\n' ' ')" == "file:x.db " ]] || fail "-o file:x.db left: $(ls -A f)"
whole f/file:x.db || fail "-o file:x.db is damaged"

# two merges into one output at once: each has its own temporary, both succeed, one of them is left
mkdir run && cp old.db run/rank-00000.db
"$ASCENT" merge run --keep -o m/trace.db 2>/dev/null && fail "merge into a missing folder succeeded"
mkdir m
"$ASCENT" merge run --keep -o m/trace.db >m1.out 2>m1.err & p1=$!
"$ASCENT" merge run --keep -o m/trace.db >m2.out 2>m2.err & p2=$!
wait $p1 || fail "the first of two merges at once: $(cat m1.err)"
wait $p2 || fail "the second of two merges at once: $(cat m2.err)"
[[ "$(ls -A m | tr '\n' ' ')" == "trace.db " ]] || fail "two merges at once left: $(ls -A m)"
whole m/trace.db && [[ $(events m/trace.db) == "$n_old" ]] || fail "the merged profile is not the rank file's"

# what a process that died left under an earlier version's name is removed, and said so
sh -c 'exit 0' & dead=$!
wait $dead
cp old.db "w/OUT.db.tmp-$dead"
cp old.db "w/OUT.db.tmp-$dead-3-links"
"$ASCENT" import "$OLD_SRC" -o w/OUT.db -q 2>stale.err || fail "import beside a stale temporary: $(cat stale.err)"
grep -q "removed 'w/OUT.db.tmp-$dead'" stale.err || fail "the stale temporary was not reported: $(cat stale.err)"
check_dir "stale temporaries of process $dead"
# a temporary of a process that still runs is left alone
cp old.db "w/OUT.db.tmp-$$-0"
"$ASCENT" import "$OLD_SRC" -o w/OUT.db -q 2>/dev/null || fail "import beside a live temporary"
[[ -f "w/OUT.db.tmp-$$-0" ]] || fail "the temporary of a running process was removed"
echo ok
