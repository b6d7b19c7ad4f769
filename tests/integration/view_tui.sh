#!/usr/bin/env bash
# tests/integration/view_tui.sh — drive the real TUI of `ascent view` in a tmux pseudo-terminal
# (120x40): switch views with digits and Tab, sort, filter, drill down to an operator's instances
# and to the timeline, zoom, open the help, resize to 80x24, and quit with q and with Ctrl-C;
# check the screen after each step, and that the terminal is restored.
# Every check polls the screen until it holds (up to 60 s): a loaded CI host may take seconds to
# start the viewer or to redraw after a key; no check depends on how long that takes.
set -u
command -v tmux >/dev/null || { echo "skip: tmux is not installed"; exit 77; }
T="$ASCENT_BUILD/tests/test_viewer"
[[ -x $T ]] || { echo "skip: $T is not built (make all-tests)"; exit 77; }
ASCENT_VIEW_FIXTURE=$PWD/fix.db "$T" --filter 'viewer/fixture_write' >/dev/null 2>&1
[[ -s fix.db ]] || { echo "FAIL: no fixture"; exit 1; }
S=ascent-view-test-$$
export TMUX_TMPDIR=$PWD
cleanup() { tmux kill-server 2>/dev/null; }
trap cleanup EXIT
tmux -f /dev/null new-session -d -s $S -x 120 -y 40 "TERM=xterm-256color '$ASCENT' view fix.db; echo VIEWER-EXIT=\$?; sleep 600"
screen() { tmux capture-pane -p -t $S; }
wait_until() {   # wait_until WHAT CMD... — until CMD succeeds, up to 60 s
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  echo "FAIL: $what:"; screen; exit 1
}
has() { screen | grep -qF -- "$1"; }
wait_for() { wait_until "screen lacks '$1'" has "$1"; }   # wait_for TEXT
line4_gelu() { screen | sed -n 4p | grep -q "^gelu"; }
filtered() { local s; s=$(screen); grep -qF "/ge_" <<<"$s" && grep -q "^gelu" <<<"$s" && ! grep -q "^matmul" <<<"$s"; }
ops_row() { screen | grep -Eq "^matmul +8 +1\.40 us"; }
bar_last() { screen | tail -1 | grep -q "help"; }
keys() { tmux send-keys -t $S "$@"; sleep 0.3; }
wait_for "1 overview"
wait_for "ascent train --dp 2"
keys 2;            wait_for "matmul"
wait_until "ops row" ops_row
keys r;            wait_until "r did not reverse" line4_gelu
keys r
keys / g e;        wait_for "/ge_"
wait_until "filter kept matmul or lost gelu" filtered
keys Escape;       wait_for "matmul"
keys Enter;        wait_for "8 instances of op 'matmul'"
wait_for "ops > matmul"
keys Enter;        wait_for "window +"
wait_for "ops > matmul #1 > timeline"
keys BSpace;       wait_for "8 instances"
keys 7;            wait_for "r0 t0 main"
keys w;            wait_for "1.05 us wide"
keys 0;            wait_for "2.10 us wide"
keys '?';          wait_for "keys (any key closes)"
keys Space
keys Tab;          wait_for "no device lanes"
keys Tab;          wait_for "per-step split"
tmux resize-window -t $S -x 80 -y 24 2>/dev/null || tmux resize-pane -t $S -x 80 -y 24
sleep 0.5
keys 3;            wait_for "allreduce"
wait_until "no key bar at 80x24" bar_last
keys q;            wait_for "VIEWER-EXIT=0"
# Ctrl-C quits cleanly too, and the terminal is usable afterwards
tmux kill-session -t $S
tmux -f /dev/null new-session -d -s $S -x 100 -y 30 "TERM=xterm '$ASCENT' view fix.db -C; echo VIEWER-EXIT=\$?; stty -a | grep -q ' echo ' && echo TTY-ECHO-ON; sleep 600"
wait_for "1 overview"
keys 5;            wait_for "r1 *"
keys C-c;          wait_for "VIEWER-EXIT="
wait_for "TTY-ECHO-ON"
echo ok
