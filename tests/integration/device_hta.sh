#!/usr/bin/env bash
# device_hta.sh — `ascent report --by device` (docs/device.md) against Holistic Trace Analysis'
# numbers on the same real traces (tests/fixtures/kineto). HTA does not run here: the numbers below
# are what HTA (github facebookresearch/HolisticTraceAnalysis at commit
# f4d0062c382f42bd8a74838bcdad1916c7d5d2da) printed for TraceAnalysis(trace_dir=<folder holding the
# one trace>) .get_temporal_breakdown(), .get_gpu_kernel_breakdown() (kernel_type_df) and
# .get_comm_comp_overlap(), .get_idle_time_breakdown(ranks=[r]), .get_queue_length_summary(ranks=[r])
# and .get_cuda_kernel_launch_stats(ranks=[r]), with HTA_DISABLE_NS_ROUNDING=1: by default HTA rounds every event with a
# fractional microsecond inwards to whole microseconds (start up, end down), which moves the unions
# of traces with many short kernels by up to 2% (nccl_parser_config: compute 75,169 us rounded vs
# 76,935.828 us exact); ascent keeps nanoseconds. Tolerances: times within 1%, percentages within
# 0.5 point, queue-length means within 2%, launch-delay medians within 2 us. Where a definition
# differs on purpose the check says so.
#
# Per stream (docs/device.md): HTA's idle time breakdown (host wait, kernel wait under its
# consecutive_kernel_delay of 30, which it compares with microseconds, other) and queue length
# (launched, not yet started: +1 at each launch call, -1 at each device start, described over those
# samples) are ascent's definitions. HTA's launch delay is device start - end of the launch call,
# clipped at 0; ascent's is device start - start of the call (what HTA's join of call and kernel
# gives as ts_kernel - ts_call), so the medians below are of that join, with HTA's own median beside
# them. HTA's launch statistics read only the calls cudaLaunchKernel(ExC), cudaMemcpyAsync,
# cudaMemsetAsync and MTIA's runFunction - job_prep_and_submit_for_execution, and its queue length
# also hipLaunchKernel and a few more; ascent reads every launch link (Kineto's ac2g flows).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }

for b in critical_path__alexnet__benchmark_result_2869224_1695835535_trace nccl_parser_config__nccl_data \
         amd_trace__mi250_minitoy_train_ROCm6_2_kineto triton_example__triton_example trace_filter__sampled_rank-0 \
         trace_filter__sampled_rank-1 mtia_inference_trace__mtia_inference_rank_0 \
         tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005 \
         kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace tracelens_b200_eager_trace \
         tracelens_mi300_resnet_act_checkpoint; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --by device --format json >"$b.json" || fail "report --by device --format json on $b"
done
b=tracelens_mi300_resnet_act_checkpoint
"$ASCENT" report "$b.db" --by device --steps 15:17 --format json >"$b.all.json" || fail "report --by device --steps 15:17"
b=nccl_parser_config__nccl_data
"$ASCENT" report "$b.db" --by device >"$b.txt" || fail "report --by device (table)"
grep -q "Comm under compute" "$b.txt" || fail "table has no device columns: $(cat "$b.txt")"
"$ASCENT" report "$b.db" --by device --format csv >"$b.csv" || fail "report --by device --format csv"
head -1 "$b.csv" | grep -q "compute+communication+memory" || fail "csv has no kernel-class columns: $(head -1 "$b.csv")"
head -1 "$b.csv" | grep -q "Host wait,Kernel wait,Other idle,Launch p50,Launch p95" || fail "csv has no idle-cause or launch columns: $(head -1 "$b.csv")"
grep -q "Queue mean" "$b.txt" || fail "table has no stream table: $(cat "$b.txt")"
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

def streams(b, x, hta):
    """hta: {ascent stream: (HTA host_wait, kernel_wait, other us, queue mean, queue max, launch p50 us
    of HTA's join (device start - call start) or None, short kernels or None)}; None: not compared"""
    got = {s["stream"]: s for s in x["streams"]}
    assert sorted(got) == sorted(hta), (b, sorted(got), sorted(hta))
    for st, (hw, kw, other, qmean, qmax, p50, short) in hta.items():
        s, w = got[st], f"{b} stream {st}"
        for key, want in (("host_wait", hw), ("kernel_wait", kw), ("other", other)):
            g = s["idle_ns_by_cause"][key]
            assert abs(g - want * 1000) <= 0.01 * want * 1000 + 10, f"{w} idle {key}: ascent {g} ns, HTA {want} us"
        if qmean is not None:
            assert abs(s["queue_len_mean"] - qmean) <= 0.02 * qmean, f"{w} queue mean: ascent {s['queue_len_mean']}, HTA {qmean}"
            assert s["queue_len_max"] == qmax, f"{w} queue max: ascent {s['queue_len_max']}, HTA {qmax}"
        if p50 is not None:
            assert abs(s["launch_delay_p50_ns"] - p50 * 1000) <= 2000, f"{w} launch p50: ascent {s['launch_delay_p50_ns']} ns, HTA {p50} us"
        if short is not None:
            assert s["short_kernels"] == short, f"{w} short kernels: ascent {s['short_kernels']}, HTA {short}"
    for key in ("host_wait", "kernel_wait", "other"):
        assert x["idle_ns_by_cause"][key] == sum(s["idle_ns_by_cause"][key] for s in x["streams"]), (b, key)

