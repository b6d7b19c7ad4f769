#!/usr/bin/env bash
# device_hta.sh — `ascent report --by device` (docs/device.md) against Holistic Trace Analysis'
# numbers on the same real traces (tests/fixtures/kineto). HTA does not run here: the numbers below
# are what HTA (github facebookresearch/HolisticTraceAnalysis at commit
# f4d0062c382f42bd8a74838bcdad1916c7d5d2da) printed for TraceAnalysis(trace_dir=<folder holding the
# one trace>) .get_temporal_breakdown(), .get_gpu_kernel_breakdown() (kernel_type_df) and
# .get_comm_comp_overlap(), with HTA_DISABLE_NS_ROUNDING=1: by default HTA rounds every event with a
# fractional microsecond inwards to whole microseconds (start up, end down), which moves the unions
# of traces with many short kernels by up to 2% (nccl_parser_config: compute 75,169 us rounded vs
# 76,935.828 us exact); ascent keeps nanoseconds. Tolerances: times within 1%, percentages within
# 0.5 point. Where a definition differs on purpose the check says so.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }

for b in critical_path__alexnet__benchmark_result_2869224_1695835535_trace nccl_parser_config__nccl_data \
         amd_trace__mi250_minitoy_train_ROCm6_2_kineto triton_example__triton_example trace_filter__sampled_rank-0 \
         trace_filter__sampled_rank-1 mtia_inference_trace__mtia_inference_rank_0; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --by device --format json >"$b.json" || fail "report --by device --format json on $b"
done
b=nccl_parser_config__nccl_data
"$ASCENT" report "$b.db" --by device >"$b.txt" || fail "report --by device (table)"
grep -q "Comm under compute" "$b.txt" || fail "table has no device columns: $(cat "$b.txt")"
"$ASCENT" report "$b.db" --by device --format csv >"$b.csv" || fail "report --by device --format csv"
head -1 "$b.csv" | grep -q "compute+communication+memory" || fail "csv has no kernel-class columns: $(head -1 "$b.csv")"
[[ $(wc -l <"$b.csv") -eq 2 ]] || fail "csv: one device row expected: $(cat "$b.csv")"

python3 - <<'PY' || fail "report --by device differs from HTA's numbers"
import json

def dev(b):
    d = json.load(open(b + ".json"))["devices"]
    assert len(d) == 1, (b, d)
    return d[0]

def near(what, got_ns, hta_us, tol=0.01):
    want = hta_us * 1000
    assert abs(got_ns - want) <= tol * want, f"{what}: ascent {got_ns} ns, HTA {want:.0f} ns"

def pct(what, got, hta):
    assert abs(got - hta) <= 0.5, f"{what}: ascent {got:.2f}%, HTA {hta}%"

KEYS = {"COMPUTATION": "compute", "COMMUNICATION": "communication", "MEMORY": "memory",
        "COMPUTATION overlapping COMMUNICATION": "compute+communication",
        "COMPUTATION overlapping MEMORY": "compute+memory",
        "COMMUNICATION overlapping MEMORY": "communication+memory",
        "COMPUTATION overlapping COMMUNICATION overlapping MEMORY": "compute+communication+memory"}

def kernel_types(b, x, hta):
    """hta: HTA's kernel_type percentages (of the summed class time); every other class 0"""
    tot = sum(x["kernel_types_ns"].values())
    for name, key in KEYS.items():
        pct(f"{b} kernel type {key}", 100 * x["kernel_types_ns"][key] / tot, hta.get(name, 0))

def temporal(b, x, span, idle, compute, non_compute):
    near(b + " span", x["span_ns"], span)
    near(b + " idle", x["idle_ns"], idle)
    near(b + " compute", x["compute_ns"], compute)
    near(b + " non-compute", x["non_compute_ns"], non_compute)
    assert x["span_ns"] == x["idle_ns"] + x["compute_ns"] + x["non_compute_ns"], x

# 2-rank NCCL DDP (rank 0's file): 1,258 device events launched in the last ProfilerStep left out,
# as HTA leaves them out. HTA: kernel_time 435587.5617, idle 336419.7147, compute 76935.828,
# non-compute 22232.019 us; comp_comm_overlap_pctg 14.76; kernel types 74.1 / 20.9 / 3.6 / 1.2 / 0.2 %.
# (HTA's kernel-type times truncate every segment to whole microseconds: its percentages are
# compared, not its times.)
b = "nccl_parser_config__nccl_data"
x = dev(b)
temporal(b, x, 435587.5617, 336419.7147, 76935.828, 22232.019)
pct(b + " comm overlap", x["comm_overlap_pct"], 14.76)
kernel_types(b, x, {"COMPUTATION": 74.1, "COMMUNICATION": 20.9, "COMPUTATION overlapping COMMUNICATION": 3.6,
                    "MEMORY": 1.2, "COMMUNICATION overlapping MEMORY": 0.2})
