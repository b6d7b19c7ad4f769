#!/usr/bin/env bash
# critpath_hta.sh — `ascent report --by critpath` (docs/device.md, "The critical path") against
# Holistic Trace Analysis' critical_path_analysis on real traces of tests/fixtures/kineto. HTA does
# not run here: the numbers below are what HTA (github facebookresearch/HolisticTraceAnalysis at
# commit f4d0062c382f42bd8a74838bcdad1916c7d5d2da, HTA_DISABLE_NS_ROUNDING=1) printed for
#   g, ok = TraceAnalysis(trace_dir=<folder holding the one trace>).critical_path_analysis(rank=0,
#           annotation=A, instance_id=I)
# with the path's length and per-cause totals from g.get_critical_path_breakdown() (duration summed,
# and by bound_by), len(g.critical_path_nodes), len(g.critical_path_events_set), the graph's
# len(g.node_list) less the start and end points HTA gives Kineto's cuda_sync events (they have no
# edges) and g.number_of_edges(), and the duration by s_name of one top event:
#   - AlexNet (HTA's own critical-path example): A = "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
#     I = 1 — ascent --window A --instance 1. Path 35,834 us: cpu_bound 32,042, gpu_compute_bound
#     3,712, gpu_kernel_kernel_overhead 50, gpu_kernel_launch_overhead 30; 149 points, 77 events;
#     graph 462 points (of them 44 of the window's 22 cuda_sync events), 421 edges; cudaMalloc 31,525 us.
#   - H100 Qwen inference: A = "ProfilerStep", I = 0 (the CPU's ProfilerStep#6; I = 1 is the same
#     step's GPU annotation, which HTA takes as a second instance) — ascent --steps 6. Path
#     33,716.98392 us: cpu_bound 1,777.910029, gpu_compute_bound 30,253.447, kernel_kernel
#     1,678.824893, launch 6.802002; 3,074 points, 1,538 events; graph 14,610 points, 14,609 edges;
#     the sm90_xmma_gemm kernel 8,621.050781 us.
#   - NCCL DDP: A = "ProfilerStep", I = 1 (ProfilerStep#5) — ascent --steps 5. Path 189,995.701 us,
#     all cpu_bound; 15,362 points, 7,681 events; graph 17,906 points, 17,904 edges. ascent's path is
#     8.872 us longer on purpose: HTA gives cudaEventQuery's own time weight 0 as if it waited for the
#     device (its list of synchronising calls); a query returns at once, so ascent counts it as CPU
#     time (two cudaEventQuery calls on the path, 6.072 + 2.800 us).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }

ALEX=critical_path__alexnet__benchmark_result_2869224_1695835535_trace
H100=tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005
NCCL=nccl_parser_config__nccl_data
for b in $ALEX $H100 $NCCL; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
done
W="[param|pytorch.model.alex_net|0|0|0|measure|forward]"
"$ASCENT" report $ALEX.db --by critpath --window "$W" --instance 1 --format json >alex.json || fail "alexnet json"
"$ASCENT" report $H100.db --by critpath --steps 6 --format json >h100.json || fail "h100 json"
"$ASCENT" report $NCCL.db --by critpath --steps 5 --format json >nccl.json || fail "nccl json"

"$ASCENT" report $ALEX.db --by critpath --window "$W" --instance 1 >alex.txt || fail "alexnet table"
grep -q "Critical path, rank 0: 35.83 ms" alex.txt || fail "table's summary line: $(cat alex.txt)"
grep -q "cpu_bound  cudaMalloc" alex.txt || fail "table's top events: $(cat alex.txt)"
"$ASCENT" report $ALEX.db --by critpath --window "$W" --instance 1 --format csv >alex.csv || fail "alexnet csv"
[[ $(head -1 alex.csv) == "Rank,Time,Share,Cause" ]] || fail "csv header: $(head -1 alex.csv)"
grep -qx "0,32042000,89.4%,cpu_bound" alex.csv || fail "csv rows: $(cat alex.csv)"
# a window that names nothing: no path, said so; a trace without device lanes: none either
"$ASCENT" report $ALEX.db --by critpath --window "no such range" >none.txt || fail "report with an empty window"
grep -q "Critical path: no rank" none.txt || fail "empty window: $(cat none.txt)"

python3 - <<'PY' || fail "report --by critpath differs from HTA's numbers"
import json

def one(f):
    d = json.load(open(f))["critpath"]
    assert len(d) == 1, (f, d)
    return d[0]

def check(name, x, hta_us, causes_us, nodes, events, graph_nodes, graph_edges, top=None, extra_ns=0):
    """hta_us: HTA's path length; causes_us: its duration per bound_by; top: (name, us) of one
    top event; extra_ns: what ascent's path has more on purpose (see the header)"""
    assert not x["cycle"], name
    got = x["length_ns"]
    assert abs(got - (round(hta_us * 1000) + extra_ns)) <= 1, f"{name}: length {got} ns, HTA {hta_us} us + {extra_ns} ns"
    assert sum(x["cause_ns"].values()) == got, (name, x["cause_ns"], got)
    for k, v in causes_us.items():
        want = round(v * 1000) + (extra_ns if k == "cpu_bound" else 0)
        assert abs(x["cause_ns"][k] - want) <= 1, f"{name}: {k} {x['cause_ns'][k]} ns, HTA {v} us"
    for k in x["cause_ns"]:
        if k not in causes_us:
            assert x["cause_ns"][k] == 0, (name, k, x["cause_ns"][k])
    assert x["path_nodes"] == nodes, (name, "points on the path", x["path_nodes"], nodes)
    assert x["path_events"] == events, (name, "events on the path", x["path_events"], events)
    assert x["graph_nodes"] == graph_nodes, (name, "graph points", x["graph_nodes"], graph_nodes)
    assert x["graph_edges"] == graph_edges, (name, "graph edges", x["graph_edges"], graph_edges)
    if top:
        t = [y for y in x["top"] if y["name"].startswith(top[0])]
        # HTA sums each event's float microseconds: up to a nanosecond apart per event
        assert t and abs(sum(y["ns"] for y in t) - round(top[1] * 1000)) <= sum(y["events"] for y in t), (name, top, t)

check("alexnet", one("alex.json"), 35834,
      {"cpu_bound": 32042, "gpu_compute_bound": 3712, "gpu_kernel_kernel_overhead": 50,
       "gpu_kernel_launch_overhead": 30}, 149, 77, 462 - 44, 421, ("cudaMalloc", 31525))
check("h100", one("h100.json"), 33716.98392,
      {"cpu_bound": 1777.910029, "gpu_compute_bound": 30253.447, "gpu_kernel_kernel_overhead": 1678.824893,
       "gpu_kernel_launch_overhead": 6.802002}, 3074, 1538, 14610, 14609,
      ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 8621.050781))
check("nccl", one("nccl.json"), 189995.701, {"cpu_bound": 189995.701}, 15362, 7681, 17906, 17904,
      extra_ns=8872)
x = one("alex.json")
assert abs(x["cause_pct"]["cpu_bound"] - 100 * 32042 / 35834) < 1e-9, x["cause_pct"]
PY
echo "critpath_hta: ok"
