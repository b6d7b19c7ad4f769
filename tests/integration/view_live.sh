#!/usr/bin/env bash
# tests/integration/view_live.sh — `ascent view RUN_DIR` on a real 2-rank profiled run while it
# trains (mpirun -np 2 ascent train --dp 2 --preset tiny --profile), the TUI driven in tmux:
#  - `--dump steps` on the running folder prints the live state once;
#  - the steps view (newest first) shows a step within 2 of the last one metrics.jsonl logged, and
#    grows with no key pressed (the once-a-second refresh);
#  - when the run ends the viewer switches to the merged trace.db (the timeline answers);
#  - a second run whose rank 1 is killed with SIGKILL: the viewer names the dead rank and goes on.
# Every check polls the screen until it holds (up to 120 s on a loaded host); none depends on
# how long anything takes.
set -u
command -v tmux >/dev/null || { echo "skip: tmux is not installed"; exit 77; }
command -v mpirun >/dev/null || { echo "skip: mpirun not found"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=120
MPI=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 --mca odls_base_sigkill_timeout 5 -x ASCENT_COMM_TIMEOUT)
TRAIN=(train --dp 2 --preset tiny --batch 8 --seq 64 --threads 1 --warmup 2 --eval-every 0 --eval-batches 1 --profile)
S=ascent-live-test-$$
export TMUX_TMPDIR=$PWD
PIDS=()
cleanup() { tmux kill-server 2>/dev/null; for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
screen() { tmux capture-pane -p -t $S; }
fail() { echo "FAIL: $*"; screen 2>/dev/null; exit 1; }
wait_until() {   # wait_until WHAT CMD... — until CMD succeeds, up to 120 s
  local what=$1; shift
  for _ in $(seq 1200); do "$@" && return 0; sleep 0.1; done
  fail "$what"
}
has() { screen | grep -qF -- "$1"; }
wait_for() { wait_until "screen lacks '$1'" has "$1"; }
keys() { tmux send-keys -t $S "$@"; sleep 0.3; }
logged() { [[ -s $1/metrics.jsonl ]] && (( $(wc -l < "$1/metrics.jsonl") >= $2 )); }
last_logged() { tail -1 "$1/metrics.jsonl" | python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["step"])'; }
# the steps view lists the newest step first: the step of the first row under the header
top_step() { screen | awk '/^ *step [v^] +time/ { getline; print $1; exit }'; }
close_to_logged() {   # the screen first, then the log: the log can only have grown meanwhile
  local t m
  t=$(top_step); m=$(last_logged "$1")
  [[ $t =~ ^[0-9]+$ && $m =~ ^[0-9]+$ ]] && (( t >= m - 2 ))
}

# --- a run that ends ----------------------------------------------------------------------
# The run must still be going while each live check runs, however fast or slow the machine: its
# ranks are held (SIGSTOP) between the checks and let go (SIGCONT) only while a check needs the run
# to move, so the checks use up only a few of its steps wherever they run.
"${MPI[@]}" -np 2 "$ASCENT" "${TRAIN[@]}" --steps 200 --out ra >ra.log 2>&1 &
A=$!
PIDS+=($A)
wait_until "run A logged no step (see ra.log)" logged ra 2
rank_pid() { python3 -c 'import sqlite3, sys; print(sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True).execute("SELECT pid FROM rank").fetchone()[0])' "$1"; }
RA=()
for r in 0 1; do
  p=$(rank_pid ra/rank-0000$r.db 2>/dev/null)
  [[ $p =~ ^[0-9]+$ ]] || fail "no pid in run A's rank $r file"
  RA+=("$p")
done
hold() { kill -STOP "${RA[@]}" || fail "run A ended while the live checks ran"; }
go() { kill -CONT "${RA[@]}" 2>/dev/null; }
PIDS+=("${RA[@]}")
hold
# metrics.jsonl can name a step before the profiler's writer thread has drained its events into the
# rank file (it drains on a tick or when a ring fills), so the dump is asked again until a step row
# is there; each dump must be the live state
dump_row() {
  "$ASCENT" view ra --dump steps --size 120x30 >dump.txt 2>dump.err || { cat dump.err; fail "--dump steps on a running folder"; }
  grep -q "LIVE  step" dump.txt || { cat dump.txt; fail "--dump steps: not the live state"; }
  grep -Eq "^ +[0-9]+ +[0-9.]+ (ms|s) " dump.txt
}
go
wait_until "--dump steps: no step row while the run goes" dump_row
hold
tmux -f /dev/null new-session -d -s $S -x 130 -y 40 "TERM=xterm-256color '$ASCENT' view ra --view steps; echo VIEWER-EXIT=\$?; sleep 600"
wait_for "LIVE  step"
go
wait_until "the steps view is more than 2 steps behind metrics.jsonl" close_to_logged ra
hold
first=$(top_step)
[[ $first =~ ^[0-9]+$ ]] || fail "no step row in the live steps view"
grows() { local t; t=$(top_step); [[ $t =~ ^[0-9]+$ ]] && (( t > first )); }
go
wait_until "the steps view did not grow with no key pressed (from step $first)" grows
wait_until "the steps view fell behind metrics.jsonl" close_to_logged ra
hold
has "LIVE" || fail "the run ended during the live checks: they cannot tell the live state from the merged one"
go
wait "$A" || { tail -20 ra.log; fail "run A failed"; }
wait_for "the run ended: showing its merged profile"
has "LIVE" && fail "still live after the run ended"
has "ra/trace.db" || fail "the title does not name ra/trace.db"
keys 7;  wait_for "r0 t0"
keys q;  wait_for "VIEWER-EXIT=0"
tmux kill-session -t $S

# --- a run whose rank 1 is killed ---------------------------------------------------------
"${MPI[@]}" -np 2 "$ASCENT" "${TRAIN[@]}" --steps 3000 --out rb >rb.log 2>&1 &
B=$!
PIDS+=($B)
wait_until "run B logged no step (see rb.log)" logged rb 2
tmux -f /dev/null new-session -d -s $S -x 130 -y 40 "TERM=xterm '$ASCENT' view rb -C; echo VIEWER-EXIT=\$?; sleep 600"
wait_for "LIVE  step"
wait_for "rank 1    running"
pid1=$(python3 -c 'import sqlite3; print(sqlite3.connect("file:rb/rank-00001.db?mode=ro", uri=True).execute("SELECT pid FROM rank").fetchone()[0])')
[[ $pid1 =~ ^[0-9]+$ ]] || fail "no pid in rank 1's file"
kill -9 "$pid1"
wait_for "rank 1 DIED (pid $pid1"
wait_for "rank 1    DIED"
# the viewer goes on: keys still answer, the tables still show what the run recorded
keys 2;  wait_for "matmul"
step_row() { [[ $(top_step) =~ ^[0-9]+$ ]]; }
keys 4;  wait_until "no step row after the kill" step_row
keys q;  wait_for "VIEWER-EXIT=0"
wait "$B" 2>/dev/null
echo ok
