#!/usr/bin/env bash
# import_kineto.sh — `ascent import` on the real PyTorch profiler traces of tests/fixtures/kineto:
# every fixture imported and checked against totals an independent reader (kineto_expect.py:
# Python's json/gzip/decimal) computes from the file; the two trace_filter ranks together (two
# ranks, collectives matched across them); every viewer view dumped and advise --format json on
# every fixture; bad input (exit 2 with the file and byte offset, no output left behind).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
X="$ASCENT_ROOT/tests/integration/kineto_expect.py"
fail() { echo "FAIL: $*"; exit 1; }

for f in "$F"/*.json.gz; do
  b=$(basename "$f" .json.gz)
  "$ASCENT" import "$f" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --format json >"$b.json"
  python3 "$X" "$b.json" "$f" || fail "report of $b differs from the trace"
  for v in overview ops comm steps ranks memory timeline devices; do
    "$ASCENT" view "$b.db" --dump "$v" --size 120x30 >"$b.$v.txt" || fail "view --dump $v on $b"
    [[ -s "$b.$v.txt" ]] || fail "view --dump $v on $b is empty"
  done
  "$ASCENT" advise "$b.db" --format json >"$b.advise.json" || fail "advise on $b"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "rules" in d and d["rules"], d' "$b.advise.json" \
    || fail "advise --format json on $b is not a document with rules"
done
# the device rules: on the DDP trace (steps, launch links) they decide; on the CPU-only trace they
# skip and say why; the step split of a GPU trace is on its device
python3 - <<'PY' || fail "device rules of advise"
import json
def rules(b):
    return {r["rule"]: r for r in json.load(open(b + ".advise.json"))["rules"]}
g = rules("nccl_parser_config__nccl_data")
for r in ("device.idle", "device.launch_bound", "device.h2d_copies", "comm.exposed", "rank.slow"):
    assert r in g, (r, sorted(g))
assert g["device.idle"]["state"] == "fired", g["device.idle"]
# 770 of the 1,786 kernels (not NCCL) linked by ac2g flows launched inside the steps before the last
# run under 10 us (43%; counted from the JSON with Python): under the rule's 50%, not launch-bound
assert g["device.launch_bound"]["state"] == "ok" and "43% of 1786 launched kernels" in g["device.launch_bound"]["note"], g["device.launch_bound"]
assert g["rank.slow"]["state"] == "skipped" and "one rank" in g["rank.slow"]["note"], g["rank.slow"]
# No false High on the real traces: every High below is what the trace shows (HTA's idle on the same
# files: MI250 98.3%, NCCL DDP 77%, ResNet-50 39% over its steps, the sampled ranks over half; the
# CPU-only rank waits 85% of its step in gloo's all_reduce; MI300's step is two thirds communication
# not overlapped), and the rest fire none. The Triton example's one 1.76 us kernel in a 13 s step is
# host work (compilation), not an idle device: device.idle does not judge under 10 device events.
import glob
highs = {}
for p in sorted(glob.glob("*.advise.json")):
    for f in json.load(open(p))["findings"]:
        if f["severity"] == "High":
            highs.setdefault(p[:-len(".advise.json")], []).append(f["rule"])
want = {"amd_trace__mi250_minitoy_train_ROCm6_2_kineto": ["device.idle"],
        "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace": ["comm.exposed"],
        "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace": ["device.idle"],
        "nccl_parser_config__nccl_data": ["device.idle"],
        "trace_filter__sampled_rank-0": ["device.idle"], "trace_filter__sampled_rank-1": ["device.idle"],
        "tracelens_mi300_resnet_act_checkpoint": ["comm.exposed"]}
assert highs == {b: r for b, r in want.items() if b + ".advise.json" in glob.glob("*.advise.json")}, highs
t = rules("triton_example__triton_example")["device.idle"]
assert t["state"] == "skipped" and "too little device work to judge: 1 device event" in t["note"], t
c = rules("cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace")
for r in ("device.idle", "device.launch_bound", "device.h2d_copies"):
    assert c[r]["state"] == "skipped" and "no device lanes" in c[r]["note"], c[r]
# gloo's collectives on the CPU-only rank: its 10 gloo:all_reduce ranges, in the default group of
# the job's 300 ranks (the trace gives no sizes)
cr = json.load(open("cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json"))
assert [(x["name"], x["count"], x["bytes"], x["group_size"]) for x in cr["comm"]] == [("gloo:all_reduce", 10, 0, 300)], cr["comm"]
rep = json.load(open("nccl_parser_config__nccl_data.json"))
assert [r["split"] for r in rep["ranks"]] == ["device"], rep["ranks"]
s = rep["steps"][0]
assert s["computing_ns"] + s["comm_not_overlapped_ns"] + s["free_ns"] == s["total_ns"], s
assert rep["launch"] and rep["launch"][0]["kernels_linked"] > 1000, rep["launch"]
PY
# links are paired in memory within a window of ids (import/links.c); a window of 2 sends nearly
# every id through eviction, the Bloom filter, the spill file and db_flow_pair's staged pass: the
# same links and the same unpaired count either way
q="SELECT rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns FROM flow ORDER BY 1, 2, 3, 4, 5, 6, 7"
for b in nccl_parser_config__nccl_data critical_path__alexnet__benchmark_result_2869224_1695835535_trace \
    amd_trace__mi250_minitoy_train_ROCm6_2_kineto trace_filter__sampled_rank-0; do
  ASCENT_IMPORT_LINK_WINDOW=2 "$ASCENT" import "$F/$b.json.gz" -o "$b.w2.db" -q 2>"$b.w2.err" || fail "import $b (window 2)"
  [[ "$(sqlite3 "$b.db" "SELECT count(*) FROM flow")" -gt 0 ]] || fail "$b: no links"
  [[ "$(sqlite3 "$b.db" "$q" | md5sum)" == "$(sqlite3 "$b.w2.db" "$q" | md5sum)" ]] || fail "$b: links differ with a window of 2"
  diff "$b.err" "$b.w2.err" || fail "$b: warnings differ with a window of 2"
done
# ROCm's torch.compile trace writes 13 ac2g starts for 58 ends: its 12 kernels are all linked to
# their launch all the same (the lost starts by correlation id)
[[ "$(sqlite3 tracelens_torch_compile_triton_trace.db "SELECT count(*), count(DISTINCT f.dst_ns) FROM flow f JOIN event e ON e.rank = f.rank AND e.tid = f.dst_tid AND e.start_ns = f.dst_ns WHERE f.kind = 0 AND e.kind = 11")" == "12|12" ]] \
  || fail "torch.compile on ROCm: not every kernel linked"
# copies and memsets keep their bytes (the `bytes` argument), summed as the JSON has them
python3 - "$F/nccl_parser_config__nccl_data.json.gz" <<'PY' || fail "copy and memset bytes"
import gzip, json, sqlite3, sys
ev = json.load(gzip.open(sys.argv[1], "rt"))["traceEvents"]
want = {k: sum(int(e["args"]["bytes"]) for e in ev if e.get("ph") == "X" and e.get("cat") == c) for k, c in ((12, "gpu_memcpy"), (13, "gpu_memset"))}
db = sqlite3.connect("nccl_parser_config__nccl_data.db")
got = dict(db.execute("SELECT kind, sum(bytes) FROM event WHERE kind IN (12, 13) GROUP BY kind").fetchall())
assert got == want and want[12] > 0, (got, want)
PY
# PyTorch 1.8-1.10 named a device lane's thread "stream 7": stream 7, one lane for its 9,096 kernels
[[ "$(sqlite3 kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.db "SELECT device, stream, (SELECT name FROM thread t WHERE t.rank = d.rank AND t.tid = d.tid) FROM device_lane d")" == "0|7|gpu 0 stream 7" ]] \
  || fail "the 2021 trace's device lane: $(sqlite3 kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.db "SELECT * FROM device_lane")"
# a GPU trace's timeline draws device lanes under the rank
grep -q 't2 gpu 0' nccl_parser_config__nccl_data.timeline.txt || fail "no device lane in the timeline"
# one meaning of computing: the overview's split is report's (computing includes the communication
# under it; computing, communication not overlapped and free add up to the step)
rep_split=$("$ASCENT" report nccl_parser_config__nccl_data.db | sed -n 's/.*over all ranks: computing \([0-9.]*\)%, communication not overlapped \([0-9.]*\)%, free \([0-9.]*\)%.*/\1 \2 \3/p')
view_split=$(awk '/^  computing /{c=$(NF-2)} /^  comm \(not overlapped\)/{n=$(NF-2)} /^  free /{f=$(NF-2)} END {print c, n, f}' nccl_parser_config__nccl_data.overview.txt | tr -d %)
[[ -n $rep_split && "$rep_split" == "$view_split" ]] || fail "the overview's split ($view_split) is not report's ($rep_split)"
# the devices view (8) shows report --by device's figures: the device line and a row per stream
python3 - <<'PY' || fail "the devices view differs from report --by device"
import json, re, subprocess, os
b = "nccl_parser_config__nccl_data"
d = json.loads(subprocess.check_output([os.environ["ASCENT"], "report", b + ".db", "--by", "device", "--format", "json"]))["devices"][0]
txt = subprocess.check_output([os.environ["ASCENT"], "view", b + ".db", "--dump", "devices", "--size", "220x30"], text=True)
line = next(l for l in txt.splitlines() if l.startswith("r0 gpu 0  span"))
idle, compute = (float(x) for x in re.search(r"idle ([0-9.]+)%  compute ([0-9.]+)%", line).groups())
assert abs(idle - 100 * d["idle_ns"] / d["span_ns"]) < 0.06 and abs(compute - 100 * d["compute_ns"] / d["span_ns"]) < 0.06, (line, d)
assert f"counted {d['events_counted']}," in line, line
for st in d["streams"]:
    row = next(l for l in txt.splitlines() if l.startswith(f"r0 gpu 0 stream {st['stream']} "))
    assert row.split()[5] == str(st["kernels"]) and row.split()[8] == str(st["queue_len_max"]), (row, st)
