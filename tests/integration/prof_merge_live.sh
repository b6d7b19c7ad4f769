#!/usr/bin/env bash
# prof_merge_live.sh — `ascent merge` on a run still being written is refused and removes nothing:
# a program profiled by `ascent profile` waits (its profiler's rank file open) while `merge` runs
# on its folder; then it ends, and its own merge at the end finds every rank file and makes the
# profile. A run whose writer died (kill -9) merges as before.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
[[ -f "$ASCENT_BUILD/libascent-preload.so" ]] || { echo "libascent-preload.so is not built"; exit 77; }

mkfifo started release
# the profiled program: a shell whose builtins say it runs, then wait for the release (no child
# processes: only the program `ascent profile` starts is profiled)
"$ASCENT" profile -o prof -- sh -c 'echo up > started; read x < release; echo done' >prof.out 2>prof.err &
ppid=$!
read -r _ <started          # the program runs: its profiler has opened prof/rank-00000.db
[[ -f prof/rank-00000.db ]] || fail "no rank file while the program runs: $(ls prof)"
"$ASCENT" merge prof >merge.out 2>merge.err
rc=$?
[[ $rc == 2 ]] || fail "merge of a run still being written: exit $rc, not 2: $(cat merge.err)"
grep -q "rank-00000.db' is still being written" merge.err || fail "merge did not say why: $(cat merge.err)"
[[ -f prof/rank-00000.db && ! -e prof/trace.db ]] || fail "the refused merge changed the run: $(ls prof)"
"$ASCENT" merge prof --keep -o copy.db >/dev/null 2>&1 && fail "merge --keep -o of a live run succeeded"
[[ ! -e copy.db ]] || fail "the refused merge wrote copy.db"
echo go >release
wait $ppid || fail "the profiled program failed: $(cat prof.err)"
grep -q done prof.out || fail "the program's output is missing"
[[ -f prof/trace.db && ! -e prof/rank-00000.db ]] || fail "the run's own merge did not happen: $(cat prof.err); $(ls prof)"
n=$(sqlite3 prof/trace.db "SELECT count(*) FROM rank")
[[ $n == 1 ]] || fail "the merged profile has $n ranks"

# a writer that died holds no lock: `ascent profile` merges what the killed program wrote
"$ASCENT" profile -o dead -- sh -c 'echo up > started; read x < release' >/dev/null 2>dead.err &
ppid=$!
read -r _ <started
kill -9 "$(pgrep -P $ppid)"   # the program, not `ascent profile`
wait $ppid 2>/dev/null
[[ -f dead/trace.db && ! -e dead/rank-00000.db ]] || fail "the run of a killed program was not merged: $(cat dead.err)"
echo ok
