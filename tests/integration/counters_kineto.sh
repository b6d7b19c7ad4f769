#!/usr/bin/env bash
# counters_kineto.sh — CUPTI counters per kernel and operator (`ascent report --by counters`,
# docs/device.md) on the real trace taken with CUPTI range profiling
# (tests/fixtures/kineto/cupti_profiler__…: AlexNet forward on an A100, 77 kernels as
# cuda_profiler_range events with 9 counters each), held to
# 1. the trace JSON (independent, below in Python): every range's name and counter values, in time
#    order, and its pairing with the n-th cudaLaunchKernel call;
# 2. Holistic Trace Analysis (github facebookresearch/HolisticTraceAnalysis at commit
#    f4d0062c382f42bd8a74838bcdad1916c7d5d2da, HTA_DISABLE_NS_ROUNDING=1),
#    get_cupti_counter_data_with_operators(ranks=[0]): each kernel's op_stack (recorded below as the
#    8 distinct stacks and the stack of each of the 77 kernels in time order), and its counters summed
#    by bottom_level_op and by top_level_op (recorded below; HTA does not run here).
# And the GPU user annotations of the same kind of trace are on lanes of their own (import).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }
b=cupti_profiler__benchmark_result_924719_1679055439_trace

"$ASCENT" import "$F/$b.json.gz" -o c.db -q 2>c.err || fail "import: $(cat c.err)"
sqlite3 c.db "SELECT device, stream FROM device_lane" | grep -qx "0|-1" || fail "no counters lane (stream -1)"
[[ $(sqlite3 c.db "SELECT name FROM thread WHERE tid IN (SELECT tid FROM device_lane)") == "gpu 0 counters (CUPTI)" ]] ||
  fail "lane name: $(sqlite3 c.db 'SELECT name FROM thread')"
"$ASCENT" report c.db --by counters --format json >c.json || fail "report --by counters --format json"
"$ASCENT" report c.db --by counters >c.txt || fail "report --by counters"
grep -q "77 kernels, 77 paired with their launch" c.txt || fail "table title: $(head -5 c.txt)"
grep -q "smsp__sass_thread_inst_executed_op_<X>_pred_on.sum" c.txt || fail "counter names: $(head -5 c.txt)"
grep -Eq "^ +0 +28 +fadd 945340416  ffma 2.389e\+10  fmul 408567808  aten::cudnn_convolution$" c.txt ||
  fail "operator row: $(cat c.txt)"
"$ASCENT" report c.db --by counters --format csv >c.csv || fail "report --by counters --format csv"
[[ $(head -1 c.csv) == "Level,Rank,Kernels,Counter,Sum,Name" ]] || fail "csv header: $(head -1 c.csv)"
grep -qx "operator,0,28,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,23887265792,aten::cudnn_convolution" c.csv ||
  fail "csv row: $(grep cudnn_conv c.csv)"

python3 - "$F/$b.json.gz" c.json <<'PY' || fail "report --by counters differs from the trace or from HTA"
import gzip, json, sys

ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
got = json.load(open(sys.argv[2]))
ks = got["counter_kernels"]

# 1. the trace: ranges in time order, their names and counters; launches paired in time order
ranges = sorted((e for e in ev if e.get("cat") == "cuda_profiler_range"), key=lambda e: e["ts"])
launches = sorted((e for e in ev if e.get("cat") == "cuda_runtime" and e["name"].startswith("cudaLaunchKernel")),
                  key=lambda e: e["ts"])
assert len(ranges) == len(launches) == len(ks) == 77, (len(ranges), len(launches), len(ks))
t0 = min(e["ts"] for e in ev if e.get("ph") == "X")
for i, (r, l, k) in enumerate(zip(ranges, launches, ks)):
    assert k["name"] == r["name"], (i, k["name"][:80], r["name"][:80])
    assert k["counters"] == r["args"], (i, k["counters"], r["args"])
    assert k["linked"], i
    # times relative to the first event (µs in the file, ns here): the launch is the i-th call's start
    assert round((r["ts"] - t0) * 1000) - k["start_ns"] == round((l["ts"] - t0) * 1000) - k["launch_ns"], i

