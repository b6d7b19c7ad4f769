#!/usr/bin/env bash
# tests/integration/view_dump.sh — `ascent view RUN.db --dump VIEW --size WxH` on a fixture
# profile (built through the db writer API by the viewer's unit test binary) and on a real profile
# written by the profiler (samples/hooks_example): every view prints, key numbers are the
# hand-computed ones, 80x24 keeps the key bar, and unviewable files give clear messages.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T="$ASCENT_BUILD/tests/test_viewer"
[[ -x $T ]] || { echo "skip: $T is not built (make all-tests)"; exit 77; }
ASCENT_VIEW_FIXTURE=$PWD/fix.db "$T" --filter 'viewer/fixture_write' >/dev/null 2>&1 || fail "cannot build the fixture"
[[ -s fix.db ]] || fail "no fixture written"

for v in overview ops comm steps ranks memory timeline devices; do
  "$ASCENT" view fix.db --dump $v --size 120x40 >$v.txt 2>err.txt || { cat err.txt; fail "--dump $v"; }
  [[ $(wc -l <$v.txt) -eq 40 ]] || fail "$v: expected 40 lines, got $(wc -l <$v.txt)"
  grep -q "^ 1 overview  2 ops  3 comm" $v.txt || fail "$v: no tabs"
  grep -q "? help q quit" $v.txt || fail "$v: no key bar"
  "$ASCENT" view fix.db --dump $v --size 80x24 >small.txt || fail "--dump $v at 80x24"
  [[ $(awk '{ if (length($0) > 80) n++ } END { print n + 0 }' small.txt) -eq 0 ]] || fail "$v: lines wider than 80"
  tail -1 small.txt | grep -q "help" || fail "$v: no key bar at 80x24"
done
# golden-ish lines: values hand-computed in tests/unit/test_viewer.c
grep -Eq "^matmul +8 +1\.40 us +87\.5 +175 ns +175 ns +100 ns +250 ns +250 ns +10\.0" ops.txt || { cat ops.txt; fail "ops: matmul row"; }
grep -Eq "^gelu +4 +200 ns +12\.5" ops.txt || fail "ops: gelu row"
grep -Eq "^allreduce +comm +524\.3 KB +4 +1\.00 us +250 ns +4\.0 MB .* 200 ns +800 ns" comm.txt || { cat comm.txt; fail "comm: allreduce row"; }
grep -Eq "^dp +0,1 +2 +4 " comm.txt || fail "comm: communicator dp (members 0,1)"
grep -Eq "^ +1 +1\.10 us +100 ns +r1 +400 ns" steps.txt || { cat steps.txt; fail "steps: step 1"; }
grep -Eq "4\.1000" steps.txt || fail "steps: loss"
grep -Eq "^r1 \* " ranks.txt || fail "ranks: slow rank 1 not marked"
grep -Eq "^r0 +\. +2\.0 MB" ranks.txt || fail "ranks: matrix"
grep -Eq "^activation +r0 +host +800 B +1\.10 us" memory.txt || { cat memory.txt; fail "memory: activation peak"; }
grep -Eq "^category +rank +device +peak v" memory.txt || { cat memory.txt; fail "memory: not sorted by peak"; }
grep -q "peak 1.8 KB" memory.txt || fail "memory: series peak"
grep -Eq "^r0 t0 main .*matmul.*allreduce" timeline.txt || { cat timeline.txt; fail "timeline: lane r0 t0"; }
grep -Eq "^r1 t0 main " timeline.txt || fail "timeline: lane r1"
grep -Eq "^steps +\|0 " timeline.txt || fail "timeline: step markers"
grep -q "ascent train --dp 2" overview.txt || fail "overview: command"
grep -q "size budget reached" overview.txt || fail "overview: findings"
# restrictions
"$ASCENT" view fix.db --dump ops --rank 1 --steps 1:1 --size 120x40 >r.txt || fail "--rank --steps"
grep -q "rank 1  steps 1:1" r.txt || fail "restriction not shown"
grep -Eq "^matmul +2 +400 ns" r.txt || { cat r.txt; fail "rank 1 step 1 matmul"; }

# errors: each a clear message and exit 2, never a crash
expect_err() {   # expect_err PATTERN ARGS...
  local pat=$1; shift
  "$ASCENT" view "$@" >out.txt 2>err.txt; local rc=$?
  [[ $rc -eq 2 ]] || { cat err.txt; fail "'view $*': exit $rc, expected 2"; }
  grep -q "$pat" err.txt || { cat err.txt; fail "'view $*': message lacks '$pat'"; }
}
expect_err "no such file" missing.db --dump ops
echo "not a database at all" >text.db
expect_err "not a database" text.db --dump ops
expect_err "no such view\|must be one of\|overview|ops" fix.db --dump nonsense
expect_err "expected WxH" fix.db --dump ops --size 12
expect_err "expected A:B" fix.db --dump ops --steps x:y
expect_err "needs a terminal" fix.db </dev/null
expect_err "no events of rank 7" fix.db --dump ops --rank 7

# a real profile written by the profiler, when the sample is built
H="$ASCENT_BUILD/samples/hooks_example"
if [[ -x $H ]]; then
  "$H" run 4 >/dev/null 2>&1 || fail "hooks_example failed"
  [[ -s run/trace.db ]] || fail "hooks_example wrote no trace.db"
  for v in overview ops comm steps ranks memory timeline devices; do
    "$ASCENT" view run/trace.db --dump $v --size 100x30 >real_$v.txt 2>err.txt || { cat err.txt; fail "real profile: --dump $v"; }
  done
  grep -q "matmul" real_ops.txt || { cat real_ops.txt; fail "real profile: no matmul"; }
  # a run still being written: the rank database of a live run
  "$H" live 1000000 --forever >live.out 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q recording live.out && break; sleep 0.1; done
  expect_err "still being written" live/rank-00000.db --dump ops
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
fi
echo ok
