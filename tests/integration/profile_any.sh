#!/usr/bin/env bash
# tests/integration/profile_any.sh — `ascent profile` around programs that never call MPI, and the
# library others link:
#   1. a C program: same output and exit status as without the profiler, one rank's profile whose
#      SIGPROF samples export as folded stacks through main;outer;inner (static functions of an
#      executable built without -rdynamic: named from its .symtab); report counts the samples of
#      this samples-only profile and view says it holds samples, not that the run recorded nothing;
#   2. signals: a program killed by SIGTERM ends `ascent profile` by SIGTERM (status 143); a SIGTERM
#      sent to `ascent profile` reaches the program; ASCENT_PROFILE=0 runs it without a profile;
#   3. bad use: no command, a folder that already holds trace.db (exit 2, nothing overwritten);
#   4. `make install PREFIX=<tmp>`, then samples/hooks_example.c built with pkg-config alone, and the
#      installed `ascent profile` using the installed preload library.
set -euo pipefail
ROOTP=$ASCENT_ROOT/tests/integration/profile
if [[ ${ASCENT_SANITIZED:-0} = 1 ]]; then
  export LD_PRELOAD=$(cc -print-file-name=libasan.so) ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
fi

cc -O1 -o spin "$ROOTP/spin.c"
./spin 300000000 5 > plain.out && exit 1 || [[ $? -eq 5 ]]
set +e
"$ASCENT" profile --out sp --sample 499 -- ./spin 300000000 5 > prof.out
rc=$?
set -e
[[ $rc -eq 5 ]] || { echo "exit status $rc, the program's is 5"; exit 1; }
cmp plain.out prof.out
"$ASCENT" export sp/trace.db --format folded -o sp.folded
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("sp/trace.db")
assert db.execute("SELECT count(*) FROM rank").fetchone()[0] == 1
samples = db.execute("SELECT count(*) FROM sample").fetchone()[0]
assert samples > 0, samples
inner = 0
for line in open("sp.folded"):
    stack, n = line.rsplit(" ", 1)
    if "main;outer;inner" in stack:
        inner += int(n)
assert inner > 0, open("sp.folded").read()[:2000]
print("samples", samples, "in main;outer;inner", inner)
PY
# a profile of samples alone: report counts them and points to the stacks; view says what it holds
"$ASCENT" report sp/trace.db > sp.report
grep -q "[1-9][0-9]* CPU samples" sp.report && grep -q "samples only" sp.report || { cat sp.report; exit 1; }
set +e
"$ASCENT" view sp/trace.db --dump overview > /dev/null 2> sp.view
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "CPU samples and no events" sp.view && grep -q -- "--by stack" sp.view || { echo "view: $rc"; cat sp.view; exit 1; }

set +e
"$ASCENT" profile --out sig -- sh -c 'kill -TERM $$'
rc=$?
set -e
[[ $rc -eq 143 ]] || { echo "exit status $rc, expected death by SIGTERM (143)"; exit 1; }
test -f sig/trace.db
"$ASCENT" profile --out fwd -- sleep 30 &
pid=$!
# wait until the program's profile is set up (its rank row committed), then stop `ascent profile`
started() { python3 -c "import sqlite3, sys; sys.exit(0 if sqlite3.connect('fwd/rank-00000.db').execute(
    'SELECT count(*) FROM rank').fetchone()[0] == 1 else 1)" 2>/dev/null; }
for _ in $(seq 600); do [[ -f fwd/rank-00000.db ]] && started && break; sleep 0.1; done
kill -TERM $pid
set +e
wait $pid
rc=$?
set -e
[[ $rc -eq 143 ]] || { echo "exit status $rc after SIGTERM to ascent profile"; exit 1; }
test -f fwd/trace.db
set +e
ASCENT_PROFILE=0 "$ASCENT" profile --out off -- ./spin 1000 4 > off.out
rc=$?
set -e
[[ $rc -eq 4 && ! -e off && "$(cat off.out)" = "spin 1000" ]]

set +e
"$ASCENT" profile --out sp -- ./spin 1000 2> again.err
rc1=$?
"$ASCENT" profile --out x 2> nocmd.err
rc2=$?
set -e
[[ $rc1 -eq 2 && $rc2 -eq 2 ]] || { echo "bad use exits $rc1 $rc2, expected 2"; exit 1; }
grep -q "already holds a profile" again.err
grep -q "after '--'" nocmd.err
test -f sp/trace.db

if [[ ${ASCENT_SANITIZED:-0} = 1 ]]; then
  echo "ok (make install and pkg-config skipped under sanitizers: the build tree is the check tree)"
  exit 0
fi
P=$PWD/prefix
make -s -C "$ASCENT_ROOT" BUILD="$ASCENT_BUILD" BIN="$(dirname "$ASCENT")" PREFIX="$P" install > install.log
export PKG_CONFIG_PATH=$P/lib/pkgconfig
cc -o hooks "$ASCENT_ROOT/samples/hooks_example.c" $(pkg-config --cflags --libs ascent)
./hooks hrun 3
"$P/bin/ascent" report hrun/trace.db --by op --format json > hooks.json
python3 -c "import json; ops = {o['name'] for o in json.load(open('hooks.json'))['ops']}; assert 'matmul' in ops, ops"
"$P/bin/ascent" profile --out inst -- ./spin 1000 > /dev/null
test -f inst/trace.db
echo ok
