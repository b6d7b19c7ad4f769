#!/usr/bin/env bash
# diff_kineto.sh — `ascent diff A B` (docs/diff.md) on real PyTorch profiler traces
# (tests/fixtures/kineto), imported on the fly:
#  1. the two ranks of trace_filter__sampled against Holistic Trace Analysis' TraceDiff: every name's
#     counts and totals on both sides, and its count category, equal what HTA computed
#     (tests/fixtures/kineto/trace_filter__sampled_hta_trace_diff.csv.gz: HTA at commit
#     f4d0062c382f42bd8a74838bcdad1916c7d5d2da, TraceDiff.compare_traces(LabeledTrace(rank-0's
#     folder), LabeledTrace(rank-1's folder), control_iteration=[551, 552], test_iteration=[551, 552])
#     — all iterations, CPU and GPU — with HTA_DISABLE_NS_ROUNDING=1; durations in us). Differences on
#     purpose: ProfilerStep#N rows are HTA's and not ascent's (steps are the overview: their numbers
#     differ between runs, so as names they would never match); without --steps ascent also counts
#     what lies outside every step (the trace's "PyTorch Profiler (0)" span), as HTA never does.
#  2. a trace against itself (the same path twice): every row unchanged, every change 0;
#  3. CPU operators with their device work, against a computation of its own here in SQL and
#     Python on the imported profile (each launch link's device event to the operators open on the
#     launching thread);
#  4. bad inputs: a missing file, a file that is no trace, a rank or steps a side lacks; nothing
#     is left in TMPDIR.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p tmp
export TMPDIR="$PWD/tmp"
R0="$F/trace_filter__sampled_rank-0.json.gz"
R1="$F/trace_filter__sampled_rank-1.json.gz"

# 1. against HTA
"$ASCENT" diff "$R0" "$R1" --steps 551:552 --format json >steps.json 2>steps.err || fail "diff --steps: $(cat steps.err)"
"$ASCENT" diff "$R0" "$R1" --format json >all.json 2>all.err || fail "diff: $(cat all.err)"
python3 - "$F/trace_filter__sampled_hta_trace_diff.csv.gz" <<'PY' || fail "diff differs from HTA TraceDiff"
import csv, gzip, json, sys
hta = {r["name"]: r for r in csv.DictReader(gzip.open(sys.argv[1], "rt"))}
SIGN = {"added": "+", "increased": "+", "removed": "-", "decreased": "-", "unchanged": "="}

def by_name(path):
    d = json.load(open(path))
    out = {}
    for o in d["ops"]:
        assert o["name"] not in out, ("a name under two kinds", o)
        out[o["name"]] = o
    return d, out

d, asc = by_name("steps.json")
names = [n for n in hta if not n.startswith("ProfilerStep#")]
assert len(names) == 400, len(names)
for n in names:
    h, a = hta[n], asc.get(n)
    assert a, ("HTA has it, ascent not", n)
    want = (int(h["a_count"]), round(float(h["a_total_us"]) * 1000), int(h["b_count"]), round(float(h["b_total_us"]) * 1000))
    got = (a["a_count"], a["a_total_ns"], a["b_count"], a["b_total_ns"])
    assert got == want, (n, "ascent", got, "HTA", want)
    assert SIGN[a["category"]] == h["count_change"], (n, a["category"], h["count_change"])
    # HTA's five lists (ops_diff) from the counts
    if want[0] == 0:
        assert a["category"] == "added", a
    if want[2] == 0:
        assert a["category"] == "removed", a
extra = sorted(set(asc) - set(names))
assert not extra, ("ascent has names HTA has not", extra)
# sorted by the absolute change in total time
ch = [abs(o["b_total_ns"] - o["a_total_ns"]) for o in d["ops"]]
assert ch == sorted(ch, reverse=True)
# the largest change (HTA's too): the rowwise-adagrad backward kernel, 23.469 -> 57.240 ms
top = d["ops"][0]
assert top["kind"] == "kernel" and top["a_total_ns"] == 23469000 and top["b_total_ns"] == 57240000, top
ov = d["overview"]
assert ov["a"]["steps"] == 2 and ov["b"]["steps"] == 2, ov
# without --steps: the same rows plus the span outside every step
_, whole = by_name("all.json")
assert sorted(set(whole) - set(asc)) == ["PyTorch Profiler (0)"], sorted(set(whole) - set(asc))
for n in names:
    assert (whole[n]["a_count"], whole[n]["b_count"]) == (asc[n]["a_count"], asc[n]["b_count"]), n
print("HTA TraceDiff: %d names equal" % len(names))
PY

# the table and CSV forms; --by restricts the rows
"$ASCENT" diff "$R0" "$R1" --steps 551:552 >t.txt 2>&1 || fail "diff (table)"
grep -q "mean step time" t.txt && grep -q "communication not overlapped" t.txt || fail "no overview: $(head -20 t.txt)"
grep -q "Every name, both sides" t.txt || fail "no name table"
"$ASCENT" diff "$R0" "$R1" --steps 551:552 --format csv >t.csv
head -1 t.csv | grep -q "^Change,Change (%),A total,B total,A count,B count" || fail "csv header: $(head -1 t.csv)"
[[ $(($(wc -l <t.csv) - 1)) -eq 400 ]] || fail "csv: 400 rows expected, $(($(wc -l <t.csv) - 1))"
for by in op kernel comm; do
  "$ASCENT" diff "$R0" "$R1" --by $by --format json >by.json
  python3 - $by <<'PY' || fail "--by $1"
