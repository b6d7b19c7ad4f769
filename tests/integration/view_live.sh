#!/usr/bin/env bash
# tests/integration/view_live.sh — `ascent view RUN_DIR` on a real 2-rank profiled run while it
# trains (mpirun -np 2 ascent train --dp 2 --preset tiny --profile), the TUI driven in tmux:
#  - `--dump steps` on the running folder prints the live state once;
#  - the steps view (newest first) shows a step within 2 of the last one metrics.jsonl logged, and
#    grows with no key pressed (the once-a-second refresh), on a run too long to end meanwhile;
#  - a short run watched from its first step (its ranks held until the viewer shows it live): when
#    it ends the viewer switches to the merged trace.db (the timeline answers);
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
fail() { echo "FAIL: $*"; screen 2>/dev/null; echo "FAIL: $*"; exit 1; }   # the message after the screen too: run.sh keeps the tail
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

rank_pid() { python3 -c 'import sqlite3, sys; print(sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True).execute("SELECT pid FROM rank").fetchone()[0])' "$1"; }
rank_pids() {   # rank_pids DIR — the two ranks' pids, from their rank files
  local r p out=()
  for r in 0 1; do
    p=$(rank_pid "$1/rank-0000$r.db" 2>/dev/null)
    [[ $p =~ ^[0-9]+$ ]] || fail "no pid in $1's rank $r file"
    out+=("$p")
  done
  echo "${out[@]}"
}

# --- a run watched while it goes ----------------------------------------------------------
# Long enough that no machine finishes it during the checks; stopped when they are done.
"${MPI[@]}" -np 2 "$ASCENT" "${TRAIN[@]}" --steps 100000 --out ra >ra.log 2>&1 &
A=$!
PIDS+=($A)
wait_until "run A logged no step (see ra.log)" logged ra 2
read -r -a RA <<<"$(rank_pids ra)"
(( ${#RA[@]} == 2 )) || fail "no pids in run A's rank files"
PIDS+=("${RA[@]}")
# metrics.jsonl can name a step before the profiler's writer thread has drained its events into the
# rank file (it drains on a tick or when a ring fills), so the dump is asked again until a step row
# is there; each dump must be the live state
dump_row() {
  "$ASCENT" view ra --dump steps --size 120x30 >dump.txt 2>dump.err || { cat dump.err; fail "--dump steps on a running folder"; }
  grep -q "LIVE  step" dump.txt || { cat dump.txt; fail "--dump steps: not the live state"; }
  grep -Eq "^ +[0-9]+ +[0-9.]+ (ms|s) " dump.txt
}
wait_until "--dump steps: no step row while the run goes" dump_row
tmux -f /dev/null new-session -d -s $S -x 130 -y 40 "TERM=xterm-256color '$ASCENT' view ra --view steps; echo VIEWER-EXIT=\$?; sleep 600"
wait_for "LIVE  step"
wait_until "the steps view is more than 2 steps behind metrics.jsonl" close_to_logged ra
first=$(top_step)
[[ $first =~ ^[0-9]+$ ]] || fail "no step row in the live steps view"
grows() { local t; t=$(top_step); [[ $t =~ ^[0-9]+$ ]] && (( t > first )); }
wait_until "the steps view did not grow with no key pressed (from step $first)" grows
wait_until "the steps view fell behind metrics.jsonl" close_to_logged ra
has "LIVE" || fail "not the live state while run A goes"
keys q;  wait_for "VIEWER-EXIT=0"
tmux kill-session -t $S
kill -9 "${RA[@]}" 2>/dev/null
wait "$A" 2>/dev/null

# --- a run that ends while watched --------------------------------------------------------
# Its ranks are held (SIGSTOP) from its first logged step until the viewer shows it live, then let
# go: the switch to trace.db is seen however fast the machine runs the 40 steps.
"${MPI[@]}" -np 2 "$ASCENT" "${TRAIN[@]}" --steps 40 --out rc >rc.log 2>&1 &
C=$!
PIDS+=($C)
wait_until "run C logged no step (see rc.log)" logged rc 1
read -r -a RC <<<"$(rank_pids rc)"
(( ${#RC[@]} == 2 )) || fail "no pids in run C's rank files"
PIDS+=("${RC[@]}")
kill -STOP "${RC[@]}" || fail "run C ended before it could be held"
tmux -f /dev/null new-session -d -s $S -x 130 -y 40 "TERM=xterm-256color '$ASCENT' view rc --view steps; echo VIEWER-EXIT=\$?; sleep 600"
wait_for "LIVE  step"
kill -CONT "${RC[@]}"
wait "$C" || { tail -20 rc.log; fail "run C failed"; }
wait_for "the run ended: showing its merged profile"
has "LIVE" && fail "still live after the run ended"
has "rc/trace.db" || fail "the title does not name rc/trace.db"
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