PY

# two ranks of one job imported together: two ranks, their NCCL kernels matched by ordinal
"$ASCENT" import "$F"/trace_filter__sampled_rank-0.json.gz "$F"/trace_filter__sampled_rank-1.json.gz -o tf.db -q
"$ASCENT" report tf.db --format json >tf.json
[[ "$(sqlite3 tf.db "SELECT value FROM meta WHERE key = 'import_source'")" == "pytorch-profiler (kineto chrome trace)" ]] \
  || fail "import_source of a Kineto import"
python3 "$X" tf.json "$F"/trace_filter__sampled_rank-0.json.gz "$F"/trace_filter__sampled_rank-1.json.gz
python3 - <<'PY' || fail "trace_filter ranks not matched"
import json
d = json.load(open("tf.json"))
assert sorted(r["rank"] for r in d["ranks"]) == [0, 1], d["ranks"]
matched = sum(c["matched"] for c in d["comm"])
count = sum(c["count"] for c in d["comm"])
assert count == 20 and matched == 20, (count, matched)
PY
# the same files as a folder give the same profile
mkdir tfdir && cp "$F"/trace_filter__sampled_rank-*.json.gz tfdir/
"$ASCENT" import tfdir -o tf2.db -q
"$ASCENT" report tf2.db --format json >tf2.json
python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); assert a["ops"]==b["ops"] and a["comm"]==b["comm"]' tf.json tf2.json \
  || fail "a folder import differs from the same files"

