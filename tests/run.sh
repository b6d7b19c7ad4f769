#!/usr/bin/env bash
# tests/run.sh BUILD BIN [unit|integration|fuzz] — run the Criterion unit binaries, the integration
# scripts and the fuzz targets (tests/fuzz/run.sh), then print the closing line "N passed, N failed, N skipped".
# An integration script passes with exit 0, is skipped with exit 77 (it prints why), fails otherwise.
# ASCENT_TESTS="test_nn_kernels dist_dp fuzz_wal ...": run only the unit binaries, scripts and fuzz
# targets named there (tests/isa.sh uses it); the others are not run and not counted.
set -u
BUILD=${1:-build}
BIN=${2:-bin}
WHAT=${3:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ASCENT="$ROOT/$BIN/ascent"
[[ "$BIN" = /* ]] && export ASCENT="$BIN/ascent"
export ASCENT_BUILD="$BUILD"
[[ "$BUILD" = /* ]] || export ASCENT_BUILD="$ROOT/$BUILD"
export ASCENT_ROOT="$ROOT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export NO_COLOR=1
pass=0 fail=0 skip=0
# selected NAME: whether ASCENT_TESTS (unset: everything) names this unit binary or script
selected() { [[ -z ${ASCENT_TESTS:-} || " $ASCENT_TESTS " == *" $1 "* ]]; }
failed=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

if [[ $WHAT == all || $WHAT == unit ]]; then
  for t in "$ASCENT_BUILD"/tests/test_*; do
    [[ -x $t ]] || continue
    name=$(basename "$t")
    selected "$name" || continue
    start=$(date +%s)
    "$t" --jobs 2 >"$log/$name" 2>&1
    rc=$?
    syn=$(grep -a 'Synthesis:' "$log/$name" | tail -1)
    p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn"); p=${p:-0}
    f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn"); f=${f:-0}
    c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$syn"); c=${c:-0}
    pass=$((pass + p)); fail=$((fail + f))
    if [[ $rc -ne 0 || $f -ne 0 || -z $syn ]]; then
      [[ $f -eq 0 ]] && fail=$((fail + 1))
      failed+=("$name")
      echo "FAIL $name ($(( $(date +%s) - start ))s)"; cat "$log/$name" | tail -40
    else
      echo "ok   $name: $p tests ($(( $(date +%s) - start ))s)"
    fi
  done
fi

if [[ $WHAT == all || $WHAT == integration ]]; then
  # make check: the integration scripts start MPI, whose libraries (and dlopen'ed components) never
  # free their memory at MPI_Finalize; LeakSanitizer stays on for the unit tests, ASan and UBSan
  # stay on everywhere.
  [[ ${ASCENT_SANITIZED:-0} = 1 ]] && export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
  for s in "$ROOT"/tests/integration/*.sh; do
    [[ -f $s ]] || continue
    name=$(basename "$s" .sh)
    selected "$name" || continue
    start=$(date +%s)
    work=$(mktemp -d)
    (cd "$work" && timeout 600 bash "$s") >"$log/$name" 2>&1
    rc=$?
    rm -rf "$work"
    el=$(( $(date +%s) - start ))
    if [[ $rc -eq 0 ]]; then
      pass=$((pass + 1)); echo "ok   $name (${el}s)"
    elif [[ $rc -eq 77 ]]; then
      skip=$((skip + 1)); echo "skip $name: $(tail -1 "$log/$name")"
    else
      fail=$((fail + 1)); failed+=("$name"); echo "FAIL $name (exit $rc, ${el}s)"; tail -40 "$log/$name"
    fi
  done
fi

# libFuzzer targets (tests/fuzz): each replays its corpus, then fuzzes 10 s. They are built with
# clang into BUILD/fuzz by `make test` only (make check leaves them out: they carry ASan/UBSan).
if [[ $WHAT == all || $WHAT == fuzz ]]; then
  if [[ -d $ASCENT_BUILD/fuzz/bin ]]; then
    for s in "$ROOT"/tests/fuzz/*.c; do
      [[ -f $s ]] || continue
      t=$(basename "$s" .c)
      selected "fuzz_$t" || continue
      start=$(date +%s)
      out=$(bash "$ROOT/tests/fuzz/run.sh" "$ASCENT_BUILD/fuzz" "${ASCENT_FUZZ_TEST_S:-10}" test "$t" 2>&1)
      rc=$?
      if [[ $rc -eq 0 ]]; then
        pass=$((pass + 1)); echo "$out ($(( $(date +%s) - start ))s)"
      else
        fail=$((fail + 1)); failed+=("fuzz_$t"); echo "$out"
      fi
    done
  else
    echo "skip fuzz: no targets built in $ASCENT_BUILD/fuzz (make test builds them with clang)"
    skip=$((skip + 1))
  fi
fi

[[ ${#failed[@]} -gt 0 ]] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
