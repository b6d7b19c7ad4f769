#!/usr/bin/env bash
# runtime_kineto.sh — `ascent report --by runtime` (docs/device.md) on the real Kineto traces of
# tests/fixtures/kineto, held to
# 1. an independent computation from the trace JSON (below, in Python): the events of the runtime
#    categories (cuda_runtime, cuda_driver, Runtime, mtia_runtime) per name, count, total and
#    nearest-rank p95 of their durations, and whether they block the host by their names
#    (Synchronize; a Memcpy call without Async) and, for an asynchronous call, by the name of the
#    device copy with the same `correlation` ("Pageable"). ascent finds the calls by name and launch
#    link instead of category; the one difference is MTIA's graph-executor ranges (gif_merge,
#    gif_remote, predictor_executor::run), which are no runtime API call: ascent counts only those
#    that start a launch link.
# 2. Holistic Trace Analysis (github facebookresearch/HolisticTraceAnalysis at commit
#    f4d0062c382f42bd8a74838bcdad1916c7d5d2da, HTA_DISABLE_NS_ROUNDING=1): per name the count and
#    summed duration (us) of the cuda_runtime/cuda_driver events of the trace HTA parses (which ends
#    at the start of the last ProfilerStep: ascent's --steps up to the step before it), and the rows
#    and summed cpu_duration (us) of get_cuda_kernel_launch_stats (calls cudaLaunchKernel(ExC),
#    cudaMemcpyAsync, cudaMemsetAsync with their device work), against ascent's `launches` and
#    totals of those names. Recorded below, HTA does not run here.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }

B="critical_path__alexnet__benchmark_result_2869224_1695835535_trace nccl_parser_config__nccl_data
   amd_trace__mi250_minitoy_train_ROCm6_2_kineto triton_example__triton_example trace_filter__sampled_rank-0
   trace_filter__sampled_rank-1 mtia_inference_trace__mtia_inference_rank_0
   tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005 kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace
   tracelens_b200_eager_trace cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace tracelens_torch_compile_triton_trace"
for b in $B; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --by runtime --format json >"$b.json" || fail "report --by runtime --format json on $b"
done
"$ASCENT" report nccl_parser_config__nccl_data.db --by runtime --steps 4:5 --format json >nccl45.json
"$ASCENT" report trace_filter__sampled_rank-0.db --by runtime --steps 551:551 --format json >sampled551.json

b=critical_path__alexnet__benchmark_result_2869224_1695835535_trace
"$ASCENT" report "$b.db" --by runtime >"$b.txt" || fail "report --by runtime (table)"
grep -q "Blocks host" "$b.txt" || fail "table has no blocking column: $(cat "$b.txt")"
grep -q "copy with pageable memory  cudaMemcpyAsync" "$b.txt" || fail "pageable copies not marked: $(cat "$b.txt")"
"$ASCENT" report "$b.db" --by runtime --format csv >"$b.csv" || fail "report --by runtime --format csv"
[[ $(head -1 "$b.csv") == "Total,Count,Mean,p95,Max,Launches,Blocks host,Name" ]] || fail "csv header: $(head -1 "$b.csv")"
[[ $(wc -l <"$b.csv") -eq 23 ]] || fail "csv: 22 rows expected: $(cat "$b.csv")"

python3 - "$F" $B <<'PY' || fail "report --by runtime differs from the trace or from HTA"
import gzip, json, math, sys

F, names = sys.argv[1], sys.argv[2:]
RT_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime"}

