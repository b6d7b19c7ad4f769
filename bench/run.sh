#!/usr/bin/env bash
# bench/run.sh BUILD BIN — run every benchmark program in $BUILD/bench/ (each prints JSON lines,
# passed through unchanged). bench_nn runs in parts: the FMA peak, the GEMM table and the attention
# kernels (fp32 and bf16) once, then the
# training step preset by preset, each followed at once by bench/pytorch_gpt.py on the same preset
# when /usr/bin/python3 can import torch (a like-for-like baseline; MFU against the peak bench_nn
# measured in this run), in fp32 and in bf16 (torch.autocast against ascent's bf16 GEMMs), twice
# over, so ascent and PyTorch alternate under the same host load; a "train_step_ratio" line per
# precision after each pair (wall tokens/s, and tokens per CPU-second, which a shared host disturbs
# less). Then the attention memory figure: gpt2-124m at T=256 and
# T=1024 with the same 2048 tokens per step, one process each (peak RSS is per process).
# PyTorch runs with OMP_WAIT_POLICY=passive, as ascent does (it restarts itself so): its threads then
# use CPU only while working, and tokens_per_cpu_s compares the work of both on a shared host.
# Then the whole device analysis of a Kineto trace against Holistic Trace Analysis (bench/hta_compare.py:
# ascent's import + report --by device + advise against HTA's load and its device analyses, then
# with report --by opkernels against HTA's operators' kernels, same files, alternating; HTA found on
# PYTHONPATH or in $ASCENT_BENCH_HTA, else one "skipped" line).
# bench_quant runs twice: as the CPU allows (AMX-INT8 where present) and under
# ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI (our VNNI kernel), so its INT8 speed-ups over fp32 come with
# and without AMX; its lines name the kernel that ran ("int8_impl", read back from oneDNN).
# Benchmarks never fail the build on speed; a program that exits non-zero is reported as a JSON line.
#
# PyTorch is not in scripts/deps.sh (about 1 GB). To get the baseline:
#     apt-get install -y python3-torch
set -u
BUILD=${1:-build}
BIN=${2:-bin}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
# bench_pmpi runs programs under `ascent profile`
export ASCENT_BIN="$ROOT/$BIN/ascent"
[[ "$BIN" = /* ]] && ASCENT_BIN="$BIN/ascent"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
THREADS=${ASCENT_BENCH_THREADS:-2}

# The instruction sets the numbers were measured with, added to every JSON line: oneDNN's dispatch
# (ONEDNN_MAX_CPU_ISA caps it; the cap in force, "" for none), the CPU's extensions and the OpenBLAS
# core (`ascent diag versions`, run under the same environment as the benchmark).
# isa_fields [VAR=VALUE...]: those fields under that environment
isa_fields() {
  local f
  f=$(env "$@" "$ASCENT_BIN" diag versions --json 2>/dev/null | python3 -c '
import json, os, sys
try:
    v = {r["name"]: r["version"] for r in json.load(sys.stdin)["versions"]}
except (ValueError, KeyError):
    v = {}
print("\"onednn_isa\":\"%s\",\"cpu_isa\":\"%s\",\"openblas_core\":\"%s\"" % tuple(
    v.get(k, "unknown") for k in ("onednn_isa", "cpu_isa", "openblas_core")))')
  [[ -n $f ]] || f='"onednn_isa":"unknown"'
  local cap=
  for a in "$@"; do [[ $a = ONEDNN_MAX_CPU_ISA=* ]] && cap=${a#ONEDNN_MAX_CPU_ISA=}; done
  echo "$f,\"onednn_isa_cap\":\"${cap:-${ONEDNN_MAX_CPU_ISA:-}}\""
}
isa=$(isa_fields)
with_isa() { sed -u "s/^\({.*\)}\$/\1,${isa}}/"; }

# run NAME CMD...: pass its lines through (and into $out), each with the ISA fields; a failure
# becomes a JSON line
run() {
  local name=$1
  shift
  "$@" | with_isa | tee -a "$out"
  local s=${PIPESTATUS[0]}
  if [[ $s -ne 0 ]]; then
    echo "{\"bench\":\"$name\",\"error\":\"exited with status $s\"}" | with_isa
    rc=1
  fi
}

# the last train_step line of impl $1, preset $2, precision $4 (default fp32) in $out: its field $3
field() {
  python3 -c '
import json, sys
v = None
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("bench") == "train_step" and d.get("impl") == sys.argv[2] and d.get("preset") == sys.argv[3] \
            and d.get("precision", "fp32") == sys.argv[5] and sys.argv[4] in d:
        v = d[sys.argv[4]]
print(v if v is not None else "")' "$out" "$1" "$2" "$3" "${4:-fp32}"
}

for b in "$BUILD"/bench/*; do
  [[ -f $b && -x $b ]] || continue
  name=$(basename "$b")
  [[ $name = bench_nn ]] && continue
  run "$name" "$b"
  # bench_quant again with oneDNN capped below AMX (it reads the cap at start-up, so a second
  # process): the INT8 speed-up over fp32 without AMX, each line's fields naming the ISA that ran
  if [[ $name = bench_quant && -z ${ONEDNN_MAX_CPU_ISA:-} ]]; then
    keep_isa=$isa
    isa=$(isa_fields ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI)
    run "$name" env ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI "$b"
    isa=$keep_isa
    # one line per scheme: the eval speed-up over fp32 with AMX and without, from the two runs
    python3 -c '
import json, sys
ev = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("bench") == "eval" and "speedup" in d:
        ev[(d["scheme"], d.get("onednn_isa_cap", ""))] = d
for sc in sorted({k[0] for k in ev}):
    a, v = ev.get((sc, "")), ev.get((sc, "AVX512_CORE_VNNI"))
    if a and v:
        print(json.dumps({"bench": "quant_eval_isa", "scheme": sc, "speedup_default": a["speedup"],
                          "int8_impl_default": a["int8_impl"], "speedup_capped": v["speedup"],
                          "int8_impl_capped": v["int8_impl"], "cap": "AVX512_CORE_VNNI",
                          "int8_default_over_capped": round(a["int8_tokens_per_s"] / v["int8_tokens_per_s"], 3)},
                         separators=(",", ":")))' "$out" | tee -a "$out"
  fi
done

NN="$BUILD/bench/bench_nn"
run bench_nn "$NN" --threads "$THREADS" --preset none
peak=$(sed -n 's/.*"bench":"fma_peak".*"peak_gflops":\([0-9.]*\).*/\1/p' "$out" | tail -1)
torch=0
if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  torch=1
else
  echo '{"bench":"train_step","impl":"pytorch","skipped":"python3 cannot import torch; install it with: apt-get install -y python3-torch"}'
fi
for rep in 1 2; do
  for p in tiny small gpt2-124m; do
    steps=6 warm=2
    [[ $p = gpt2-124m ]] && steps=3 warm=1
    run bench_nn "$NN" --threads "$THREADS" --preset "$p" --steps $steps --warmup $warm --no-gemm --no-peak \
        --no-attention --peak "${peak:-0}" --precision fp32,bf16
    if [[ $torch = 1 ]]; then
      for prec in fp32 bf16; do
        OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} run pytorch_gpt /usr/bin/python3 "$ROOT/bench/pytorch_gpt.py" \
            --threads "$THREADS" --peak "${peak:-0}" --preset "$p" --steps $steps --warmup $warm --precision $prec
        a=$(field ascent "$p" tokens_per_s $prec) t=$(field pytorch "$p" tokens_per_s $prec)
        ac=$(field ascent "$p" tokens_per_cpu_s $prec) tc=$(field pytorch "$p" tokens_per_cpu_s $prec)
        if [[ -n $a && -n $t && -n $ac && -n $tc ]]; then
          python3 -c 'import sys; p, pr, r = sys.argv[1:4]; a, t, ac, tc = map(float, sys.argv[4:]); print("{\"bench\":\"train_step_ratio\",\"preset\":\"%s\",\"precision\":\"%s\",\"rep\":%s,\"ascent_tokens_per_s\":%.1f,\"pytorch_tokens_per_s\":%.1f,\"ascent_over_pytorch\":%.3f,\"ascent_over_pytorch_cpu\":%.3f}" % (p, pr, r, a, t, a / t, ac / tc))' "$p" "$prec" "$rep" "$a" "$t" "$ac" "$tc" | with_isa
        fi
      done
    fi
  done
done
for T in 256 1024; do
  run bench_nn "$NN" --threads "$THREADS" --preset gpt2-124m --batch $((2048 / T)) --seq $T --steps 1 --warmup 1 \
      --no-gemm --no-attention --no-peak --peak "${peak:-0}" --precision fp32
done
run hta_compare python3 "$ROOT/bench/hta_compare.py" "$ASCENT_BIN"
exit $rc