# 2. HTA's op stacks per kernel (time order) and its sums by bottom and top level operator
STACKS = ["aten::rand > aten::uniform_",
          "aten::conv2d > aten::convolution > aten::_convolution > aten::cudnn_convolution",
          "aten::conv2d > aten::convolution > aten::_convolution > aten::add_",
          "aten::relu_ > aten::clamp_min_",
          "aten::max_pool2d > aten::max_pool2d_with_indices",
          "aten::adaptive_avg_pool2d > aten::_adaptive_avg_pool2d",
          "aten::dropout > aten::native_dropout",
          "aten::linear > aten::addmm"]
SEQ = "01234111123411123111231112345677367737712341111234111231112311123456773677377"
for i, k in enumerate(ks):
    assert " > ".join(k["op_stack"]) == STACKS[int(SEQ[i])], (i, k["op_stack"], STACKS[int(SEQ[i])])
    assert k["top_level_op"] == k["op_stack"][0] and k["bottom_level_op"] == k["op_stack"][-1], i
HTA = {
    "operator": {
        "aten::_adaptive_avg_pool2d": {"ffma": 20146616, "fadd": 5237384},
        "aten::add_": {"ffma": 124157952, "hfma": 248315904},
        "aten::addmm": {"fmul": 14680064, "ffma": 15067250688, "fadd": 13369344},
        "aten::clamp_min_": {},
        "aten::cudnn_convolution": {"fmul": 408567808, "ffma": 23887265792, "fadd": 945340416},
        "aten::max_pool2d_with_indices": {"hfma": 22609920},
        "aten::native_dropout": {"fmul": 6815744, "ffma": 4816896, "fadd": 704512},
        "aten::uniform_": {"ffma": 38731776, "hfma": 4866048}},
    "top_operator": {
        "aten::adaptive_avg_pool2d": {"ffma": 20146616, "fadd": 5237384},
        "aten::conv2d": {"fmul": 408567808, "ffma": 24011423744, "fadd": 945340416, "hfma": 248315904},
        "aten::dropout": {"fmul": 6815744, "ffma": 4816896, "fadd": 704512},
        "aten::linear": {"fmul": 14680064, "ffma": 15067250688, "fadd": 13369344},
        "aten::max_pool2d": {"hfma": 22609920},
        "aten::rand": {"ffma": 38731776, "hfma": 4866048},
        "aten::relu_": {}},
}
short = lambda c: c.split("_op_")[1].split("_pred")[0]
for level, want in HTA.items():
    rows = {g["name"]: g for g in got["counter_groups"] if g["by"] == level}
    assert set(rows) == set(want), (level, sorted(rows), sorted(want))
    for name, sums in want.items():
        have = {short(c): v for c, v in rows[name]["sums"].items() if v}
        assert have == sums, (level, name, have, sums)
kern = [g for g in got["counter_groups"] if g["by"] == "kernel"]
assert sum(g["kernels"] for g in kern) == 77 and len(kern) == len({r["name"] for r in ranges}), len(kern)
PY

# a trace whose counter ranges and launches differ in number: counters kept, not paired, said so
python3 - "$F/$b.json.gz" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
n = 0
for i, e in enumerate(d["traceEvents"]):
    if e.get("name") == "cudaLaunchKernel" and n == 0:
        n = i
del d["traceEvents"][n]
json.dump(d, open("fewer.json", "w"))
PY
"$ASCENT" import fewer.json -o f.db 2>f.err || fail "import of a trace short of a launch: $(cat f.err)"
grep -q "77 cuda_profiler_range events, 76 cudaLaunchKernel calls" f.err || fail "no warning: $(cat f.err)"
"$ASCENT" report f.db --by counters >f.txt || fail "report --by counters (unpaired)"
grep -q "77 kernels, 0 paired with their launch" f.txt || fail "unpaired: $(head -5 f.txt)"
grep -q "(no operator)" f.txt || fail "unpaired kernels not shown without operator: $(cat f.txt)"
echo "counters_kineto: ok"
