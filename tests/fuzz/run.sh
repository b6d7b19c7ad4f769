#!/usr/bin/env bash
# tests/fuzz/run.sh FUZZ_BUILD SECONDS [test|explore] [TARGET...] — run the libFuzzer targets built
# into FUZZ_BUILD/bin (one per tests/fuzz/<target>.c).
#   test     (make test) replay every input of tests/fuzz/corpus/<target>/ once, then fuzz SECONDS;
#            new inputs go to a temporary folder, so the committed corpus never changes.
#   explore  (make fuzz) fuzz SECONDS per target, keeping new inputs in FUZZ_BUILD/new/<target>/
#            (copy the small interesting ones into the corpus by hand).
# A crash, leak, timeout or sanitizer report fails the target; its input is kept as
# FUZZ_BUILD/crashes/<target>/crash-* and printed as hex. Prints one line per target:
#   "ok   fuzz_<target>: N runs (replayed M)" or "FAIL fuzz_<target> ...", and exits 1 on any failure.
set -u
FB=${1:?usage: run.sh FUZZ_BUILD SECONDS [test|explore] [TARGET...]}
SECS=${2:-10}
MODE=${3:-test}
shift 3 2>/dev/null || shift $#
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=$ROOT/tests/fuzz/corpus
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for s in "$ROOT"/tests/fuzz/*.c; do targets+=("$(basename "$s" .c)"); done
fi
# ASan's leak check is on (a leak on an error path is a bug too); UBSan stops at the first report.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:print_stacktrace=1:halt_on_error=1"
bad=0
for t in "${targets[@]}"; do
  bin=$FB/bin/$t
  if [[ ! -x $bin ]]; then echo "FAIL fuzz_$t: $bin is not built (make $bin)"; bad=1; continue; fi
  seeds=$CORPUS/$t
  [[ -d $seeds ]] || { echo "FAIL fuzz_$t: no seed corpus $seeds"; bad=1; continue; }
  crashes=$FB/crashes/$t
  mkdir -p "$crashes"
  if [[ $MODE == explore ]]; then new=$FB/new/$t; mkdir -p "$new"; else new=$(mktemp -d); fi
  log=$(mktemp)
  nseed=$(find "$seeds" -type f | wc -l)
  # -timeout: one input taking 20 s is a hang; -rss_limit_mb: the readers must stay small
  "$bin" "$new" "$seeds" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ $rc -ne 0 ]]; then
    bad=1
    echo "FAIL fuzz_$t (exit $rc after ${runs:-?} runs)"
    grep -E "ERROR|SUMMARY|runtime error|#[0-9]+ 0x" "$log" | head -30
    for c in $(ls -t "$crashes" 2>/dev/null | head -1); do
      echo "input: $crashes/$c ($(stat -c %s "$crashes/$c") bytes)"; od -A x -t x1z -v "$crashes/$c" | head -20
    done
  else
    echo "ok   fuzz_$t: ${runs:-?} runs in ${SECS}s (replayed $nseed seeds)"
  fi
  [[ $MODE == explore ]] || rm -rf "$new"
  rm -f "$log"
done
exit $bad
