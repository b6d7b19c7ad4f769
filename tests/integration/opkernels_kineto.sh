#!/usr/bin/env bash
# opkernels_kineto.sh — `ascent report --by opkernels` (docs/device.md) on real Kineto traces of
# tests/fixtures/kineto (AlexNet, the NCCL DDP trace, a sampled rank of a 128-rank job; for 1. also
# the H100, B200, MI250 and ResNet-50 traces), held to
# 1. an independent computation from the trace JSON (below, in Python): launches joined to their
#    device work by `correlation` (runtime call of category cuda_runtime/cuda_driver → kernel,
#    gpu_memcpy, gpu_memset; 2021's Runtime, Kernel, ...), each launch given to every cpu_op on
#    the call's thread whose span holds the call's start, once per name (the outermost); per name
#    calls, CPU total, kernels, device total, the most common non-empty kernel sequence and its count, mean and median launch delay;
#    and the 20 most frequent runs of 3 consecutive device events per device (pid, tid), counted at
#    every position, with their summed durations. Whole traces and with --steps. And `ascent diff`'s
#    operator device work (launched, device) equals the table's (kernels, device_ns): one rule.
# 2. Holistic Trace Analysis (github facebookresearch/HolisticTraceAnalysis at commit
#    f4d0062c382f42bd8a74838bcdad1916c7d5d2da, HTA_DISABLE_NS_ROUNDING=1), recorded below (HTA does
#    not run here): TraceAnalysis(trace_dir=<folder of the one trace>)
#    .get_frequent_cuda_kernel_sequences(operator_name=NAME, min_pattern_len=1, top_k=1000) for
#    every operator name ascent lists (the first 40), and .get_aten_op_kernels_and_delay(). HTA parses
#    a trace up to the start of its last ProfilerStep, so ascent runs with the steps before it
#    (AlexNet has none: whole; NCCL DDP --steps 4:5; sampled rank 0 --steps 551:551).
#    HTA's frequent sequences are per call of an operator: the name, then every kernel under it
#    in time order, counted per distinct pattern: ascent's per-operator sequences. Differences on
#    purpose, marked in the record:
#    - HTA puts its cuda_sync events (Stream Wait Event, Stream Sync, Context Sync: the device
#      waiting, no work) into the patterns and their time into the GPU duration; ascent counts
#      device work only. The record holds HTA's patterns with them removed, and the test checks
#      HTA's GPU time = ascent's + the syncs' time (from the trace).
#    - HTA selects the calls by substring ("aten::convolution" takes aten::convolution_backward
#      too: "substring") and only those at the smallest depth any of them has in the call tree
#      ("depth": aten::mul at depth 1 in the reducer hides the forward's at depth 3); ascent takes
#      every call of the exact name.
#    - get_aten_op_kernels_and_delay gives a launch to the innermost aten:: operator wrapping the
#      call and averages only each call's first launch delay: it equals ascent's mean delay where the
#      operator launches one kernel per call and nothing under it is another aten:: operator that
#      launches (the record marks the others "innermost").
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }

A=critical_path__alexnet__benchmark_result_2869224_1695835535_trace
N=nccl_parser_config__nccl_data
S=trace_filter__sampled_rank-0
MORE="tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005 tracelens_b200_eager_trace amd_trace__mi250_minitoy_train_ROCm6_2_kineto
      kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace"
for b in $A $N $S $MORE; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --by opkernels --format json >"$b.all.json" || fail "report --by opkernels --format json on $b"
done
"$ASCENT" report $N.db --by opkernels --steps 4:5 --format json >nccl45.json
"$ASCENT" report $S.db --by opkernels --steps 551:551 --format json >s551.json
"$ASCENT" report $A.db --by opkernels --seq-len 2 --top 5 --format json >alexnet_l2.json
"$ASCENT" diff $N.db $N.db --format json >nccl_diff.json 2>/dev/null || fail "diff $N against itself"

