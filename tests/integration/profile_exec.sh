#!/usr/bin/env bash
# tests/integration/profile_exec.sh — `ascent profile --sample` must not change what a program does
# when it execs, forks or dies, and the profile must keep what each image of the process did:
#   1. exec: the sampling timer must not reach the new image before it has a handler (an interval
#      timer survives execve: the program died of SIGPROF, "Profiling timer expired", status 155);
#      ten runs, output and status as without the profiler; samples of both images in one rank
#      (before_exec and after_exec in the folded stacks), the exec an event between them; each
#      sample's period_ns set, the achieved rate in meta and, below 90% of --sample, in a note;
#   2. a failed exec: the program goes on and is still sampled afterwards;
#   3. fork: the child (not profiled) and the parent end as without the profiler;
#   4. abort and SIGSEGV: the same death, and the profile records it (a note naming the signal,
#      which report shows).
set -euo pipefail
ROOTP=$ASCENT_ROOT/tests/integration/profile
cc -O1 -o life "$ROOTP/lifecycle.c"
N=60000000

# run MODE: the plain run's output and status, then the profiled one's, which must be the same
run() {
  local mode=$1 out=$2 plain prof
  set +e
  ./life "$mode" $N > "$out.plain" 2>/dev/null
  plain=$?
  "$ASCENT" profile --out "$out" --sample 999 -- ./life "$mode" $N > "$out.prof" 2> "$out.err"
  prof=$?
  set -e
  [[ $plain -eq $prof ]] || { echo "$mode: status $prof under the profiler, $plain without"; cat "$out.err"; exit 1; }
  cmp "$out.plain" "$out.prof" || { echo "$mode: output differs"; exit 1; }
  test -f "$out/trace.db" || { echo "$mode: no profile"; cat "$out.err"; exit 1; }
  echo "$mode: status $prof"
}

for i in $(seq 10); do run exec "ex$i"; done
[[ "$(cat ex1.prof)" = "$(printf 'before exec\nafter exec')" ]]
"$ASCENT" export ex1/trace.db --format folded -o ex1.folded
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("ex1/trace.db")
assert db.execute("SELECT count(*) FROM rank").fetchone()[0] == 1
before = after = 0
for line in open("ex1.folded"):
    stack, n = line.rsplit(" ", 1)
    before += int(n) * ("before_exec" in stack)
    after += int(n) * ("after_exec" in stack)
assert before > 0 and after > 0, (before, after, open("ex1.folded").read()[:2000])
ex = db.execute("SELECT e.start_ns FROM event e JOIN string s ON s.id = e.name_id WHERE s.value = 'exec'").fetchall()
assert len(ex) == 1, ex
# every sample carries the CPU time it stands for
assert db.execute("SELECT count(*) FROM sample WHERE period_ns IS NULL OR period_ns <= 0").fetchone()[0] == 0
print("exec: samples before", before, "after", after)
PY

# the rate achieved is measured and, when the kernel's tick held it under 90% of --sample, said
"$ASCENT" profile --out rate --sample 999 -- ./life burn $((N * 5)) > /dev/null
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("rate/trace.db")
meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'sample_hz_%'").fetchall())
assert meta.get("sample_hz_requested") == "999", meta
achieved = float(meta["sample_hz_achieved"])
notes = [t for (t,) in db.execute("SELECT text FROM note WHERE text LIKE '--sample 999 achieved%'")]
assert achieved > 0 and (achieved < 0.9 * 999) == bool(notes), (achieved, notes)
n, cpu = db.execute("SELECT count(*), sum(period_ns) FROM sample").fetchone()
print("rate: achieved", achieved, "samples/s;", n, "samples standing for", cpu / 1e9, "s of CPU;", notes[:1])
PY

run execfail xf
grep -q "exec returned -1, ENOENT" xf.prof
"$ASCENT" export xf/trace.db --format folded -o xf.folded
grep -q "after_exec" xf.folded || { echo "no samples after the failed exec"; head xf.folded; exit 1; }

run fork fk
grep -q "parent, child exited 4" fk.prof

run abort ab
run segv sg
for pair in "ab SIGABRT" "sg SIGSEGV"; do
  set -- $pair
  "$ASCENT" report "$1/trace.db" > "$1.report"
  grep -q "$2" "$1.report" || { echo "$1: report does not say the program died of $2"; cat "$1.report"; exit 1; }
done
echo ok
