#!/usr/bin/env bash
# device_steps.sh — device work by the step that launched it (db_step_work, docs/device.md "Device
# work per step"), as `ascent report --by step` prints it (table and the `device_steps` array of
# --format json), held to an independent computation from the trace JSON on real Kineto traces of
# tests/fixtures/kineto: each device event (kernel, gpu_memcpy, gpu_memset) finds its launching
# runtime call by its `correlation` argument (ascent by its launch link: Kineto's ac2g flows, or the
# importer's links by correlation where a trace has none), and belongs to the CPU ProfilerStep#N
# whose window holds the call's start; before the first step, after a step (before the next), and
# without a launching call are rows of their own. Per row: events, summed duration, union (busy),
# union of compute kernels, and the part of the union inside the step's window, all equal to the
# nanosecond; the rows of a rank add up to every device event of the trace. `--steps A:B` gives
# those steps' rows only, and `report --by device --steps A:B` counts the same events.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }
TRACES="nccl_parser_config__nccl_data trace_filter__sampled_rank-0 trace_filter__sampled_rank-1
        kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace tracelens_mi300_resnet_act_checkpoint
        critical_path__alexnet__benchmark_result_2869224_1695835535_trace tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005"
for b in $TRACES; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --by step --format json >"$b.json" || fail "report --by step --format json on $b"
done
b=nccl_parser_config__nccl_data
"$ASCENT" report "$b.db" --by step >"$b.txt" || fail "report --by step (table)"
grep -q "^Device work by the step that launched it" "$b.txt" || fail "no device-step table: $(cat "$b.txt")"
grep -Eq "^ +all +0 +[0-9]+ " "$b.txt" || fail "no total row: $(cat "$b.txt")"
"$ASCENT" report "$b.db" --by step --steps 5:5 --format json >"$b.s5.json" || fail "report --by step --steps 5:5"
"$ASCENT" report "$b.db" --by device --steps 5:5 --format json >"$b.d5.json" || fail "report --by device --steps 5:5"
"$ASCENT" report "$b.db" --by comm --steps 5:5 --format json >"$b.c5.json" || fail "report --by comm --steps 5:5"
b=kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace
"$ASCENT" report "$b.db" --by step --steps 6:7 --format json >"$b.s67.json" || fail "report --by step --steps 6:7"
"$ASCENT" report "$b.db" --by device --steps 6:7 --format json >"$b.d67.json" || fail "report --by device --steps 6:7"
"$ASCENT" report "$b.db" --by op --steps 6:7 --format json >"$b.o67.json" || fail "report --by op --steps 6:7"
"$ASCENT" report tracelens_mi300_resnet_act_checkpoint.db --by op --steps 15:15 --format json >mi300.o15.json ||
  fail "report --by op --steps 15:15"
# the viewer's tables under a step restriction (view_op, built on the first view): device work by
# launching step, as report's
"$ASCENT" view "$b.db" --steps 6:7 --dump ops --size 140x20 >"$b.ops.view" || fail "view --steps 6:7 --dump ops"
# the viewer's steps view: the same rows' busy time and how far past the step's end they ran
"$ASCENT" view "$b.db" --dump steps --size 140x20 >"$b.view" || fail "view --dump steps"
grep -Eq "launched +past end" "$b.view" || fail "steps view has no launched columns: $(cat "$b.view")"
grep -Eq "^ +10 .* 100\.53 ms +16\.24 ms *$" "$b.view" || fail "steps view's step 10: $(cat "$b.view")"
for k in 5 6 7 8 9; do
  "$ASCENT" report "$b.db" --by device --steps 5:$k --format json >"$b.upto$k.json" || fail "report --by device --steps 5:$k"
done
"$ASCENT" report nccl_parser_config__nccl_data.db --by device --steps 4:4 --format json >nccl.upto4.json ||
  fail "report --by device --steps 4:4"

TRACES="$TRACES" python3 - <<'PY' || fail "device work per launching step differs from the trace"
import collections, decimal, gzip, json, os
F = os.environ["ASCENT_ROOT"] + "/tests/fixtures/kineto/"
RUNTIME = {"cuda_runtime", "cuda_driver", "Runtime"}
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}

def ns(x):
    """microseconds (read as exact decimals) to ns, as the trace writes them"""
    return int((decimal.Decimal(x) * 1000).to_integral_value(decimal.ROUND_HALF_UP))