import json, sys
G = {"op": {"op", "range", "phase", "data", "io", "checkpoint", "microbatch"}, "kernel": {"kernel", "memcpy", "memset"},
     "comm": {"comm", "p2p", "wait"}}[sys.argv[1]]
ops = json.load(open("by.json"))["ops"]
assert ops and all(o["kind"] in G for o in ops), sys.argv[1]
PY
done
"$ASCENT" diff "$R0" "$R1" --by step --format csv | grep -q "mean step time" || fail "--by step csv"

# 2. a trace against itself: nothing changed
N="$F/nccl_parser_config__nccl_data.json.gz"
"$ASCENT" diff "$N" "$N" --format json >self.json 2>/dev/null || fail "diff of a trace with itself"
python3 - <<'PY' || fail "a trace against itself"
import json
d = json.load(open("self.json"))
assert d["ops"] and d["comm"] and d["op_device"], {k: len(d[k]) for k in ("ops", "comm", "op_device")}
for o in d["ops"]:
    assert o["category"] == "unchanged" and o["diff_total_ns"] == 0, o
    assert o["a_count"] == o["b_count"] > 0 and o["a_total_ns"] == o["b_total_ns"], o
for o in d["comm"] + d["op_device"]:
    for k in o:
        if k.startswith("a_"):
            assert o[k] == o["b_" + k[2:]], (k, o)
assert d["overview"]["a"] == d["overview"]["b"], d["overview"]
PY

# 3. operators with their device work, computed again here
A="$F/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
"$ASCENT" import "$A" -o alexnet.db -q 2>/dev/null
"$ASCENT" diff alexnet.db "$A" --format json --by kernel >alex.json 2>/dev/null || fail "diff alexnet"
python3 - <<'PY' || fail "operators' device work differs from the computation here"
import collections, json, sqlite3
db = sqlite3.connect("alexnet.db")
name = dict(db.execute("SELECT id, value FROM string"))
ops = collections.defaultdict(list)   # (rank, tid) -> [(start, end, name)]
for r, t, s, d, n in db.execute("SELECT rank, tid, start_ns, dur_ns, name_id FROM event WHERE kind = 0"):
    ops[(r, t)].append((s, s + d, name[n]))
dev, self_, launched = collections.Counter(), collections.Counter(), collections.Counter()
for r, t, ns, dur in db.execute(
        "SELECT f.rank, f.src_tid, f.src_ns, max(e.dur_ns) FROM flow f JOIN event e ON e.rank = f.rank AND"
        " e.tid = f.dst_tid AND e.start_ns = f.dst_ns WHERE f.kind = 0 AND e.kind IN (1, 11, 12, 13) GROUP BY f.rowid"):
    open_ = [o for o in ops[(r, t)] if o[0] <= ns < o[1]]
    if not open_:
        continue
    for n in {o[2] for o in open_}:
        dev[n] += dur
        launched[n] += 1
    inner = max(open_, key=lambda o: (o[0], -o[1]))
    self_[inner[2]] += dur
rows = {o["name"]: o for o in json.load(open("alex.json"))["op_device"]}
assert set(rows) == set(dev), sorted(set(rows) ^ set(dev))
for n, o in rows.items():
    assert (o["a_device_ns"], o["a_device_self_ns"], o["a_launched"]) == (dev[n], self_[n], launched[n]), (n, o)
    assert o["a_device_ns"] == o["b_device_ns"] and o["category"] == "unchanged", o
# every linked kernel's time reaches an innermost operator once
d = json.load(open("alex.json"))["overview"]["a"]
assert sum(self_.values()) + d["unattributed_ns"] == d["linked_ns"], d
print("operators' device work: %d operators equal" % len(rows))
PY

# 4. bad inputs
set +e
"$ASCENT" diff nothere.json "$R1" >/dev/null 2>bad1.err; rc1=$?
printf 'not a trace\n' >notes.txt
"$ASCENT" diff "$R0" notes.txt >/dev/null 2>bad2.err; rc2=$?
"$ASCENT" diff "$R0" "$R1" --rank-b 7 >/dev/null 2>bad3.err; rc3=$?
"$ASCENT" diff "$R0" "$R1" --steps-a 1:2 >/dev/null 2>bad4.err; rc4=$?
"$ASCENT" diff "$R0" >/dev/null 2>bad5.err; rc5=$?
set -e
[[ $rc1 -eq 2 ]] && grep -q "A 'nothere.json' cannot be read" bad1.err || fail "missing file: rc $rc1, $(cat bad1.err)"
[[ $rc2 -eq 2 ]] && grep -q "B 'notes.txt' is neither an ascent profile nor a trace" bad2.err || fail "not a trace: rc $rc2, $(cat bad2.err)"
[[ $rc3 -eq 2 ]] && grep -q "no rank 7 in B" bad3.err || fail "--rank-b 7: rc $rc3, $(cat bad3.err)"
[[ $rc4 -eq 2 ]] && grep -q "has no step in 1:2" bad4.err || fail "--steps-a 1:2: rc $rc4, $(cat bad4.err)"
[[ $rc5 -eq 2 ]] || fail "one input: rc $rc5"
[[ -z $(ls -A tmp) ]] || fail "left in TMPDIR: $(ls -A tmp)"
echo "diff_kineto: ok"