def launch_p50(b, x, hta_us):
    assert abs(x["launch_delay_p50_ns"] - hta_us * 1000) <= 2000, f"{b} launch p50: ascent {x['launch_delay_p50_ns']} ns, HTA {hta_us} us"

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
# Streams. HTA idle: stream 7 host wait 355484.56, kernel wait 1414.17, other 0; stream 40 host wait
# 381488.45 us. Queue length: stream 7 mean 0.811351, max 10 (5004 samples); stream 40 0.5, 1 (28).
# Launch: 2,516 linked; HTA's median (from the call's end) 1.972 us, of its join from the start
# 12.2007 us (stream 7 12.1982, stream 40 12.7822); 1,380 short kernels.
streams(b, x, {7: (355484.56, 1414.17, 0, 0.811351, 10, 12.1982, None),
               40: (381488.45, 0, 0, 0.5, 1, 12.7822, None)})
launch_p50(b, x, 12.2007)
assert x["events_linked"] == 2516 and sum(s["short_kernels"] for s in x["streams"]) == 1380, x

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
# Streams. HTA idle: stream 7 host wait 12855007, kernel wait 104; stream 20 host wait 12011718,
# kernel wait 3 us. Queue: stream 7 mean 3.346154, max 18; stream 20 0.642857, 2. Launch: 98 linked;
# HTA's median from the call's end 32.5 us, of its join from the start 226 (stream 7 253, stream 20
# 30); 23 short kernels (22 and 1).
streams(b, x, {7: (12855007, 104, 0, 3.346154, 18, 253, 22), 20: (12011718, 3, 0, 0.642857, 2, 30, 1)})
launch_p50(b, x, 226)

# ROCm 6.2 on MI250. HTA: kernel_time 8911.8868, idle 8762.8448, compute 110.881, non-compute
# 38.161 us. (Its kernel-type times, truncated per segment, sum to 141 of 149 busy us: the 16
# events are too short for its percentages to hold to 0.5 point.)
b = "amd_trace__mi250_minitoy_train_ROCm6_2_kineto"
x = dev(b)
temporal(b, x, 8911.8868, 8762.8448, 110.881, 38.161)
# Streams. HTA idle: stream 0 host wait 8762.84 us; queue mean 0.5, max 1. HTA's launch statistics
# read no HIP call (none linked there); ascent's 16 links give a median of 13.198 us, not compared.
streams(b, x, {0: (8762.84, 0, 0, 0.5, 1, None, None)})

# MTIA inference (no ProfilerStep: all device work counts). Its device work is category
# mtia_ccp_events, which HTA reads as kernels and classes by name (dma_* memory). HTA: kernel_time
# 443275.704077, idle 19045.764695, compute 382063.207095, non-compute 42166.732287 us; kernel
# types 89.8 / 8.5 / 1.8 % (compute, compute overlapping memory, memory).
b = "mtia_inference_trace__mtia_inference_rank_0"
x = dev(b)
temporal(b, x, 443275.704077, 19045.764695, 382063.207095, 42166.732287)
kernel_types(b, x, {"COMPUTATION": 89.8, "COMPUTATION overlapping MEMORY": 8.5, "MEMORY": 1.8})
assert x["events_counted"] == 1313 and x["device"] == 17, x
# Streams: ascent numbers MTIA's streams by the trace's tid (3536, 3570, ...), HTA by the `stream`
# argument (101, 102, ...), one for one. HTA idle (host wait, kernel wait, other us) below. Differs on
# purpose: HTA's queue length and launch statistics read only the calls named
# "runFunction - job_prep_and_submit_for_execution" (73 of the 991 linked: its queue means are 0.5,
# its launch median from the start 6929.171 us); ascent reads every launch link: not compared.
streams(b, x, {3536: (278728.98, 192.74, 30578.74, None, None, None, None),
               3570: (223988.03, 371.67, 154638.79, None, None, None, None),
               3604: (262085.70, 128.70, 69152.16, None, None, None, None),
               3638: (304927.17, 308.05, 94359.40, None, None, None, None),
               3672: (361832.43, 136.08, 213.90, None, None, None, None),
               3706: (314107.78, 278.75, 24662.71, None, None, None, None),
               3740: (242298.65, 267.56, 8262.25, None, None, None, None),
               3774: (228209.47, 516.81, 60154.81, None, None, None, None),
               3808: (202223.70, 384.45, 16993.02, None, None, None, None),
               3842: (232672.25, 311.75, 32112.27, None, None, None, None),
               3876: (208054.70, 449.42, 91659.24, None, None, None, None),
               3910: (299048.71, 333.72, 36798.52, None, None, None, None)})
