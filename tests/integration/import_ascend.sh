#!/usr/bin/env bash
# import_ascend.sh — `ascent import` of Ascend profiler databases (ascend_pytorch_profiler_N.db) made by
# tests/fixtures/ascend/make_fixture.py from the published table definitions (no real NPU output
# exists here), checked against totals computed with SQL over the files; the profiler's output
# folder form; torch_npu's trace_view.json process names through the Kineto reader; bad input.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/ascend"
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p run_ascend_pt/ASCEND_PROFILER_OUTPUT
python3 "$F/make_fixture.py" run_ascend_pt/ASCEND_PROFILER_OUTPUT
D=run_ascend_pt/ASCEND_PROFILER_OUTPUT
sum0=$(cat $D/*.db | md5sum)
"$ASCENT" import $D/ascend_pytorch_profiler_0.db $D/ascend_pytorch_profiler_1.db -o two.db -q 2>two.err || fail "import: $(cat two.err)"
[[ ! -s two.err ]] || fail "warnings: $(cat two.err)"
[[ "$(cat $D/*.db | md5sum)" == "$sum0" ]] || fail "an input changed"
"$ASCENT" report two.db --format json >two.json
python3 - "$D" <<'PY' || fail "report differs from the databases"
import glob, json, sqlite3, sys
rep = json.load(open("two.json"))
want, comm, steps = {}, {}, 0
for f in sorted(glob.glob(sys.argv[1] + "/ascend_pytorch_profiler_*.db")):
    db = sqlite3.connect(f)
    for name, n, tot in db.execute("SELECT s.value, count(*), sum(t.endNs - t.startNs) FROM TASK t JOIN COMPUTE_TASK_INFO c "
                                   "ON c.globalTaskId = t.globalTaskId JOIN STRING_IDS s ON s.id = c.name GROUP BY 1"):
        a = want.get((name, "kernel"), (0, 0)); want[(name, "kernel")] = (a[0] + n, a[1] + tot)
    for name, n, tot in db.execute("SELECT s.value, count(*), sum(CAST(p.endNs AS INTEGER) - CAST(p.startNs AS INTEGER)) "
                                   "FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name WHERE p.type IS NULL OR p.type = 50001 GROUP BY 1"):
        a = want.get((name, "op"), (0, 0)); want[(name, "op")] = (a[0] + n, a[1] + tot)
    for name, n, tot, cnt, dt in db.execute("SELECT s.value, count(*), sum(o.endNs - o.startNs), sum(o.count), d.name FROM "
                                            "COMMUNICATION_OP o JOIN STRING_IDS s ON s.id = o.opType JOIN ENUM_HCCL_DATA_TYPE d "
                                            "ON d.id = o.dataType GROUP BY 1"):
        size = {"FP16": 2, "BFP16": 2, "FP32": 4, "INT8": 1}[dt]
        a = comm.get(name, (0, 0, 0)); comm[name] = (a[0] + n, a[1] + tot, a[2] + cnt * size)
    steps += db.execute("SELECT count(*) FROM STEP_TIME").fetchone()[0]
got = {(o["name"], o["kind"]): (o["instances"], o["total_ns"]) for o in rep["ops"]}
assert got == want, (got, want)
gotc = {c["name"]: (c["count"], c["total_ns"], c["bytes"]) for c in rep["comm"]}
assert gotc == comm, (gotc, comm)
assert all(c["matched"] == c["count"] and c["group_size"] == 2 for c in rep["comm"]), rep["comm"]
assert sorted(r["rank"] for r in rep["ranks"]) == [0, 1], rep["ranks"]
# every task launched by a CANN_API call (same connectionId) is linked to it
linked = sum(sqlite3.connect(f).execute("SELECT count(*) FROM TASK WHERE connectionId IN (SELECT connectionId FROM CANN_API)").fetchone()[0]
             for f in glob.glob(sys.argv[1] + "/ascend_pytorch_profiler_*.db"))
assert linked > 0 and sum(l["linked"] for l in rep["launch"]) == linked, (rep["launch"], linked)
# CONNECTION_IDS: each operator linked to its CANN call (torch-cann-task: the relation id is the
# call's connectionId), each forward operator to its backward one (an id two operators share);
# queue rows (task_queue) not linked
out = sqlite3.connect("two.db")
calls = fwdbwd = 0
for f in glob.glob(sys.argv[1] + "/ascend_pytorch_profiler_*.db"):
    db = sqlite3.connect(f)
    calls += db.execute("SELECT count(*) FROM PYTORCH_API p JOIN CONNECTION_IDS c ON c.id = p.connectionId"
                        " JOIN CANN_API x ON x.connectionId = c.connectionId").fetchone()[0]
    fwdbwd += db.execute("SELECT count(*) - count(DISTINCT c.connectionId) FROM PYTORCH_API p JOIN CONNECTION_IDS c"
                         " ON c.id = p.connectionId WHERE p.type = 50001 AND c.connectionId NOT IN"
                         " (SELECT connectionId FROM CANN_API)").fetchone()[0]
links = out.execute("SELECT f.kind, count(*), sum(s.kind = 0 AND d.kind = 8 AND dn.value LIKE 'aclnn%' AND f.dst_ns > f.src_ns),"
                    " sum(s.kind = 0 AND d.kind = 0 AND dn.value = 'aten::mm_backward' AND sn.value = 'aten::mm')"
                    " FROM flow f JOIN event s ON s.rank = f.rank AND s.tid = f.src_tid AND s.start_ns = f.src_ns"
                    " JOIN event d ON d.rank = f.rank AND d.tid = f.dst_tid AND d.start_ns = f.dst_ns"
                    " JOIN string sn ON sn.id = s.name_id JOIN string dn ON dn.id = d.name_id WHERE f.kind IN (1, 2)"
                    " GROUP BY 1 ORDER BY 1").fetchall()
assert calls > 0 and fwdbwd > 0 and links == [(1, fwdbwd, 0, fwdbwd), (2, calls, calls, 0)], (links, calls, fwdbwd)
assert all(r["host"] == "npu-node-a" and r["split"] == "device" for r in rep["ranks"]), rep["ranks"]
assert sum(r["steps"] for r in rep["ranks"]) == steps, (rep["ranks"], steps)
assert len(rep["mem"]) == 2 and all(m["peak_bytes"] == 128 << 20 for m in rep["mem"]), rep["mem"]
print("ok", sorted(got.items()), gotc)
PY
# the profiler's output folder: the same profile
"$ASCENT" import run_ascend_pt -o folder.db -q
"$ASCENT" report folder.db --format json >folder.json
python3 -c 'import json; a=json.load(open("two.json")); b=json.load(open("folder.json")); assert a["ops"]==b["ops"] and a["comm"]==b["comm"], "folder"' \
  || fail "the output folder imports differently"
# memory of two devices in one file, interleaved in time: each device's change from its own previous
# record (device D: 64, 128, 96 MiB; device D+1: 10, 40, 30 MiB)
python3 - <<'PY' || fail "memory per device"
import json, shutil, sqlite3, subprocess, os
shutil.copy("run_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db", "twodev_0.db")
db = sqlite3.connect("twodev_0.db")
comp, dev = db.execute("SELECT component, deviceId FROM MEMORY_RECORD LIMIT 1").fetchone()
for (t,), alloc in zip(db.execute("SELECT timestamp FROM MEMORY_RECORD ORDER BY timestamp").fetchall(), (10, 40, 30)):
    db.execute("INSERT INTO MEMORY_RECORD (component, timestamp, totalAllocated, deviceId) VALUES (?, ?, ?, ?)",
               (comp, t + 1, alloc << 20, dev + 1))
db.commit()
subprocess.run([os.environ["ASCENT"], "import", "twodev_0.db", "-o", "twodev.db", "-q"], check=True)
rep = json.loads(subprocess.run([os.environ["ASCENT"], "report", "twodev.db", "--format", "json"], check=True,
                                capture_output=True).stdout)
got = {m["device"]: (m["allocs"], m["frees"], m["peak_bytes"] >> 20, m["final_bytes"] >> 20) for m in rep["mem"]}
assert got == {dev: (2, 1, 128, 96), dev + 1: (2, 1, 40, 30)}, got
PY
src=$(sqlite3 two.db "SELECT value FROM meta WHERE key = 'import_source'")
[[ "$src" == "ascend pytorch profiler (database)" ]] || fail "import_source is '$src'"
"$ASCENT" view two.db --dump timeline --size 120x30 >tl.txt || fail "view"
"$ASCENT" advise two.db --format json >adv.json || fail "advise"

# trace_view.json's Ascend processes: device lanes (kernels, collectives), string times read (real
# torch_npu output: import_ascend_real.sh)
"$ASCENT" import "$F/trace_view_sample.json" -o tv.db -q 2>tv.err || fail "trace_view: $(cat tv.err)"
"$ASCENT" report tv.db --format json >tv.json
python3 - "$F/trace_view_sample.json" <<'PY' || fail "trace_view sample"
import json, sys
ev = json.load(open(sys.argv[1]))
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M"}
hw = [e for e in ev if e["ph"] == "X" and names.get(e["pid"]) == "Ascend Hardware"]
d = json.load(open("tv.json"))
k = [o for o in d["ops"] if o["kind"] == "kernel"]
assert [(o["name"], o["instances"], o["total_ns"]) for o in k] == [("MatMulV2", len(hw), int(sum(e["dur"] for e in hw) * 1000))], k
assert [c["name"] for c in d["comm"]] == ["hcom_allReduce_"], d["comm"]   # named by its type
assert d["ranks"][0]["split"] == "device" and [s["step"] for s in d["steps"]] == [3], (d["ranks"], d["steps"])
PY

# bad input: no output left, a message naming the file and table
expect_bad() {   # expect_bad WHAT FILE PATTERN
  set +e; "$ASCENT" import "$2" -o bad.db -q 2>bad.err; rc=$?; set -e
  [[ $rc == 2 ]] || fail "$1: exit $rc ($(cat bad.err))"
  grep -q -- "$3" bad.err || fail "$1: message '$(cat bad.err)' lacks '$3'"
  [[ ! -e bad.db ]] || fail "$1: output left behind"
  return 0
}
python3 - "$D" <<'PY'
import shutil, sqlite3, sys
d = sys.argv[1]
shutil.copy(d + "/ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_7.db")
db = sqlite3.connect("ascend_pytorch_profiler_7.db")
db.execute("ALTER TABLE TASK RENAME COLUMN streamId TO other")
db.commit()
shutil.copy(d + "/ascend_pytorch_profiler_0.db", "rows.db")
db = sqlite3.connect("rows.db")
db.execute("UPDATE TASK SET endNs = startNs - 1 WHERE rowid IN (1, 2, 3)")
db.execute("UPDATE META_DATA SET value = '{not json' WHERE name = 'parallel_group_info'")
db.commit()
PY
expect_bad "a TASK table without streamId" ascend_pytorch_profiler_7.db "table TASK has no column streamId"
head -c 30000 $D/ascend_pytorch_profiler_0.db >ascend_pytorch_profiler_cut.db
set +e; "$ASCENT" import ascend_pytorch_profiler_cut.db -o cut.db -q 2>cut.err; rc=$?; set -e
[[ $rc == 0 || $rc == 2 ]] || fail "truncated database: exit $rc"
"$ASCENT" import rows.db -o rows_out.db -q 2>rows.err || fail "bad rows refused the file: $(cat rows.err)"
grep -q "3 .*table TASK" rows.err || fail "bad task times not counted: $(cat rows.err)"
grep -q "META_DATA" rows.err || fail "bad parallel_group_info not counted: $(cat rows.err)"
[[ ! -x "$ASCENT_BUILD/fuzz/bin/ascend_import" ]] || "$ASCENT_BUILD/fuzz/bin/ascend_import" "$ASCENT_ROOT"/tests/fuzz/corpus/ascend_import/* ascend_pytorch_profiler_cut.db rows.db \
  || fail "the fuzz replayer failed"
echo "import_ascend: ok"