COLUMNS=200 "$ASCENT" report $A.db --by opkernels >$A.txt || fail "report --by opkernels (table)"
grep -q "Most common kernel sequence" $A.txt || fail "table has no sequence column: $(cat $A.txt)"
grep -q "Frequent kernel sequences (fusion candidates): 3 consecutive" $A.txt || fail "no frequent-sequence table: $(cat $A.txt)"
grep -q "98 of 98 launches inside an operator" $A.txt || fail "launch count line: $(head -3 $A.txt)"
"$ASCENT" report $A.db --by opkernels --format csv >$A.csv || fail "report --by opkernels --format csv"
[[ $(head -1 $A.csv) == "Device,Calls,CPU total,Kernels/call,Delay mean,Delay p50,Seq calls,Name,Most common kernel sequence" ]] ||
  fail "csv header: $(head -1 $A.csv)"
[[ $(wc -l <$A.csv) -eq 21 ]] || fail "csv: 20 rows expected: $(cat $A.csv)"
if "$ASCENT" report $A.db --by opkernels --seq-len 0 >/dev/null 2>&1; then fail "--seq-len 0 accepted"; fi

python3 - "$F" <<'PY' || fail "report --by opkernels differs from the trace or from HTA"
import collections, decimal, gzip, json, sys

F = sys.argv[1]
RT = {"cuda_runtime", "cuda_driver"}
DEV = {"kernel", "gpu_memcpy", "gpu_memset"}
OLD_CATS = {"Operator": "cpu_op", "Runtime": "cuda_runtime", "Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset"}
bad = []