assert x["events_linked"] == 991, x

# ResNet-50 on PyTorch 1.8-era Kineto (6 steps; launch links are its `async` flows; 1,516 device
# events launched in the last step left out). HTA: kernel_time 830494, idle 327463, compute 492891,
# non-compute 10140 us (whole microseconds). Streams (its GPU thread id "stream 7" is stream 7). HTA idle: host wait 318934, kernel wait 8529,
# other 0 us; queue mean 153.629947, max 567 (15160 samples); launch: 7,580 linked, HTA's median
# from the call's end 9362.5 us, of its join from the start 9370; 4,788 short kernels.
b = "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace"
x = dev(b)
temporal(b, x, 830494, 327463, 492891, 10140)
assert x["events_out_of_steps"] == 1516, x
streams(b, x, {7: (318934, 8529, 0, 153.629947, 567, 9370, 4788)})
launch_p50(b, x, 9370)
assert x["events_linked"] == 7580, x

# H100 inference, one ProfilerStep: all device work counts (HTA filters by the last step only with
# two steps or more). HTA: kernel_time 49652.831951, idle 4005.531951, compute 45432.698,
# non-compute 214.602 us; kernel types 99.9 / 0.1 % (compute, memory; its per-segment truncation
# to whole microseconds moves them by up to 0.4 point here).
b = "tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005"
x = dev(b)
temporal(b, x, 49652.831951, 4005.531951, 45432.698, 214.602)
kernel_types(b, x, {"COMPUTATION": 99.9, "MEMORY": 0.1})
assert x["events_counted"] == 1707 and x["events_out_of_steps"] == 0, x

# One ProfilerStep: HTA keeps every event (it filters by the last step only with two or more), and
# so does ascent. Differs on purpose: HTA counts every event with a `stream` argument as device
# work, so the CPU operator of the Triton kernel (cpu_op with stream 0, 95.812 us) is HTA's whole
# "kernel_time" (compute 95.812 us, idle 0), the 1.76 us kernel inside it; ascent counts device
# events only: the kernel, 1.76 us of compute.
b = "triton_example__triton_example"
x = dev(b)
assert x["events_counted"] == 1 and x["events_out_of_steps"] == 0 and x["span_ns"] == 1760, x
assert x["compute_ns"] == 1760 and x["idle_ns"] == 0, x

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
# Streams (links by correlation). HTA, rank 0: idle (host wait, kernel wait, other us) and queue
# (mean, max) per stream below; launch: 602 linked, HTA's median from the call's end 10246 us, of its
# join from the start 10251.5 (per stream 10828.5, 8, 45240, 11258.5, 62374); 140 short kernels.
# Rank 1: 577 linked, 10282 / 10290 us (12195, 7, 60514, 39379, 72083); 140 short kernels.
streams("rank 0", r0, {7: (213825, 1985, 261740, 23.619772, 76, 10828.5, None),
                       23: (596037, 70, 34, 0.595238, 4, 8, None), 25: (0, 9, 47865, 4.0, 8, 45240, None),
                       84: (148934, 6, 0, 0.5, 1, 11258.5, None), 203: (0, 0, 0, 0.5, 1, 62374, None)})
launch_p50("rank 0", r0, 10251.5)
streams("rank 1", r1, {7: (156827, 1816, 281064, 24.665669, 75, 12195, None),
                       23: (596313, 100, 0, 0.547619, 2, 7, None), 25: (0, 9, 53028, 4.0, 8, 60514, None),
                       84: (251860, 0, 23247, 0.5, 1, 39379, None), 203: (0, 0, 0, 0.5, 1, 72083, None)})
launch_p50("rank 1", r1, 10290)
for r, linked in ((r0, 602), (r1, 577)):
    assert r["events_linked"] == linked and sum(s["short_kernels"] for s in r["streams"]) == 140, r

