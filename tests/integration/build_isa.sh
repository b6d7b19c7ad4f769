#!/usr/bin/env bash
# tests/integration/build_isa.sh — the tree builds (-Werror) for CPUs other than this one: the code
# picks its kernels by what the compiler targets (-march=native, the Makefile's ARCH), so a kernel
# left outside its guard breaks the build only on a machine that lacks the instructions — which the
# build machine may never be. Built here at -O0 (the checks are the compiler's, not the speed) for
# x86-64-v3 (AVX2, no AVX-512: the INT8 VNNI kernel once failed there) and icelake-server (AVX-512
# with VNNI, no BF16, no AMX: the bf16 attention's tile path once left an unused parameter there).
set -euo pipefail
for arch in x86-64-v3 icelake-server; do
  if ! make -C "$ASCENT_ROOT" -j2 ARCH="-march=$arch" OPT=-O0 BUILD="$PWD/$arch" BIN="$PWD/$arch/bin" all \
      >"$arch.log" 2>&1; then
    grep -E "error:|Error [0-9]" "$arch.log" | head -20
    echo "FAIL: the tree does not build with -march=$arch (the lines above)"
    exit 1
  fi
  [[ -x $arch/bin/ascent ]] || { echo "FAIL: no binary for -march=$arch"; exit 1; }
  echo "builds with -march=$arch"
done