def compute(name, cat):
    """HTA's compute class by name (docs/device.md), written out here; copies, memsets and device
    collectives (nccl/rccl in the name) are not compute"""
    if cat in ("gpu_memcpy", "gpu_memset", "Memcpy", "Memset") or "nccl" in name or "rccl" in name:
        return False
    if any(name.startswith(p) for p in ("hip", "hccl", "Memcpy", "Memset", "dma", "Stream Wait Event", "runFunction",
                                        "job_exe", "packet", "pe_exe", "cpum_exe_subgraph",
                                        "collective_subgraph_execution")):
        return False
    if any(c in name for c in ("ncclKernel", "Memcpy", "Memset", "dma", "Sync")):
        return False
    return not (name.startswith("cuda") and "LaunchKernel" in name[4:])

def union(iv):
    t, end = 0, None
    for a, b in sorted(iv):
        if end is None or a > end:
            t, end = t + b - a, b
        elif b > end:
            t, end = t + b - end, b
    return t

def reference(b):
    """{(launched, step): row} from the trace JSON"""
    tr = json.load(gzip.open(F + b + ".json.gz"), parse_float=decimal.Decimal)
    ev = tr["traceEvents"] if isinstance(tr, dict) else tr
    call, steps, dev = {}, [], []
    for e in ev:
        if e.get("ph") != "X":
            continue
        cat, a, name = e.get("cat", ""), e.get("args") or {}, e.get("name", "")
        if name.startswith("ProfilerStep#") and cat != "gpu_user_annotation":   # the host's steps
            steps.append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), int(name[13:])))
        if cat in RUNTIME and "correlation" in a:
            call[a["correlation"]] = min(call.get(a["correlation"], float("inf")), ns(e["ts"]))
        if cat in DEVICE:
            dev.append(e)
    steps.sort()

    def row(t):
        if t is None:
            return ("unlinked", None)
        if not steps:
            return ("no step", None)
        if t < steps[0][0]:
            return ("before", steps[0][2])
        k = max(i for i, s in enumerate(steps) if s[0] <= t)
        return ("step", steps[k][2]) if t < steps[k][1] else ("after", steps[k][2])

    acc = collections.defaultdict(lambda: [0, 0, collections.defaultdict(list), collections.defaultdict(list), 0, 0])
    for e in dev:
        r = acc[row(call.get((e.get("args") or {}).get("correlation")))]
        s0 = ns(e["ts"])
        s1 = s0 + ns(e["dur"])
        r[0] += 1
        r[1] += s1 - s0
        r[2][e["pid"]].append((s0, s1))
        if compute(e.get("name", ""), e["cat"]):
            r[3][e["pid"]].append((s0, s1))
        if "nccl" not in e.get("name", "") and "rccl" not in e.get("name", ""):   # not a device collective
            r[4] += 1
            r[5] += s1 - s0
    win = {s[2]: s for s in steps}
    out = {}
    for k, (n, d, iv, cv, nk, dk) in acc.items():
        x = {"events": n, "device_ns": d, "busy_ns": sum(union(v) for v in iv.values()),
             "compute_ns": sum(union(v) for v in cv.values()), "kernels": nk, "kernel_ns": dk}
        if k[0] == "step":
            lo, hi, _ = win[k[1]]
            x["in_step_ns"] = sum(union([(max(p, lo), min(q, hi)) for p, q in v if min(q, hi) > max(p, lo)])
                                  for v in iv.values())
        out[k] = x
    for s in steps:   # a step's row is there even when it launched nothing
        out.setdefault(("step", s[2]), {"events": 0, "device_ns": 0, "busy_ns": 0, "compute_ns": 0, "in_step_ns": 0})
    return out, len(dev), sum(ns(e["dur"]) for e in dev)

KEYS = ("events", "device_ns", "busy_ns", "compute_ns", "in_step_ns")
summary, ref = [], {}
for b in os.environ["TRACES"].split():
    got = {(r["launched"], r["step"]): r for r in json.load(open(b + ".json"))["device_steps"]}
    want, nev, dns = reference(b)
    ref[b] = want
    assert sorted(got, key=str) == sorted(want, key=str), (b, sorted(got, key=str), sorted(want, key=str))
    for k, w in want.items():
        for key in KEYS:
            if key in w:
                assert got[k][key] == w[key], f"{b} {k} {key}: ascent {got[k][key]}, trace {w[key]}"
    # every device event in exactly one row
    assert sum(r["events"] for r in got.values()) == nev, (b, nev)
    assert sum(r["device_ns"] for r in got.values()) == dns, (b, dns)
    # the figures reported (docs/device.md): busy time of step-launched work outside its step's window
    st = [r for r in got.values() if r["launched"] == "step"]
    busy = sum(r["busy_ns"] for r in st)
    out = busy - sum(r["in_step_ns"] for r in st)
    summary.append(f"{b}: {nev} device events, {len(st)} steps, {100 * out / busy if busy else 0:.1f}% of their busy time outside the launching step's window")
print("\n".join(summary))

