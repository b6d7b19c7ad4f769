#!/usr/bin/env bash
# tests/integration/prof_kill9.sh — a program recording events in a loop is killed with -9; its
# rank database must open, hold what was flushed up to about a second before the kill, merge with
# `ascent merge`, and report.
set -u
EX="$ASCENT_BUILD/samples/hooks_example"
if [[ ! -x $EX ]]; then echo "samples/hooks_example is not built ($EX)"; exit 77; fi
"$EX" run 0 --forever >out.txt 2>err.txt &
pid=$!
for _ in $(seq 1 600); do grep -q recording out.txt && break; sleep 0.1; done
if ! grep -q recording out.txt; then kill -9 $pid; cat err.txt; echo "the example never started recording"; exit 1; fi
sleep 1.5
kill -9 $pid
wait $pid 2>/dev/null
[[ -f run/rank-00000.db ]] || { echo "no rank database left"; exit 1; }
"$ASCENT" merge run || { echo "merge failed"; exit 1; }
[[ -f run/trace.db ]] || { echo "no trace.db"; exit 1; }
[[ ! -f run/rank-00000.db ]] || { echo "parts were not removed"; exit 1; }
"$ASCENT" report run/trace.db >report.txt || { echo "report failed"; exit 1; }
grep -q "matmul" report.txt || { cat report.txt; echo "no matmul in the report"; exit 1; }
"$ASCENT" report run/trace.db --format json >r.json || exit 1
# the last step kept must end at least 0.3 s after the start: at most ~1.2 s before the kill
last=$(awk -F'[:,]' '/"start_ns"/ {s=$2} /"total_ns"/ && s!="" {e=s+$2; if (e>m) m=e; s=""} END {printf "%.0f", m}' r.json)
echo "last step ends at ${last} ns after the profiler started; killed at about 1.5 s"
[[ ${last:-0} -ge 300000000 ]] || { echo "data older than ~1.2 s before the kill is missing"; exit 1; }
"$ASCENT" export run/trace.db -o trace.json || exit 1
[[ -s trace.json ]] || exit 1
echo ok