def reference(path):
    d = json.load(gzip.open(path))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    copies = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("gpu_memcpy", "Memcpy"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                copies[c] = e["name"]
    calls = {}
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in RT_CATS:
            continue
        n = e["name"]
        if "ynchronize" in n:
            why = "synchronisation"
        elif "Async" not in n and n.startswith(("cudaMemcpy", "hipMemcpy", "cuMemcpy")):
            why = "synchronous copy"
        elif "Pageable" in copies.get((e.get("args") or {}).get("correlation"), ""):
            why = "copy with pageable memory"
        else:
            why = ""
        calls.setdefault((n, why), []).append(round(e["dur"] * 1000))
    out = {}
    for k, v in calls.items():
        v.sort()
        out[k] = (len(v), sum(v), v[math.ceil(0.95 * len(v)) - 1])
    return out

MTIA_NOT_API = ("gif_merge", "gif_remote", "predictor_executor::run")
for b in names:
    rows = json.load(open(b + ".json"))["runtime"]
    got = {(r["name"], r["blocking_why"]): r for r in rows}
    for r in rows:
        assert r["blocking"] == (r["blocking_why"] != ""), r
        assert abs(r["mean_ns"] - r["total_ns"] / r["count"]) < 1e-6 * r["mean_ns"] + 1e-9, r
    want = reference(f"{F}/{b}.json.gz")
    for k in set(want) | set(got):
        if k[0].startswith(MTIA_NOT_API):
            continue
        assert k in want and k in got, f"{b}: {k} only in {'ascent' if k in got else 'the trace'}"
        c, t, p = want[k]
        g = got[k]
        # one nanosecond per call: the trace's microseconds with three decimals rounded either way
        assert g["count"] == c and abs(g["total_ns"] - t) <= c and abs(g["p95_ns"] - p) <= 1, (b, k, g, want[k])
    if b.startswith("mtia"):
        # the executor ranges that start a launch link are counted; the others are not
        assert got[("gif_merge", "")]["count"] == 37 and want[("gif_merge", "")][0] == 38, got.get(("gif_merge", ""))
        assert got[("synchronizeStream", "synchronisation")]["count"] == 113
        assert got[("synchronize", "synchronisation")]["count"] == 113
    if b.startswith("cpu_only"):
        assert rows == [], rows

# HTA, per name over the trace it parses (count, us)
HTA_NAMES = {
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json": {"cudaDeviceGetAttribute": [32, 2.0], "cudaDeviceGetStreamPriorityRange": [11, 29927381.0], "cudaDeviceSynchronize": [5, 938.0], "cudaDriverGetVersion": [1, 0.0], "cudaEventRecord": [30, 89.0], "cudaFree": [15, 6553827.0], "cudaFuncSetAttribute": [12, 25.0], "cudaGetDeviceCount": [1, 0.0], "cudaGetDeviceProperties": [1, 5950.0], "cudaGetSymbolAddress": [1, 1.0], "cudaHostAlloc": [1, 3498.0], "cudaHostGetDevicePointer": [1, 1.0], "cudaLaunchKernel": [79, 3056561.0], "cudaMalloc": [24, 1956700.0], "cudaMemcpyAsync": [16, 56991.0], "cudaMemsetAsync": [5, 65.0], "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": [18, 33.0], "cudaStreamCreateWithFlags": [16, 734880.0], "cudaStreamGetPriority": [10, 6.0], "cudaStreamIsCapturing": [32, 77.0], "cudaStreamSynchronize": [16, 559.0], "cudaStreamWaitEvent": [34, 21.0]},
    "nccl45.json": {"cudaDeviceGetStreamPriorityRange": [634, 412.678], "cudaEventElapsedTime": [8, 33.319], "cudaEventQuery": [30, 105.286], "cudaEventRecord": [718, 1591.958], "cudaEventSynchronize": [16, 53.713], "cudaFuncSetAttribute": [388, 630.573], "cudaLaunchKernel": [1700, 16146.661], "cudaLaunchKernelExC": [100, 795.035], "cudaMemcpyAsync": [640, 6066.095], "cudaMemsetAsync": [78, 781.972], "cudaOccupancyMaxActiveBlocksPerMultiprocessor": [2, 3.522], "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": [158, 265.283], "cudaStreamGetCaptureInfo_v2": [14, 13.988], "cudaStreamGetPriority": [634, 450.167], "cudaStreamIsCapturing": [648, 563.634], "cudaStreamWaitEvent": [56, 78.977]},
}
# HTA's get_cuda_kernel_launch_stats: rows, summed cpu_duration (us)
HTA_LAUNCH = {
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json": (98, 3113616.0),
    "tracelens_b200_eager_trace.json": (708, 6979.946),
    "nccl45.json": (2516, 23787.895),
    "sampled551.json": (602, 5109.0),
    "tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json": (1197, 4761.783),
}
L = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync")

def per_name(f):
    a = {}
    for r in json.load(open(f))["runtime"]:
        x = a.setdefault(r["name"], [0, 0, 0])
        x[0] += r["count"]; x[1] += r["total_ns"]; x[2] += r["launches"]
    return a

for f, want in HTA_NAMES.items():
    a = per_name(f)
    assert set(a) == set(want), (f, set(a) ^ set(want))
    for n, (c, us) in want.items():
        assert a[n][0] == c and abs(a[n][1] - us * 1000) <= c, (f, n, a[n], c, us)
for f, (rows, us) in HTA_LAUNCH.items():
    a = per_name(f)
    launches = sum(a[n][2] for n in L if n in a)
    total = sum(a[n][1] for n in L if n in a)
    assert launches == rows, (f, launches, rows)
    # ascent's total also holds the few calls of these names without device work: within 0.1%
    assert abs(total - us * 1000) <= 1e-3 * us * 1000, (f, total, us)
print("runtime calls: trace and HTA agree")
PY
echo "runtime_kineto: ok"