# --steps: the selected steps' rows only, the same events `report --by device --steps` counts
def rows(p):
    return {(r["launched"], r["step"]): r for r in json.load(open(p))["device_steps"]}
for b, sel, s in (("nccl_parser_config__nccl_data", "s5", {5}),
                  ("kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace", "s67", {6, 7})):
    got, whole = rows(f"{b}.{sel}.json"), rows(b + ".json")
    assert sorted(got) == sorted(("step", k) for k in s), (b, sorted(got))
    assert all(got[k] == whole[k] for k in got), b
    d = json.load(open(f"{b}.d{sel[1:]}.json"))["devices"]
    assert sum(x["events_counted"] for x in d) == sum(r["events"] for r in got.values()), (b, d, got)

# --steps in the operator table: kernels, copies and memsets by the step that launched them (device
# collectives are communication, not in it)
for b, p, s in (("kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace", "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.o67.json", (6, 7)),
                ("tracelens_mi300_resnet_act_checkpoint", "mi300.o15.json", (15,))):
    ops = [o for o in json.load(open(p))["ops"] if o["kind"] in ("kernel", "memcpy", "memset")]
    want = [ref[b][("step", k)] for k in s]
    got = (sum(o["instances"] for o in ops), sum(o["total_ns"] for o in ops))
    assert got == (sum(w["kernels"] for w in want), sum(w["kernel_ns"] for w in want)), (b, got, want)
# the viewer's summary (view_op) for steps 6-7: the same kernels, copies and memsets
import sqlite3
b = "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace"
got = sqlite3.connect(b + ".db").execute("SELECT sum(count), sum(total_ns) FROM view_op WHERE step BETWEEN 6 AND 7"
                                         " AND kind IN (11, 12, 13)").fetchone()
want = [ref[b][("step", k)] for k in (6, 7)]
assert tuple(got) == (sum(w["kernels"] for w in want), sum(w["kernel_ns"] for w in want)), (got, want)

# --steps in the collective table: device collectives by the step that launched them
b = "nccl_parser_config__nccl_data"
w = ref[b][("step", 5)]
c = json.load(open(b + ".c5.json"))["comm"]
got = (sum(x["count"] for x in c), sum(x["total_ns"] for x in c))
assert got == (w["events"] - w["kernels"], w["device_ns"] - w["kernel_ns"]) and got[0] > 0, (got, w)

# Holistic Trace Analysis (github facebookresearch/HolisticTraceAnalysis at commit
# f4d0062c382f42bd8a74838bcdad1916c7d5d2da, HTA_DISABLE_NS_ROUNDING=1) counts the device work
# launched before the start of the last ProfilerStep (by correlation id). Per step: HTA's
# get_temporal_breakdown() on the trace with the ProfilerStep events after step k + 1 removed
# counts the work launched before step k + 1 starts, and its events (the rows of its trace with a
# stream) the events launched up to step k. HTA printed (events, kernel_time, idle, compute,
# non-compute us); ascent's `report --by device --steps FIRST:k` counts the same work (neither trace
# launches device work before its first step or between steps), and the step rows of `--by step`
# hold HTA's per-step differences of events.
HTA = {"kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace": {
           5: (1516, 118872, 18243, 98598, 2031), 6: (3032, 294025, 92790, 197168, 4067),
           7: (4548, 473758, 171905, 295764, 6089), 8: (6064, 648322, 245819, 394387, 8116),
           9: (7580, 830494, 327463, 492891, 10140)},
       "nccl_parser_config__nccl_data": {
           4: (1258, 215769.4239375, 166330.502804697, 38506.406000003, 10932.515132799),
           5: (2516, 435587.5616796875, 336419.7146875525, 76935.828000009, 22232.018992125)}}
for b, per in HTA.items():
    rows_ = rows(b + ".json")
    prev = 0
    for k, (n, span, idle, comp, noncomp) in sorted(per.items()):
        assert rows_[("step", k)]["events"] == n - prev, (b, k, rows_[("step", k)], n - prev)
        prev = n
        p = f"{b}.upto{k}.json" if b.startswith("kineto") else ("nccl.upto4.json" if k == 4 else None)
        if p is None:
            continue   # steps 4-5 of NCCL DDP: report --by device's default, held by device_hta.sh
        d = json.load(open(p))["devices"]
        assert len(d) == 1 and d[0]["events_counted"] == n, (b, k, d)
        for key, want in (("span_ns", span), ("idle_ns", idle), ("compute_ns", comp), ("non_compute_ns", noncomp)):
            assert abs(d[0][key] - want * 1000) <= 1e-6 * want * 1000 + 1, f"{b} up to step {k} {key}: ascent {d[0][key]}, HTA {want} us"
PY
echo "device_steps: ok"