# --rank over what the trace says; a rank claimed twice with overlapping times is refused
"$ASCENT" import "$F"/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz --rank 5 -o r5.db -q
"$ASCENT" report r5.db --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["rank"] for r in d["ranks"]]==[5], d["ranks"]'
set +e
cp "$F"/trace_filter__sampled_rank-0.json.gz copy-rank-0.json.gz
"$ASCENT" import "$F"/trace_filter__sampled_rank-0.json.gz copy-rank-0.json.gz -o dup.db -q 2>dup.err; rc=$?
set -e
[[ $rc -eq 2 ]] || fail "two files of rank 0 with overlapping times: exit $rc (want 2)"
grep -q 'overlap' dup.err || fail "no 'overlap' in: $(cat dup.err)"
[[ ! -e dup.db ]] || fail "a refused import left dup.db"
ls | grep -q 'dup.db.tmp' && fail "a refused import left its temporary file"

# a profiler schedule's repeats: two files of one rank with disjoint times become one rank's steps
python3 - "$F"/nccl_parser_config__nccl_data.json.gz <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
ev = d["traceEvents"]
cut = min(e["ts"] for e in ev if e.get("name") == "ProfilerStep#5")
a = [e for e in ev if e.get("ph") == "M" or ("ts" in e and e["ts"] + e.get("dur", 0) <= cut)]
b = [e for e in ev if e.get("ph") == "M" or ("ts" in e and e["ts"] >= cut)]
for name, part in (("repeat-a.json", a), ("repeat-b.json", b)):
    json.dump(dict(d, traceEvents=part), open(name, "w"))
