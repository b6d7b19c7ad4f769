#!/usr/bin/env bash
# annotations_kineto.sh — GPU user annotations (Kineto's gpu_user_annotation) on the real traces of
# tests/fixtures/kineto that have them: imported on a lane of their own beside their stream ("gpu D
# stream S annotations", a row of their own in the viewer; the stream's lane keeps its device work
# only), and `ascent report --by annotations` (docs/device.md) held to
# 1. the trace JSON (independent, below in Python): per name the count, summed duration, min, max
#    and union of the gpu_user_annotation events;
# 2. Holistic Trace Analysis (github facebookresearch/HolisticTraceAnalysis at commit
#    f4d0062c382f42bd8a74838bcdad1916c7d5d2da, HTA_DISABLE_NS_ROUNDING=1),
#    get_gpu_user_annotation_breakdown(visualize=False, num_kernels=100000): per name the count and
#    `sum (us)` it printed, recorded below (HTA does not run here). HTA keeps the annotations of the
#    trace it parses, which on a trace with two or more ProfilerSteps ends before the last one:
#    on the NCCL DDP trace that is ascent's --steps 4:5 (the annotations starting in steps 4-5).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }

B="nccl_parser_config__nccl_data amd_trace__mi250_minitoy_train_ROCm6_2_kineto tracelens_b200_eager_trace
   tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005 tracelens_torch_compile_triton_trace"
for b in $B; do
  "$ASCENT" import "$F/$b.json.gz" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --by annotations --format json >"$b.json" || fail "report --by annotations on $b"
  # annotations only on their own lanes, and those lanes hold nothing else
  n=$(sqlite3 "$b.db" "SELECT count(*) FROM event e JOIN device_lane dl USING(rank, tid) JOIN thread t USING(rank, tid)
                        WHERE (e.kind = 8) != (t.name LIKE '% annotations')")
  [[ $n == 0 ]] || fail "$b: $n events on the wrong lane"
done
"$ASCENT" report nccl_parser_config__nccl_data.db --by annotations --steps 4:5 --format json >nccl45.json
b=nccl_parser_config__nccl_data
sqlite3 "$b.db" "SELECT name FROM thread WHERE tid IN (SELECT tid FROM device_lane) ORDER BY name" | tr '\n' ';' |
  grep -qx "gpu 0 stream 40;gpu 0 stream 40 annotations;gpu 0 stream 7;gpu 0 stream 7 annotations;" ||
  fail "lane names: $(sqlite3 "$b.db" 'SELECT name FROM thread')"
"$ASCENT" report "$b.db" --by annotations >"$b.txt" || fail "report --by annotations (table)"
grep -Eq "^ +0 +46.78 ms +15 +3.12 ms +1.69 ms +5.99 ms +46.78 ms +nccl:all_reduce$" "$b.txt" || fail "table: $(cat "$b.txt")"
"$ASCENT" report "$b.db" --by annotations --format csv >"$b.csv" || fail "report --by annotations --format csv"
[[ $(head -1 "$b.csv") == "Rank,Total,Count,Mean,Min,Max,Spanned,Name" ]] || fail "csv header: $(head -1 "$b.csv")"
[[ $(wc -l <"$b.csv") -eq 6 ]] || fail "csv: 5 rows expected: $(cat "$b.csv")"
"$ASCENT" view "$b.db" --dump timeline --size 160x40 >"$b.view" || fail "view --dump timeline"
# two streams and their two annotation lanes: four device rows (labels are cut to the row's width)
[[ $(grep -Ec "^r0 t[0-9]+ gpu 0 " "$b.view") == 4 ]] || fail "annotation rows in the viewer: $(head -30 "$b.view")"

python3 - "$F" $B <<'PY' || fail "report --by annotations differs from the trace or from HTA"
import gzip, json, sys

F, names = sys.argv[1], sys.argv[2:]

def reference(path):
    d = json.load(gzip.open(path))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    by = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "gpu_user_annotation":
            ts, dur = round(float(e["ts"]) * 1000), round(float(e["dur"]) * 1000)
            by.setdefault(e["name"], []).append((ts, dur))
    out = {}
    for n, v in by.items():
        v.sort()
        span, end = 0, None
        for s, d in v:
            lo = s if end is None or s > end else end
            span += max(0, s + d - lo)
            end = s + d if end is None else max(end, s + d)
        ds = [d for _, d in v]
        out[n] = dict(count=len(v), total_ns=sum(ds), min_ns=min(ds), max_ns=max(ds), span_ns=span)
    return out

def near(a, b, n):   # durations written in µs with 3 decimals: 1 ns per event of rounding
    return abs(a - b) <= n

for b in names:
    got = {r["name"]: r for r in json.load(open(b + ".json"))["annotations"]}
    want = reference("%s/%s.json.gz" % (F, b))
    assert set(got) == set(want), (b, sorted(got), sorted(want))
    for n, w in want.items():
        g = got[n]
        assert g["count"] == w["count"], (b, n, g, w)
        for k in ("total_ns", "min_ns", "max_ns", "span_ns"):
            assert near(g[k], w[k], w["count"]), (b, n, k, g[k], w[k])

# HTA's get_gpu_user_annotation_breakdown: name -> (count, sum us)
HTA = {
    "nccl45.json": {"## backward ##": (2, 1281.094), "DistributedDataParallel.forward": (2, 195525.719),
                    "Optimizer.step#SGD.step": (2, 18713.373), "nccl:all_reduce": (10, 24226.804),
                    "nccl:broadcast": (4, 83.246)},
    "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json": {"Optimizer.step#SGD.step": (1, 8.483),
                                                             "ProfilerStep#1": (1, 1031.368)},
    "tracelens_b200_eager_trace.json": {
        "## Call CompiledFxGraph fud64jsrxcxliekg7lptyw24yz5k3oa65b73wjfbhz6j2fg6ouu7 ##": (1, 1.986),
        "execute_context_1(888_788544)_generation_0(0)": (1, 84044.109), "nccl:_all_gather_base": (1, 21.955)},
    "tracelens_h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json": {"ProfilerStep#6": (1, 34892.421)},
    "tracelens_torch_compile_triton_trace.json": {
        "## Call CompiledFxGraph fal4xpiah2v6blbfmwwonu52dvevbsmlh743q5tkclrt4gcqpzea ##": (1, 12549.034)},
}
for f, want in HTA.items():
    got = {r["name"]: r for r in json.load(open(f))["annotations"]}
    assert set(got) == set(want), (f, sorted(got), sorted(want))
    for n, (c, us) in want.items():
        assert got[n]["count"] == c, (f, n, got[n]["count"], c)
        assert abs(got[n]["total_ns"] - us * 1000) <= c, (f, n, got[n]["total_ns"], us)
PY
echo "annotations_kineto: ok"