# B200 eager (TraceLens' test trace; no ProfilerStep: all 929 device events count). HTA: kernel_time
# 84487.177854, idle 72817.99642, compute 10844.384434, non-compute 824.797 us. 74 device events start
# before the one before them on stream 7 ends (overlapping launches). HTA also counts the CPU
# operator of a Triton kernel (cpu_op with a stream argument, 74.391 us) as compute: its compute time
# is 72.7 us (0.67%) longer than ascent's, ascent's idle as much longer (within 1%).
# Streams. HTA idle: stream 7 host wait 72470.09, kernel wait 351.32, other 0 us. Differs on
# purpose: HTA takes each overlap in as a negative gap (its kernel wait: 420.603 us of gaps less
# 69.278 us of overlaps); ascent measures from the latest end, so its kernel wait is 420.603 us and
# its idle by cause adds up to the device's idle. Queue (HTA reads cuLaunchKernelEx there too): mean
# 0.621636, max 2 (1858 samples). Launch: HTA's statistics read 708 of the 929 links (not the 221
# cuLaunchKernel(Ex) calls): its median from the call's end 2.968 us, of its join from the start
# 9.9606 us, 546 short kernels; ascent over all 929: not compared.
b = "tracelens_b200_eager_trace"
x = dev(b)
temporal(b, x, 84487.177854, 72817.99642, 10844.384434, 824.797)
# the overlaps, from the trace itself: each device event's start - the previous one's end, when negative
import gzip, os
ev = sorted((e for e in json.load(gzip.open(os.environ["ASCENT_ROOT"] + "/tests/fixtures/kineto/" + b + ".json.gz"))["traceEvents"]
             if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
overlap_us = -sum(min(0, e["ts"] - (p["ts"] + p["dur"])) for p, e in zip(ev, ev[1:]))
assert len(ev) == 929 and abs(overlap_us - 69.278) < 0.001, (len(ev), overlap_us)
streams(b, x, {7: (72470.09, 351.32 + overlap_us, 0, 0.621636, 2, None, None)})   # HTA's kernel wait + the overlaps
assert x["idle_ns_by_cause"]["host_wait"] + x["idle_ns_by_cause"]["kernel_wait"] == x["idle_ns"], x
assert x["events_counted"] == 929 and x["events_linked"] == 929, x

# MI300X with ROCm (TraceLens' test trace; 3 ProfilerSteps, 15-17). Differs on purpose (docs/device.md,
# "The last step, as the host ran it"): HTA cuts at the latest start of any event named
# ProfilerStep#N, and here the device-side gpu_user_annotation ProfilerStep#17 starts 37.5 ms after
# the host's, after its last launch, so HTA keeps all 2,685 linked events: kernel_time 56517.603039,
# idle 283.535121, compute 19234.094, non-compute 36999.973918 us, which ascent gives for steps
# 15-17. On the same trace without the three gpu_user_annotation ProfilerStep events HTA keeps
# 1,790 events (the 895 launched in the host's step 17 left out): 37963.27232, 174.915543,
# 12788.957, 24999.399777 us, which is ascent's default. Both ways, HTA drops the 968 device events
# whose launching call is not in the trace; ascent counts them as unlinked.
b = "tracelens_mi300_resnet_act_checkpoint"
x = dev(b)
temporal(b, x, 37963.27232, 174.915543, 12788.957, 24999.399777)
assert (x["events_counted"], x["events_out_of_steps"], x["events_unlinked"]) == (1790, 895, 968), x
d = json.load(open(b + ".all.json"))["devices"]
assert len(d) == 1, d
temporal(b + " steps 15-17", d[0], 56517.603039, 283.535121, 19234.094, 36999.973918)
assert (d[0]["events_counted"], d[0]["events_unlinked"]) == (2685, 968), d[0]
PY

# Copies by kind (docs/device.md, "Copies"): count, bytes and time per kind of the counted copies
# against a computation from the trace JSON here (the same counting rule: launched, by the runtime
# call of the same `correlation`, before the last ProfilerStep of a trace with two or more), and
# HTA's get_memory_bw_summary(ranks=[0]) (commit above, HTA_DISABLE_NS_ROUNDING=1) as it printed it:
# (samples, mean, min, max GB/s) per kind. ascent's own bandwidth (bytes / summed time) is beside it:
# it differs from HTA's because HTA averages each copy's Kineto bandwidth argument (every copy weighs
# the same) while bytes / time weighs each by its time, and because Kineto computed that argument
# from the copy's exact duration where these traces write whole microseconds (a 1024-byte copy
# written as 1 us: 1.024 GB/s by bytes / time, 0.533 by its argument).
b=kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace
"$ASCENT" report "$b.db" --by device >"$b.txt" || fail "report --by device (table) on $b"
grep -q "^Copies" "$b.txt" || fail "table has no copies table: $(cat "$b.txt")"
python3 - <<'PY' || fail "report --by device copies differ from the trace or from HTA's numbers"
import gzip, json, os
F = os.environ["ASCENT_ROOT"] + "/tests/fixtures/kineto/"
KINDS = (("HtoD", "Memcpy HtoD"), ("DtoH", "Memcpy DtoH"), ("DtoD", "Memcpy DtoD"), ("PtoP", "Memcpy PtoP"))

def from_trace(b):
    """{kind: [count, bytes, ns]} of the trace's counted copies and memsets"""
    tr = json.load(gzip.open(F + b + ".json.gz"))
    ev = tr["traceEvents"] if isinstance(tr, dict) else tr
    call, steps, dev = {}, [], []
    for e in ev:
        if e.get("ph") != "X":
            continue
        cat, a = e.get("cat", ""), e.get("args") or {}
        if e.get("name", "").startswith("ProfilerStep#"):
            steps.append(float(e["ts"]))
        if cat.lower() in ("cuda_runtime", "runtime", "cuda_driver") and "correlation" in a:
            call[a["correlation"]] = min(call.get(a["correlation"], float("inf")), float(e["ts"]))
        if cat in ("gpu_memcpy", "gpu_memset", "Memcpy", "Memset"):
            dev.append(e)
    last = max(steps) if len(steps) > 1 else None
    out = {}
    for e in dev:
        a = e["args"]
        t = call.get(a.get("correlation"))
        if last is not None and (t is None or t >= last):
            continue
        k = "Memset" if e["cat"] in ("gpu_memset", "Memset") else \
            next((v for s, v in KINDS if s in e["name"]), "Memcpy other")
        o = out.setdefault(k, [0, 0, 0])
        o[0] += 1; o[1] += int(a.get("bytes", 0)); o[2] += round(float(e["dur"]) * 1000)
    return out

# HTA's get_memory_bw_summary: (count, mean, min, max); ascent's bytes / time in the comment
HTA = {
    "nccl_parser_config__nccl_data": {                     # ascent: 136.90, 1063.61 GB/s
        "Memcpy DtoD": (640, 39.210621, 0.005102, 605.200946),
        "Memset": (76, 678.891094, 0.121212, 1925.218225)},
    "trace_filter__sampled_rank-0": {                      # ascent: 5.99, 0.45, 544.45, 422.65 GB/s
        "Memcpy HtoD": (12, 2.001442, 0.000425, 6.830521),
        "Memcpy DtoH": (4, 0.419659, 0.000488, 1.400735),
        "Memcpy DtoD": (4, 491.943204, 0.000969, 960.234432),
        "Memset": (5, 150.722967, 0.001429, 753.585586)},
    "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace": {   # ascent: 9.94, 684.75 GB/s
        "Memcpy HtoD": (10, 5.072501, 0.205128, 9.982811),
        "Memset": (260, 344.091605, 0.088889, 1048.576)},
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace": {   # ascent: 4.40, 2.72 GB/s
        "Memcpy HtoD": (16, 4.108898, 0.142777, 11.14669),
        "Memset": (3, 1.726877, 0.225352, 4.729927)},
}
for b, hta in HTA.items():
    d = json.load(open(b + ".json"))["devices"]
    assert len(d) == 1, (b, d)
    got = {c["kind"]: c for c in d[0]["copies"]}
    want = from_trace(b)
    assert sorted(got) == sorted(want) == sorted(hta), (b, sorted(got), sorted(want), sorted(hta))
    for k, (n, by, ns) in want.items():
        c = got[k]
        assert (c["count"], c["bytes"], c["total_ns"]) == (n, by, ns), (b, k, c, (n, by, ns))
        assert c["events_without_bytes"] == 0, (b, k, c)
        assert abs(c["bandwidth_gbs"] - by / ns) <= 1e-9 * by / ns, (b, k, c)
        hn, mean, lo, hi = hta[k]
        assert c["hta_bw_samples"] == hn, (b, k, c, hta[k])
        for key, v in (("hta_bw_mean_gbs", mean), ("hta_bw_min_gbs", lo), ("hta_bw_max_gbs", hi)):
            # HTA printed six decimals
            assert abs(c[key] - v) <= max(1e-6, 1e-6 * v), f"{b} {k} {key}: ascent {c[key]}, HTA {v}"
PY
echo "device_hta: ok"