PY
"$ASCENT" import repeat-a.json repeat-b.json -o repeat.db -q 2>/dev/null || fail "two files of one rank with disjoint times"
"$ASCENT" report repeat.db --format json >repeat.rep
python3 "$X" repeat.rep repeat-a.json repeat-b.json || fail "the repeats' report differs from the files"
python3 -c 'import json; d=json.load(open("repeat.rep")); assert sorted((s["rank"],s["step"]) for s in d["steps"])==[(0,4),(0,5),(0,6)], d["steps"]; assert [r["rank"] for r in d["ranks"]]==[0]' \
  || fail "the repeats are not one rank's steps 4-6"

# link ids are the source's own, unique only within one file: two files of one rank whose ids
# collide (two runs, or a profiler that numbered each window from 1) must not pair each other's
# ends. Renumber each repeat's links from 1 and check that no link crosses from one file to the other.
python3 - repeat-a.json repeat-b.json <<'PY'
import json, sys
for name in sys.argv[1:]:
    d = json.load(open(name))
    ids = {}
    for e in d["traceEvents"]:
        if e.get("ph") in ("s", "f", "t") and "id" in e:
            e["id"] = ids.setdefault((e.get("cat"), e["id"]), len(ids) + 1)
    json.dump(d, open(name.replace(".json", "-renum.json"), "w"))
PY
"$ASCENT" import repeat-a-renum.json repeat-b-renum.json -o renum.db -q 2>/dev/null || fail "two repeats with colliding link ids"
"$ASCENT" import repeat-a-renum.json -o renum-a.db -q 2>/dev/null || fail "repeat a alone"
"$ASCENT" import repeat-b-renum.json -o renum-b.db -q 2>/dev/null || fail "repeat b alone"
python3 - <<'PY' || fail "links paired across the two files of one rank"
import sqlite3
both = sqlite3.connect("renum.db")
cut = both.execute("SELECT min(e.start_ns) FROM event e JOIN string s ON s.id = e.name_id"
                   " WHERE s.value = 'ProfilerStep#5'").fetchone()[0]
crossing = both.execute("SELECT count(*) FROM flow WHERE (src_ns < ?1) != (dst_ns < ?1)", (cut,)).fetchone()[0]
n = both.execute("SELECT count(*) FROM flow").fetchone()[0]
alone = sum(sqlite3.connect(f).execute("SELECT count(*) FROM flow").fetchone()[0] for f in ("renum-a.db", "renum-b.db"))
assert n > 0 and crossing == 0 and n == alone, (n, crossing, alone)
PY

# round trip: ascent's own Chrome-trace export of an imported trace imports back with the same
# per-operator totals (names compared up to 500 bytes: the export caps a name at 512 escaped bytes)
for b in nccl_parser_config__nccl_data trace_filter__sampled_rank-0; do
  "$ASCENT" export "$b.db" -o "rt-$b.json.gz" >/dev/null
  "$ASCENT" import "rt-$b.json.gz" -o "rt-$b.db" -q 2>/dev/null
  "$ASCENT" report "rt-$b.db" --format json >"rt-$b.json"
  python3 - "$b.json" "rt-$b.json" <<'PY' || fail "round trip of $b changed the operator totals"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