assert x["events_out_of_steps"] == 1258 and x["events_unlinked"] == 0, x

# AlexNet on one GPU (whole microseconds: HTA's rounding changes nothing). HTA: kernel_time
# 12996011, idle 12929684, compute 10630, non-compute 55697 us; kernel types memory 83.9, compute
# 16.1 %; no communication (HTA: NaN, ascent 0). HTA also counts the trace's 41 cuda_sync events
# (Event Sync, Context Sync: the device waiting, no work) as busy device time; ascent counts device
# work only: its span ends 75.8 ms earlier (0.58%) and its non-compute is 186 us (0.33%) less.
b = "critical_path__alexnet__benchmark_result_2869224_1695835535_trace"
x = dev(b)
temporal(b, x, 12996011, 12929684, 10630, 55697)
kernel_types(b, x, {"MEMORY": 83.9, "COMPUTATION": 16.1})
assert x["comm_ns"] == 0 and x["comm_overlap_pct"] == 0, x

# ROCm 6.2 on MI250. HTA: kernel_time 8911.8868, idle 8762.8448, compute 110.881, non-compute
# 38.161 us. (Its kernel-type times, truncated per segment, sum to 141 of 149 busy us: the 16
# events are too short for its percentages to hold to 0.5 point.)
b = "amd_trace__mi250_minitoy_train_ROCm6_2_kineto"
x = dev(b)
temporal(b, x, 8911.8868, 8762.8448, 110.881, 38.161)

# MTIA inference (no ProfilerStep: all device work counts). Its device work is category
# mtia_ccp_events, which HTA reads as kernels and classes by name (dma_* memory). HTA: kernel_time
# 443275.704077, idle 19045.764695, compute 382063.207095, non-compute 42166.732287 us; kernel
# types 89.8 / 8.5 / 1.8 % (compute, compute overlapping memory, memory).
b = "mtia_inference_trace__mtia_inference_rank_0"
x = dev(b)
temporal(b, x, 443275.704077, 19045.764695, 382063.207095, 42166.732287)
kernel_types(b, x, {"COMPUTATION": 89.8, "COMPUTATION overlapping MEMORY": 8.5, "MEMORY": 1.8})
assert x["events_counted"] == 1313 and x["device"] == 17, x

# Differs on purpose: HTA counts every event with a `stream` argument as device work, so the CPU
# operator of a Triton kernel (cpu_op with stream 0, 95.812 us) is HTA's whole "kernel_time", while
# the one real kernel, launched inside the last (and only) ProfilerStep, is left out. ascent counts
# device events only: nothing is counted, and the kernel is reported as left out.
b = "triton_example__triton_example"
x = dev(b)
assert x["events_counted"] == 0 and x["events_out_of_steps"] == 1 and x["span_ns"] == 0, x

# Two ranks of a 128-rank NCCL job, sampled: no launch links (no ac2g flows), only the correlation
# argument every runtime call and device event carries; the importer links them by it, as HTA does,
# so the work launched before the last ProfilerStep is counted. Whole microseconds: HTA's rounding
# changes nothing. HTA, rank 0: kernel_time 600058, idle 321378, compute 106252, non-compute 172428
# us; comp_comm_overlap_pctg 11.81; kernel types 61.6 / 29.8 / 8.3 / 0.2 / 0.1 % (communication,
# compute, compute+communication, communication+memory, memory). Rank 1: 600674, 328671, 135548,
# 136455 us; overlap 20.05; kernel types 49.2 / 37.4 / 12.4 / 0.8 / 0.2 %.
for b in ("trace_filter__sampled_rank-0", "trace_filter__sampled_rank-1"):
    x = dev(b)
    assert x["events_unlinked"] == 0, x
r0, r1 = dev("trace_filter__sampled_rank-0"), dev("trace_filter__sampled_rank-1")
temporal("rank 0", r0, 600058, 321378, 106252, 172428)
pct("rank 0 comm overlap", r0["comm_overlap_pct"], 11.81)
kernel_types("rank 0", r0, {"COMMUNICATION": 61.6, "COMPUTATION": 29.8, "COMPUTATION overlapping COMMUNICATION": 8.3,
                            "COMMUNICATION overlapping MEMORY": 0.2, "MEMORY": 0.1})
temporal("rank 1", r1, 600674, 328671, 135548, 136455)
pct("rank 1 comm overlap", r1["comm_overlap_pct"], 20.05)
kernel_types("rank 1", r1, {"COMMUNICATION": 49.2, "COMPUTATION": 37.4, "COMPUTATION overlapping COMMUNICATION": 12.4,
                            "MEMORY": 0.8, "COMMUNICATION overlapping MEMORY": 0.2})
PY
echo "device_hta: ok"