def ns(v):
    return int((decimal.Decimal(v) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def trunc_half(a, b):
    s = a + b
    return s // 2 if s >= 0 else -((-s) // 2)


def reference(path, steps=None, seq_len=3, top=20):
    """Per operator name and the frequent sequences, from the trace JSON alone."""
    d = json.load(gzip.open(path), parse_float=decimal.Decimal)
    ev = [e for e in (d["traceEvents"] if isinstance(d, dict) else d) if e.get("ph") == "X" and "dur" in e]
    for e in ev:   # PyTorch 1.8-1.10's categories
        e["cat"] = OLD_CATS.get(e.get("cat"), e.get("cat"))
    lo, hi = -2**63, 2**63
    if steps:
        st = [e for e in ev if e["name"].startswith("ProfilerStep#") and steps[0] <= int(e["name"][13:]) <= steps[1]]
        lo, hi = min(ns(e["ts"]) for e in st), max(ns(e["ts"]) + ns(e["dur"]) for e in st)
    calls = {}
    for e in ev:
        c = (e.get("args") or {}).get("correlation")
        if e.get("cat") in RT and c is not None:
            calls[c] = e
    dev, sync = collections.defaultdict(list), collections.defaultdict(list)
    for e in ev:
        c = (e.get("args") or {}).get("correlation")
        if e.get("cat") in DEV and c in calls:
            dev[c].append(e)
        if e.get("cat") == "cuda_sync" and c in calls:
            sync[c].append(e)
    ops = collections.defaultdict(list)   # (pid, tid) -> [(start, end, name, index)]
    opl = []
    for e in ev:
        if e.get("cat") == "cpu_op" and not e["name"].startswith("ProfilerStep#") and lo <= ns(e["ts"]) < hi:
            s = ns(e["ts"])
            ops[(e["pid"], e["tid"])].append((s, s + ns(e["dur"]), e["name"], len(opl)))
            opl.append(e)
    seqs = collections.defaultdict(list)  # op index -> [(call start, device start, name, dur, delay)]
    syncs = collections.defaultdict(int)  # op name -> the syncs' time (HTA's extra)
    launches = in_ops = 0

    def owners(e):
        t, own = ns(e["ts"]), {}
        for s, end, name, i in ops.get((e["pid"], e["tid"]), ()):
            if s <= t < end and (name not in own or (s, -end) < own[name][:2]):
                own[name] = (s, -end, i)
        return [v[2] for v in own.values()]

    for c, e in calls.items():
        t = ns(e["ts"])
        if not lo <= t < hi:
            continue
        own = owners(e)
        for k in dev.get(c, ()):
            launches += 1
            in_ops += bool(own)
            for i in own:
                seqs[i].append((t, ns(k["ts"]), k["name"], ns(k["dur"]), ns(k["ts"]) - t))
        for k in sync.get(c, ()):
            for i in own:
                syncs[opl[i]["name"]] += ns(k["dur"])
    by = collections.defaultdict(list)
    for i, e in enumerate(opl):
        by[e["name"]].append((e, sorted(seqs.get(i, ()))))
    rows = {}
    for name, cs in by.items():
        ks = [k for _, s in cs for k in s]
        if not ks:
            continue
        cnt = collections.Counter(tuple(k[2] for k in s) for _, s in cs if s)
        best = min(cnt.items(), key=lambda kv: (-kv[1], kv[0]))
        dl = sorted(k[4] for k in ks)
        n = len(dl)
        rows[name] = {"calls": len(cs), "calls_launching": sum(1 for _, s in cs if s),
                      "cpu_ns": sum(ns(e["dur"]) for e, _ in cs), "kernels": n, "device_ns": sum(k[3] for k in ks),
                      "sequence": list(best[0]), "sequence_calls": best[1],
                      "launch_delay_mean_ns": sum(dl) / n,
                      "launch_delay_p50_ns": dl[n // 2] if n % 2 else trunc_half(dl[n // 2 - 1], dl[n // 2])}
    # frequent sequences: device events per lane, selected by their launch call's start (own start unlinked)
    launch_of = {}
    for c, ks in dev.items():
        for k in ks:
            launch_of[id(k)] = ns(calls[c]["ts"])
    lanes = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") in DEV and lo <= launch_of.get(id(e), ns(e["ts"])) < hi:
            lanes[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["dur"]), e["name"]))
    win = collections.defaultdict(lambda: [0, 0, set()])
    for lane, v in lanes.items():
        v.sort()
        for i in range(len(v) - seq_len + 1):
            w = win[tuple(x[2] for x in v[i:i + seq_len])]
            w[0] += 1
            w[1] += sum(x[1] for x in v[i:i + seq_len])
            w[2].add(lane)
    freq = sorted(([list(k), v[0], v[1], len(v[2])] for k, v in win.items()), key=lambda r: (-r[1], -r[2], r[0]))
    return rows, syncs, freq[:top], launches, in_ops, len(win)


def check(label, got, ref):
    rows, syncs, freq, launches, in_ops, distinct = ref
    a = {o["name"]: o for o in got["opkernels"]}
    if set(a) != set(rows):
        bad.append(f"{label}: operator names differ: only ascent {sorted(set(a) - set(rows))[:5]}, only trace {sorted(set(rows) - set(a))[:5]}")
    for n, r in rows.items():
        o = a.get(n)
        if not o:
            continue
        for k, v in r.items():
            ok = abs(o[k] - v) <= 1 if k.startswith("launch_delay") else o[k] == v
            if not ok:
                bad.append(f"{label} {n}: {k} ascent {o[k]!r:.200} trace {v!r:.200}")
    g = [[q["sequence"], q["count"], q["device_ns"], q["streams"]] for q in got["kernel_sequences"]]
    if g != freq:
        bad.append(f"{label}: frequent sequences differ:\n ascent {json.dumps(g)[:600]}\n trace  {json.dumps(freq)[:600]}")
    return a, syncs

HTA = {
  "alexnet": {
    "frequent": {  # name: [calls, top count, top length, top first kernel (40 chars), GPU us, syncs, differs]
      "aten::_to_copy": [16, 16, 1, "Memcpy HtoD (Pageable -> Device)", 56047.0, 2, ""],
      "aten::copy_": [16, 16, 1, "Memcpy HtoD (Pageable -> Device)", 56047.0, 2, ""],
      "aten::to": [16, 16, 1, "Memcpy HtoD (Pageable -> Device)", 56047.0, 2, ""],
      "aten::_convolution": [10, 6, 4, "void cudnn::ops::nchwToNhwcKernel<float,", 6343.0, 20, ""],
      "aten::conv2d": [10, 6, 4, "void cudnn::ops::nchwToNhwcKernel<float,", 6343.0, 20, ""],
      "aten::convolution": [10, 6, 4, "void cudnn::ops::nchwToNhwcKernel<float,", 6343.0, 20, ""],
      "aten::cudnn_convolution": [10, 6, 3, "void cudnn::ops::nchwToNhwcKernel<float,", 5385.0, 20, ""],
      "aten::addmm": [6, 4, 2, "ampere_sgemm_32x32_sliced1x4_tn", 2664.0, 0, ""],
      "aten::linear": [6, 4, 2, "ampere_sgemm_32x32_sliced1x4_tn", 2664.0, 0, ""],
      "aten::add_": [10, 10, 1, "void at::native::elementwise_kernel<128,", 958.0, 0, ""],
      "aten::clamp_min_": [14, 14, 1, "void at::native::vectorized_elementwise_", 683.0, 0, ""],
      "aten::relu_": [14, 14, 1, "void at::native::vectorized_elementwise_", 683.0, 0, ""],
      "aten::max_pool2d": [6, 6, 1, "void at::native::(anonymous namespace)::", 644.0, 0, ""],
      "aten::max_pool2d_with_indices": [6, 6, 1, "void at::native::(anonymous namespace)::", 644.0, 0, ""],
      "aten::_adaptive_avg_pool2d": [2, 2, 1, "void at::native::(anonymous namespace)::", 271.0, 0, ""],
      "aten::adaptive_avg_pool2d": [2, 2, 1, "void at::native::(anonymous namespace)::", 271.0, 0, ""],
      "aten::rand": [1, 1, 1, "void at::native::(anonymous namespace)::", 71.0, 0, ""],
      "aten::uniform_": [0, 0, 0, "", 0, 0, "depth"],
      "aten::dropout": [4, 4, 1, "void at::native::(anonymous namespace)::", 34.0, 0, ""],
      "aten::native_dropout": [4, 4, 1, "void at::native::(anonymous namespace)::", 34.0, 0, ""],
    },
    "aten_single": {  # name: [occurrences, avg_runtime_delay us, differs]
      "aten::clamp_min_": [14, 705.643, ""],
      "aten::add_": [10, 609.0, ""],
      "aten::max_pool2d_with_indices": [6, 372.333, ""],
      "aten::native_dropout": [4, 738.75, ""],
      "aten::_adaptive_avg_pool2d": [2, 741.5, ""],
      "aten::uniform_": [1, 35.0, ""],
    },
  },
  "nccl": {
    "frequent": {  # name: [calls, top count, top length, top first kernel (40 chars), GPU us, syncs, differs]
      "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad": [322, 312, 1, "void at::native::vectorized_elementwise_", 25091.148, 0, ""],
      "record_param_comms": [0, 0, 0, "", 0, 0, "depth"],
      "c10d::allreduce_": [10, 10, 1, "ncclKernel_AllReduce_RING_LL_Sum_float(n", 24211.804, 0, ""],
      "autograd::engine::evaluate_function: ConvolutionBackward0": [106, 16, 3, "void cutlass::Kernel<cutlass_80_tensorop", 29073.243, 0, ""],
      "ConvolutionBackward0": [106, 16, 3, "void cutlass::Kernel<cutlass_80_tensorop", 29073.243, 0, "substring"],
      "aten::convolution_backward": [106, 30, 3, "void cutlass::Kernel<cutlass_80_tensorop", 26137.283, 0, ""],
      "CudnnBatchNormBackward0": [106, 64, 1, "void cudnn::bn_bw_1C11_kernel_new<float,", 13667.685, 0, ""],
      "aten::cudnn_batch_norm_backward": [106, 64, 1, "void cudnn::bn_bw_1C11_kernel_new<float,", 13667.685, 0, ""],
      "autograd::engine::evaluate_function: CudnnBatchNormBackward0": [106, 64, 1, "void cudnn::bn_bw_1C11_kernel_new<float,", 13667.685, 0, ""],
      "aten::_convolution": [106, 46, 1, "void cutlass::Kernel<cutlass_80_tensorop", 11343.427, 0, ""],
      "aten::conv2d": [106, 46, 1, "void cutlass::Kernel<cutlass_80_tensorop", 11343.427, 0, ""],
      "aten::convolution": [212, 46, 1, "void cutlass::Kernel<cutlass_80_tensorop", 37480.71, 0, "substring"],
      "aten::cudnn_convolution": [106, 46, 1, "void cutlass::Kernel<cutlass_80_tensorop", 11343.427, 0, ""],
      "aten::_batch_norm_impl_index": [106, 56, 1, "void cudnn::bn_fw_tr_1C11_singleread<flo", 7275.873, 0, ""],
      "aten::batch_norm": [106, 56, 1, "void cudnn::bn_fw_tr_1C11_singleread<flo", 7275.873, 0, ""],
      "aten::cudnn_batch_norm": [106, 64, 1, "void cudnn::bn_bw_1C11_kernel_new<float,", 13667.685, 0, "substring"],
      "aten::add_": [170, 106, 1, "void at::native::vectorized_elementwise_", 6107.82, 0, ""],
      "ReluBackward0": [98, 98, 1, "void at::native::vectorized_elementwise_", 5392.789, 0, ""],
      "aten::threshold_backward": [98, 98, 1, "void at::native::vectorized_elementwise_", 5392.789, 0, ""],
      "autograd::engine::evaluate_function: ReluBackward0": [98, 98, 1, "void at::native::vectorized_elementwise_", 5392.789, 0, ""],
      "aten::clamp_min_": [98, 98, 1, "void at::native::vectorized_elementwise_", 3038.785, 0, ""],
      "aten::relu_": [98, 98, 1, "void at::native::vectorized_elementwise_", 3038.785, 0, ""],
      "aten::copy_": [640, 640, 1, "Memcpy DtoD (Device -> Device)", 1496.556, 0, ""],
      "MaxPool2DWithIndicesBackward0": [2, 2, 2, "void at::native::vectorized_elementwise_", 1330.19, 0, ""],
      "aten::max_pool2d_with_indices_backward": [2, 2, 2, "void at::native::vectorized_elementwise_", 1330.19, 0, ""],
      "autograd::engine::evaluate_function: MaxPool2DWithIndicesBackward0": [2, 2, 2, "void at::native::vectorized_elementwise_", 1330.19, 0, ""],
      "torch.distributed.ddp.reducer::copy_bucket_to_grad": [322, 322, 1, "Memcpy DtoD (Device -> Device)", 1009.875, 0, ""],
      "aten::_foreach_add_": [4, 4, 3, "void at::native::(anonymous namespace)::", 1016.597, 0, ""],
      "aten::mul": [2, 2, 1, "void at::native::vectorized_elementwise_", 5.184, 0, "depth"],
      "torch::distributed::reducer::mul_out": [322, 322, 1, "void at::native::vectorized_elementwise_", 879.344, 0, ""],
      "aten::_foreach_mul_": [2, 2, 3, "void at::native::(anonymous namespace)::", 368.537, 0, ""],
      "aten::max_pool2d": [2, 2, 1, "void at::native::(anonymous namespace)::", 331.26, 0, ""],
      "aten::max_pool2d_with_indices": [4, 2, 1, "void at::native::(anonymous namespace)::", 1661.45, 0, "substring"],
      "aten::fill_": [2, 2, 1, "void at::native::vectorized_elementwise_", 2.72, 0, "depth"],
      "aten::zero_": [2, 2, 1, "void at::native::vectorized_elementwise_", 132.254, 0, ""],
      "autograd::engine::evaluate_function: AddmmBackward0": [2, 2, 4, "void cutlass::Kernel<cutlass_80_simt_sge", 82.912, 0, ""],
      "c10d::broadcast_": [4, 4, 1, "ncclKernel_Broadcast_RING_LL_Sum_int8_t(", 77.246, 0, ""],
      "AddmmBackward0": [2, 2, 4, "void cutlass::Kernel<cutlass_80_simt_sge", 82.912, 0, "substring"],
      "aten::mm": [4, 2, 1, "ampere_sgemm_32x128_nt", 67.104, 0, ""],
      "aten::addmm": [2, 2, 2, "ampere_sgemm_32x32_sliced1x4_tn", 57.984, 0, ""],
    },
    "aten_single": {  # name: [occurrences, avg_runtime_delay us, differs]
      "aten::mul": [326, 38.474, ""],
      "aten::add_": [170, 20.025, ""],
      "aten::threshold_backward": [98, 20.419, ""],
      "aten::clamp_min_": [98, 30.887, ""],
      "aten::cudnn_batch_norm_backward": [106, 19.042, ""],
      "aten::cudnn_batch_norm": [106, 13.952, ""],
      "aten::div": [6, 15.392, ""],
      "aten::fill_": [4, 11.76, ""],
      "aten::neg": [4, 11.827, ""],
      "aten::cat": [4, 20.65, ""],
      "aten::sum": [4, 11.813, ""],
      "aten::_log_softmax": [2, 18.006, ""],
      "aten::_log_softmax_backward_data": [2, 11.514, ""],
      "aten::mean": [2, 13.206, ""],
      "aten::max_pool2d_with_indices_backward": [2, 11.67, "innermost"],
      "aten::max_pool2d_with_indices": [2, 130.997, ""],
    },
  },
  "sampled0": {
    "frequent": {  # name: [calls, top count, top length, top first kernel (40 chars), GPU us, syncs, differs]
      "record_param_comms": [3, 3, 1, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8", 90048.0, 0, "depth"],
      "c10d::alltoall_base_": [1, 1, 1, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8", 30669.0, 0, "depth"],
      "All2All_Pooled_Req": [1, 1, 1, "void fbgemm_gpu::(anonymous namespace)::", 1817.0, 0, "substring"],
      "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad": [12, 4, 1, "void at::native::unrolled_elementwise_ke", 59521.0, 0, ""],
      "c10d::allreduce_": [2, 2, 1, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8", 59379.0, 0, ""],
      "c10d::_allgather_base_": [1, 1, 1, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8", 42496.0, 0, ""],
      "autograd::engine::evaluate_function: torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>": [2, 1, 15, "void linearize_index_kernel<long>(at::Ge", 31626.0, 0, ""],
      "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>": [2, 1, 15, "void linearize_index_kernel<long>(at::Ge", 31626.0, 0, ""],
      "aten::mm": [78, 4, 1, "ampere_sgemm_32x128_nn", 14903.0, 0, "depth"],
      "forward": [1, 1, 183, "void at::native::unrolled_elementwise_ke", 92167.0, 0, "depth"],
      "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function": [2, 1, 1, "void split_embedding_codegen_forward_unw", 9358.0, 0, ""],
      "autograd::engine::evaluate_function: AddmmBackward0": [56, 4, 1, "void at::native::reduce_kernel<128, 4, a", 9573.0, 0, ""],
      "AddmmBackward0": [56, 4, 1, "void at::native::reduce_kernel<128, 4, a", 9573.0, 0, "substring"],
      "aten::bmm": [13, 3, 1, "ampere_sgemm_128x128_tt", 6638.0, 0, "depth"],
      "aten::matmul": [7, 3, 1, "void cutlass::Kernel<cutlass_80_tensorop", 2559.0, 0, "depth"],
      "BmmBackward0": [7, 2, 2, "void cutlass::Kernel<cutlass_80_tensorop", 6638.0, 0, ""],
      "autograd::engine::evaluate_function: BmmBackward0": [7, 2, 2, "void cutlass::Kernel<cutlass_80_tensorop", 6638.0, 0, ""],
      "<backward op>": [16, 2, 2, "ampere_sgemm_128x64_nn", 5914.0, 0, ""],
      "autograd::engine::evaluate_function: torch::jit::(anonymous namespace)::DifferentiableGraphBackward": [16, 2, 2, "ampere_sgemm_128x64_nn", 5914.0, 0, ""],
      "torch::jit::(anonymous namespace)::DifferentiableGraphBackward": [16, 2, 2, "ampere_sgemm_128x64_nn", 5914.0, 0, ""],
      "aten::cat": [3, 2, 1, "void at::native::(anonymous namespace)::", 492.0, 0, "depth"],
      "aten::linear": [41, 4, 1, "void cutlass::Kernel<cutlass_80_tensorop", 3741.0, 0, "depth"],
      "All2All_Pooled_WaitBackward": [1, 1, 4, "void at::native::elementwise_kernel<128,", 5200.0, 0, ""],
      "autograd::engine::evaluate_function: All2All_Pooled_WaitBackward": [1, 1, 4, "void at::native::elementwise_kernel<128,", 5200.0, 0, ""],
      "aten::addmm": [38, 4, 1, "void cutlass::Kernel<cutlass_80_tensorop", 3181.0, 0, "depth"],
      "MmBackward0": [7, 1, 1, "ampere_sgemm_32x128_nn", 3474.0, 0, ""],
      "autograd::engine::evaluate_function: MmBackward0": [7, 1, 1, "ampere_sgemm_32x128_nn", 3474.0, 0, ""],
      "fbgemm::FloatToFP8RowwiseQuantized": [1, 1, 2, "void fbgemm_gpu::(anonymous namespace)::", 3068.0, 0, ""],
      "<forward op>": [13, 2, 2, "void cutlass::Kernel<cutlass_80_tensorop", 2082.0, 0, ""],
      "autograd::engine::evaluate_function: torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction<&fbgemm_gpu::permute_pooled_embs_gpu> >": [1, 1, 1, "void permute_pooled_embs_kernel<float>(f", 2238.0, 0, ""],
      "torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction<&fbgemm_gpu::permute_pooled_embs_gpu> >": [1, 1, 1, "void permute_pooled_embs_kernel<float>(f", 2238.0, 0, ""],
      "fbgemm::permute_2D_sparse_data": [1, 1, 5, "void fbgemm_gpu::permute_2D_lengths_kern", 1222.0, 0, "depth"],
      "fbgemm::permute_pooled_embs_auto_grad": [1, 1, 1, "void permute_pooled_embs_kernel<float>(f", 2185.0, 0, ""],
      "aten::tensordot": [4, 1, 1, "void cutlass::Kernel<cutlass_80_tensorop", 2077.0, 0, ""],
      "All2All_Pooled_ReqBackward": [1, 1, 1, "void fbgemm_gpu::(anonymous namespace)::", 1817.0, 0, ""],
      "autograd::engine::evaluate_function: All2All_Pooled_ReqBackward": [1, 1, 1, "void fbgemm_gpu::(anonymous namespace)::", 1817.0, 0, ""],
      "fbgemm::FP8RowwiseQuantizedToFloat": [1, 1, 1, "void fbgemm_gpu::(anonymous namespace)::", 1817.0, 0, ""],
      "fbgemm::bounds_check_indices": [2, 2, 2, "void at::native::vectorized_elementwise_", 1480.0, 0, ""],
      "fbgemm::FloatToHFP8Quantized": [1, 1, 1, "void at::native::vectorized_elementwise_", 1352.0, 0, ""],
      "All2All_Pooled_Wait": [1, 1, 4, "void at::native::elementwise_kernel<128,", 5200.0, 0, "substring"],
    },
    "aten_single": {  # name: [occurrences, avg_runtime_delay us, differs]
      "aten::fill_": [25, 12979.36, ""],
      "aten::copy_": [20, 13041.2, "innermost"],
      "aten::where": [4, 13846.25, ""],
      "aten::div": [14, 24255.357, ""],
      "aten::exp_": [4, 15083.5, ""],
      "aten::eq": [10, 7.7, ""],
      "aten::mul": [28, 26526.607, ""],
      "aten::nan_to_num": [4, 13811.25, ""],
      "aten::native_layer_norm": [12, 12516.833, "innermost"],
      "aten::clamp_": [4, 6.25, ""],
      "aten::clamp": [4, 12343.25, ""],
      "aten::cat": [17, 8227.0, "innermost"],
      "aten::mean": [4, 14819.0, ""],
      "aten::logical_and": [4, 10503.5, ""],
      "aten::log_": [4, 14995.25, ""],
      "aten::log2": [4, 5.75, ""],
      "aten::native_layer_norm_backward": [12, 3946.917, ""],
      "aten::add_": [18, 8910.389, ""],
      "aten::sum": [20, 6080.1, "innermost"],
      "aten::tanh": [4, 40363.5, ""],
      "aten::sub": [10, 5.9, ""],
      "aten::sigmoid_backward": [6, 9055.833, ""],
      "aten::tanh_backward": [5, 7518.2, ""],
      "aten::sigmoid": [4, 12366.75, ""],
      "aten::neg": [4, 9868.0, ""],
      "aten::bmm": [20, 15865.3, ""],
      "aten::add": [4, 24896.5, ""],
      "aten::threshold_backward": [5, 25200.4, ""],
      "aten::ge": [3, 10019.333, ""],
      "aten::pow": [3, 9490.0, ""],
      "aten::sub_": [5, 5.2, ""],
      "aten::repeat_interleave": [2, 15904.0, "innermost"],
      "aten::sqrt": [2, 36659.0, ""],
      "aten::matmul": [7, 9529.0, "innermost"],
      "aten::logit": [2, 15303.0, ""],
      "aten::index_select": [2, 15920.5, ""],
      "aten::masked_fill_": [2, 15756.0, ""],
      "aten::logit_backward": [2, 10093.5, ""],
      "aten::scatter_add_": [1, 69071.0, ""],
      "aten::arange": [1, 15770.0, ""],
      "aten::addcmul_": [1, 103674.0, ""],
      "aten::_softmax_backward_data": [1, 10367.0, ""],
      "aten::_softmax": [1, 15271.0, ""],
      "aten::scatter_": [1, 9454.0, ""],
      "aten::max": [1, 15475.0, ""],
      "aten::linalg_vector_norm": [1, 64803.0, "innermost"],
      "aten::linalg_norm": [1, 64703.0, "innermost"],
      "aten::gt": [1, 15780.0, ""],
      "aten::gather": [1, 8206.0, ""],
      "aten::mul_": [1, 64699.0, "innermost"],
      "aten::_index_put_impl_": [2, 15939.5, ""],
    },
  },
}

A, N, S = ("critical_path__alexnet__benchmark_result_2869224_1695835535_trace", "nccl_parser_config__nccl_data",
           "trace_filter__sampled_rank-0")
# whole traces (H100, B200, MI250 and ResNet-50 too: the trace alone)
for b in (A, N, S, "tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005", "tracelens_b200_eager_trace",
          "amd_trace__mi250_minitoy_train_ROCm6_2_kineto", "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace"):
    check(b, json.load(open(f"{b}.all.json")), reference(f"{F}/{b}.json.gz"))
# diff credits launches to operators by the same rule: its device column is this table's
a = {o["name"]: o for o in json.load(open(f"{N}.all.json"))["opkernels"]}
dd = {r["name"]: r for r in json.load(open("nccl_diff.json"))["op_device"]}
if set(dd) != set(a) or any((dd[n]["a_launched"], dd[n]["a_device_ns"]) != (a[n]["kernels"], a[n]["device_ns"]) for n in a):
    bad.append("diff's operator device work differs from report --by opkernels")
# sequence length 2, top 5
r = reference(f"{F}/{A}.json.gz", seq_len=2, top=5)
got = json.load(open("alexnet_l2.json"))
if [[q["sequence"], q["count"], q["device_ns"], q["streams"]] for q in got["kernel_sequences"]] != r[2]:
    bad.append("alexnet --seq-len 2: frequent sequences differ")
# the steps HTA reads, and HTA
for key, b, out, steps in (("alexnet", A, f"{A}.all.json", None), ("nccl", N, "nccl45.json", (4, 5)),
                           ("sampled0", S, "s551.json", (551, 551))):
    a, syncs = check(f"{b} {steps}", json.load(open(out)), reference(f"{F}/{b}.json.gz", steps))
    agree = 0
    for n, (calls, top, toplen, first, gpu_us, nsync, why) in HTA[key]["frequent"].items():
        o = a[n]
        if why:
            continue
        agree += 1
        got = (o["calls_launching"], o["sequence_calls"], len(o["sequence"]), o["sequence"][0][:40])
        if got != (calls, top, toplen, first):
            bad.append(f"HTA {key} {n}: calls, top count, length, first kernel: ascent {got}, HTA {(calls, top, toplen, first)}")
        # HTA's GPU time holds its sync events' too; within 1 ns per kernel
        if abs(o["device_ns"] + syncs.get(n, 0) - gpu_us * 1000) > o["kernels"] + nsync:
            bad.append(f"HTA {key} {n}: device {o['device_ns']} ns + syncs {syncs.get(n, 0)} ns, HTA {gpu_us} us")
    delays = 0
    for n, (occ, delay_us, why) in HTA[key]["aten_single"].items():
        if why:
            continue
        delays += 1
        o = a[n]
        if o["calls_launching"] != occ or abs(o["launch_delay_mean_ns"] - delay_us * 1000) > 1:   # HTA prints 3 decimals
            bad.append(f"HTA {key} {n}: {o['calls_launching']} calls, mean delay {o['launch_delay_mean_ns']} ns; HTA {occ}, {delay_us} us")
    print(f"{key}: {agree} operators as HTA's frequent sequences, {delays} mean launch delays as HTA's")
if bad:
    print("\n".join(bad[:40]))
    sys.exit(1)
PY
echo "opkernels_kineto: ok"