ka = {(o["name"][:500], o["kind"]): (o["instances"], o["total_ns"]) for o in a["ops"]}
kb = {(o["name"][:500], o["kind"]): (o["instances"], o["total_ns"]) for o in b["ops"]}
assert ka == kb, [(k, ka[k], kb.get(k)) for k in ka if ka[k] != kb.get(k)][:5]
assert [(s["rank"], s["step"], s["total_ns"]) for s in a["steps"]] == [(s["rank"], s["step"], s["total_ns"]) for s in b["steps"]]
PY
done

# bad input: a clear error naming the file and the byte offset, exit 2, nothing left behind
head -c 50000 "$F"/nccl_parser_config__nccl_data.json.gz >cut.json.gz
zcat "$F"/triton_example__triton_example.json.gz | head -c 3000 >cut.json
echo '{"schemaVersion": 1, "deviceProperties": []}' >notrace.json
head -c 200 "$ASCENT" >binary.json
: >empty.json
echo '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, }' >syntax.json
for f in cut.json.gz cut.json notrace.json binary.json empty.json syntax.json; do
  set +e; "$ASCENT" import "$f" -o "bad-$f.db" -q 2>"$f.err"; rc=$?; set -e
  [[ $rc -eq 2 ]] || fail "import of $f: exit $rc (want 2): $(cat "$f.err")"
  grep -q "'$f'" "$f.err" || fail "the error for $f does not name the file: $(cat "$f.err")"
  [[ $f == notrace.json ]] || grep -q 'byte [0-9]' "$f.err" || fail "the error for $f has no byte offset: $(cat "$f.err")"
  [[ ! -e "bad-$f.db" ]] || fail "a failed import of $f left its output"
  ls | grep -q "bad-$f.db.tmp" && fail "a failed import of $f left its temporary file"
done
# an existing output is not touched by a failed import
echo keep >kept.db
set +e; "$ASCENT" import cut.json -o kept.db -q 2>/dev/null; set -e
[[ $(cat kept.db) == keep ]] || fail "a failed import changed the existing output"
# -o naming an input is refused (exit 2), the input untouched
cp "$F"/triton_example__triton_example.json.gz in.json.gz
sum=$(md5sum <in.json.gz)
set +e; "$ASCENT" import in.json.gz -o ./in.json.gz -q 2>same.err; rc=$?; set -e
[[ $rc -eq 2 ]] || fail "-o equal to an input: exit $rc (want 2)"
[[ $(md5sum <in.json.gz) == "$sum" ]] || fail "-o equal to an input changed the input"

# records that can be skipped are counted (exit 0), variants the fixtures do not show are read:
# the bare-array form, begin/end pairs, memory records, a collective with its group, a link
cat >variants.json <<'J'
[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":100.000,"dur":50.5},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":101.0015,"dur":10,"args":{"Input Dims":[[2,3],[3,4]],"Input type":["float","float"]}},
 {"ph":"X","cat":"cpu_op","name":"nodur","pid":1,"tid":1,"ts":102},
 {"ph":"X","cat":"cpu_op","name":"neg","pid":1,"tid":1,"ts":-5,"dur":1},
 {"ph":"X","cat":"cpu_op","name":"huge","pid":1,"tid":1,"ts":1e30,"dur":1},
 {"ph":"X","cat":"cpu_op","name":"strts","pid":1,"tid":1,"ts":"100","dur":1},
 {"ph":"X","cat":"cpu_op","name":{"x":1},"pid":1,"tid":1,"ts":100,"dur":1},
 {"ph":"X","cat":"some_new_category","name":"mystery","pid":1,"tid":1,"ts":103,"dur":2},
 {"ph":"Q","name":"unknown phase","pid":1,"tid":1,"ts":103},
 {"ph":"B","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":130},
 {"ph":"E","pid":1,"tid":1,"ts":131.5},
 {"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":104,"args":{"Device Type":1,"Device Id":0,"Bytes":1024,"Total Allocated":4096,"Total Reserved":8192}},
 {"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":105,"args":{"Device Type":1,"Device Id":0,"Bytes":-1024,"Total Allocated":3072}},
 {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":110,"dur":3,"args":{"device":0,"stream":7,"correlation":9}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":101.5,"dur":1},
 {"ph":"s","cat":"ac2g","name":"ac2g","id":9,"pid":1,"tid":1,"ts":101.5},
 {"ph":"f","cat":"ac2g","name":"ac2g","id":9,"pid":0,"tid":7,"ts":110,"bp":"e"},
 42,
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather","pid":0,"tid":8,"ts":120,"dur":5,"args":{"Collective name":"allgather","dtype":"BFloat16","In msg nelems":10,"Out msg nelems":40,"Group size":4,"Process Group Name":"3","Process Group Ranks":"[0, 2, 4, 6]"}}
]
J
"$ASCENT" import variants.json -o variants.db 2>variants.err || fail "variants: $(cat variants.err)"
for w in 'without a duration' 'negative, overflowing' 'wrong type' 'phase' "1 events of a category ascent does not know.*'some_new_category'"; do
  grep -q "$w" variants.err || fail "no counted warning '$w' in: $(cat variants.err)"
