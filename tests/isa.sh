#!/usr/bin/env bash
# tests/isa.sh BUILD BIN — `make test-isa`: the numerics tests (every kernel against its reference,
# every parallel layout against one process, bf16/fp16 against fp32, INT8 against fp32) once per
# instruction set oneDNN and OpenBLAS may pick on the machines ascent runs on, so that a tolerance
# that holds only for this CPU's rounding fails here rather than on a user's machine:
#   default                        oneDNN's best for this CPU (AMX or AVX-512 FP16 where present;
#                                  quant's INT8 GEMM on AMX-INT8 there)
#   ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16, AVX512_CORE, AVX2   capped (a cap above the CPU's best is the best;
#                                  quant's INT8 GEMM: the VNNI kernel, then the fp32 path for the last two)
#   OPENBLAS_CORETYPE=Haswell      OpenBLAS's AVX2 kernels (the default GEMM is oneDNN's; OpenBLAS
#                                  serves the reference paths and the OpenBLAS backend)
# Each configuration prints `ascent diag versions`' ISA rows and tests/run.sh's lines; the closing line
# sums them all: "N passed, N failed, N skipped".
set -u
BUILD=${1:-build}
BIN=${2:-bin}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ascent="$ROOT/$BIN/ascent"
[[ "$BIN" = /* ]] && ascent="$BIN/ascent"
# ASCENT_TESTS set by the caller narrows the list (e.g. ASCENT_TESTS="test_quant quant_qat")
export ASCENT_TESTS=${ASCENT_TESTS:-"test_nn_fakequant test_nn_kernels test_nn_kldiv test_nn_model test_nn_precision test_nn_stage
  test_quant test_quant_model test_quant_qat test_trainer_model test_trainer_pp
  dist_dp dist_tp_pp dist_precision dist_ckpt nn_tp quant_ptq quant_qat quant_cli train_resume_exact
  train_hf_reference train_run"}
ASCENT_TESTS=$(tr '\n' ' ' <<<"$ASCENT_TESTS")
configs=("default" "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16" "ONEDNN_MAX_CPU_ISA=AVX512_CORE"
         "ONEDNN_MAX_CPU_ISA=AVX2" "OPENBLAS_CORETYPE=Haswell")
pass=0 fail=0 skip=0
failed=()
for c in "${configs[@]}"; do
  env=()
  [[ $c = default ]] || env=("$c")
  echo "== $c: $(env "${env[@]}" "$ascent" diag versions 2>/dev/null | grep -E '^ *(onednn_isa|cpu_isa|openblas_core) ' | tr -s ' ' | tr '\n' ';')"
  out=$(env "${env[@]}" bash "$ROOT/tests/run.sh" "$BUILD" "$BIN" unit 2>&1; env "${env[@]}" bash "$ROOT/tests/run.sh" "$BUILD" "$BIN" integration 2>&1)
  grep -v '^[0-9]* passed, ' <<<"$out" | grep -v '^failed: '
  while read -r p f s; do
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  done < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' <<<"$out")
  for n in $(sed -n 's/^failed: //p' <<<"$out"); do failed+=("$c:$n"); done
done
[[ ${#failed[@]} -gt 0 ]] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