done
"$ASCENT" report variants.db --format json >variants.rep
# an ascent profile given to import is named as one (not "holds a view", nor read as JSON)
set +e; "$ASCENT" import variants.db -o again.db 2>again.err; rc=$?; set -e
[[ $rc == 2 ]] && grep -q "'variants.db' is an ascent profile already" again.err && [[ ! -e again.db ]] \
  || fail "import of an ascent profile: exit $rc, $(cat again.err)"
python3 - <<'PY' || fail "variants imported wrong"
import json
d = json.load(open("variants.rep"))
ops = {(o["name"], o["kind"]): (o["instances"], o["total_ns"]) for o in d["ops"]}
assert ops == {("aten::mm", "op"): (1, 10000), ("aten::add", "op"): (1, 1500), ("k1", "kernel"): (1, 3000)}, ops
assert [(c["name"], c["count"], c["bytes"], c["group_size"]) for c in d["comm"]] == [("ncclDevKernel_AllGather", 1, 80, 4)], d["comm"]
assert d["mem"][0]["peak_bytes"] == 4096 and d["mem"][0]["final_bytes"] == 3072, d["mem"]
assert [(s["step"], s["total_ns"]) for s in d["steps"]] == [(1, 50500)], d["steps"]
PY
"$ASCENT" report variants.db --by shape --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [(s["name"], s["input_dims"], s["count"]) for s in d["shapes"]] == [("aten::mm", "[[2,3],[3,4]]", 1)], d'   || fail "report --by shape"

# a trace without launch links: the calls and the device work that share a "correlation" argument
# are linked by it (a graph launch's one id runs two kernels: two links; a kernel whose id no call
# has, and a call whose id no kernel has, stay unlinked); a trace with ac2g flows keeps only those
cat >corr.json <<'J'
{"traceEvents": [
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":100,"dur":20},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":101,"dur":2,"args":{"correlation":5}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":104,"dur":2,"args":{"correlation":6}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaMemsetAsync","pid":1,"tid":1,"ts":107,"dur":2,"args":{"correlation":8}},
 {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":110,"dur":3,"args":{"correlation":5}},
 {"ph":"X","cat":"kernel","name":"g1","pid":0,"tid":7,"ts":114,"dur":3,"args":{"correlation":6}},
 {"ph":"X","cat":"kernel","name":"g2","pid":0,"tid":7,"ts":118,"dur":3,"args":{"correlation":6}},
 {"ph":"X","cat":"kernel","name":"orphan","pid":0,"tid":7,"ts":122,"dur":3,"args":{"correlation":7}}
]}
J
"$ASCENT" import corr.json -o corr.db -q 2>corr.err || fail "correlation links: $(cat corr.err)"
python3 - <<'PY' || fail "correlation links"
import sqlite3
db = sqlite3.connect("corr.db")
links = db.execute("SELECT src_ns, dst_ns FROM flow WHERE kind = 0 ORDER BY dst_ns").fetchall()
t0 = db.execute("SELECT min(start_ns) FROM event").fetchone()[0]
assert [(a - t0, b - t0) for a, b in links] == [(1000, 10000), (4000, 14000), (4000, 18000)], links
PY
sed 's/"cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":101,"dur":2,"args":{"correlation":5}},/&\n {"ph":"s","cat":"ac2g","name":"ac2g","id":5,"pid":1,"tid":1,"ts":101},\n {"ph":"f","cat":"ac2g","name":"ac2g","id":5,"pid":0,"tid":7,"ts":110,"bp":"e"},/' corr.json >corr2.json
grep -q ac2g corr2.json || fail "corr2.json has no flow"
"$ASCENT" import corr2.json -o corr2.db -q 2>corr2.err || fail "correlation with flows: $(cat corr2.err)"
[[ $(python3 -c 'import sqlite3; print(sqlite3.connect("corr2.db").execute("SELECT count(*) FROM flow").fetchone()[0])') == 1 ]] \
  || fail "a trace with ac2g flows gained links by correlation"
# a launch link whose start the file lost (ROCm traces: only the 'f' end at the kernel): its id is
# the correlation id, so the graph launch's two kernels are linked by it; the lone end is counted
sed 's/{"ph":"X","cat":"kernel","name":"g1",/{"ph":"f","cat":"ac2g","name":"ac2g","id":6,"pid":0,"tid":7,"ts":114,"bp":"e"},\n&/' corr2.json >corr3.json
grep -q '"id":6' corr3.json || fail "corr3.json has no lone link end"
"$ASCENT" import corr3.json -o corr3.db 2>corr3.err || fail "a lost link start: $(cat corr3.err)"
grep -q "1 link ends without their partner" corr3.err || fail "the lone link end not counted: $(cat corr3.err)"
python3 - <<'PY' || fail "a lost link start: not linked by correlation"
import sqlite3
db = sqlite3.connect("corr3.db")
t0 = db.execute("SELECT min(start_ns) FROM event").fetchone()[0]
links = [(a - t0, b - t0) for a, b in db.execute("SELECT src_ns, dst_ns FROM flow WHERE kind = 0 ORDER BY dst_ns")]
assert links == [(1000, 10000), (4000, 14000), (4000, 18000)], links
PY

# every event's args are stored as written, without whitespace, strings escaped as yajl's generator
# escapes them (a trace of escapes, Unicode, numbers, nesting 120 and 130 deep, args given twice):
# the expected texts come from Python's json with the number texts kept
C="$ASCENT_ROOT/tests/fuzz/corpus/kineto_import/args_escapes.json"
"$ASCENT" import "$C" -o esc.db -q 2>esc.err || fail "args_escapes: $(cat esc.err)"
python3 - "$C" esc.db <<'PY' || fail "args texts differ from the trace's"
import json, sqlite3, sys
class Num(str): pass
def enc(v, depth=0):
    if isinstance(v, list) and depth >= 128: raise OverflowError   # yajl_gen's nesting limit
    if isinstance(v, Num): return str(v)
    if v is None: return "null"
    if v is True: return "true"
    if v is False: return "false"
    if isinstance(v, str):
        esc = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
        return '"' + "".join(esc.get(c) or ("\\u00%02X" % ord(c) if ord(c) < 32 else c) for c in v) + '"'
    if isinstance(v, Obj): return "{" + ",".join(enc(k) + ":" + enc(x, depth + 1) for k, x in v) + "}"
    return "[" + ",".join(enc(x, depth + 1) for x in v) + "]"
class Obj(list): pass
doc = json.load(open(sys.argv[1], encoding="utf-8"), parse_float=Num, parse_int=Num, object_pairs_hook=Obj)
want = {}
for e in dict(doc)["traceEvents"]:
    args = [v for k, v in e if k == "args"]
    name = dict(e)["name"]
    if len(args) != 1 or not isinstance(args[0], Obj):
        continue   # args given twice, or not an object: none kept
    try:
        t = enc(args[0], 1)
    except OverflowError:
        continue   # nested deeper than yajl's generator allows: not kept
    if t != "{}":
        want[name] = t
db = sqlite3.connect(sys.argv[2])
got = dict(db.execute("SELECT s.value, a.args FROM arg a JOIN string s ON s.id = a.name_id"))
assert got == want, (sorted(set(got.items()) ^ set(want.items())))
assert len(got) == 6, got.keys()
PY

echo "import_kineto: ok"
