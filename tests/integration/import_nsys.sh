#!/usr/bin/env bash
# import_nsys.sh — `ascent import` of Nsight Systems SQLite exports: the real export of
# tests/fixtures/nsys (an MPI + CUDA SAXPY run) checked against totals computed with Python's
# sqlite3 from the file itself; a two-process export made from it (two ranks, NVTX steps);
# bad input (exit 2 naming the file and table, no output left, the input untouched).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/nsys"
fail() { echo "FAIL: $*"; exit 1; }
gzip -dc "$F/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz" >saxpy.sqlite
sum0=$(md5sum saxpy.sqlite)
"$ASCENT" import saxpy.sqlite -o saxpy.db -q 2>saxpy.err || fail "import: $(cat saxpy.err)"
[[ ! -s saxpy.err ]] || fail "warnings on the real export: $(cat saxpy.err)"
[[ "$(md5sum saxpy.sqlite)" == "$sum0" ]] || fail "the input changed"
ls saxpy.sqlite-* 2>/dev/null && fail "files written beside the input"
"$ASCENT" report saxpy.db --format json >saxpy.json

# the expected figures, from the export with our own SQL
cat >expect.py <<'PY'
import json, sqlite3, sys
rep = json.load(open(sys.argv[1])); db = sqlite3.connect(sys.argv[2]); nranks = int(sys.argv[3])
q = lambda s: db.execute(s).fetchall()
want = {}
for name, n, tot in q("SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1"):
    want[(name, "kernel")] = (n * nranks, tot * nranks)
kinds = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}
for ck, n, tot in q("SELECT copyKind, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"):
    want[("Memcpy " + kinds[ck], "memcpy")] = (n * nranks, tot * nranks)
got = {(o["name"], o["kind"]): (o["instances"], o["total_ns"]) for o in rep["ops"]
       if o["kind"] in ("kernel", "memcpy", "memset")}
assert got == want, (got, want)
assert len(rep["ranks"]) == nranks, rep["ranks"]
host = q("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'")[0][0]
assert all(r["host"] == host for r in rep["ranks"]), rep["ranks"]
# every kernel and copy is linked to its launch (the runtime call with its correlation id), and
# counted as what it is
nk = q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
nc = q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")[0][0]
links = [sum(l[k] for l in rep["launch"]) for k in ("linked", "kernels_linked", "copies_linked", "memsets_linked")]
assert links == [(nk + nc) * nranks, nk * nranks, nc * nranks, 0], (rep["launch"], nk, nc)
print("ok", sorted(got.items()))
PY
python3 expect.py saxpy.json saxpy.sqlite 1 || fail "report differs from the export"
# the MPI calls (NVTX ranges of the MPI domain): point-to-point events on the rank's thread
n_p2p=$(sqlite3 saxpy.db "SELECT count(*) FROM event WHERE kind = 2")
n_src=$(sqlite3 saxpy.sqlite "SELECT count(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value IN ('MPI_Send','MPI_Recv')")
[[ "$n_p2p" == "$n_src" && "$n_p2p" -gt 0 ]] || fail "MPI_Send/Recv: $n_p2p point-to-point events, $n_src in the export"
src=$(sqlite3 saxpy.db "SELECT value FROM meta WHERE key = 'import_source'")
[[ "$src" == "nsight systems (sqlite export)" ]] || fail "import_source is '$src'"
"$ASCENT" view saxpy.db --dump timeline --size 120x30 >tl.txt || fail "view"
grep -q "t1 gpu 0" tl.txt || fail "no device lane in the timeline"

# two processes in one export (the second a copy with another pid and "MPI Rank 1"), and NVTX
# ranges named "step N": two ranks, steps from the ranges
python3 - <<'PY'
import sqlite3, shutil
shutil.copy("saxpy.sqlite", "two.sqlite")
db = sqlite3.connect("two.sqlite")
P = 1 << 24
for t, c in (("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"), ("CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid"),
             ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"), ("NVTX_EVENTS", "globalTid"), ("ThreadNames", "globalTid")):
    cols = [r[1] for r in db.execute(f"PRAGMA table_info({t})")]
    sel = ", ".join(f"{x} + {P}" if x == c else x for x in cols)
    db.execute(f"INSERT INTO {t} ({', '.join(cols)}) SELECT {sel} FROM {t}")
db.execute(f"UPDATE NVTX_EVENTS SET text = 'MPI Rank 1' WHERE text = 'MPI Rank 0' AND globalTid >= (SELECT min(globalTid) + {P} FROM NVTX_EVENTS)")
tid = db.execute("SELECT min(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
for p in (0, P):
    for i, (s, e) in enumerate(((900000000, 1150000000), (1150000000, 1400000000))):
        db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
                   (s, e, "step %d" % i, tid + p))
db.commit()
PY
"$ASCENT" import two.sqlite -o two.db -q 2>two.err || fail "two-process import: $(cat two.err)"
"$ASCENT" report two.db --format json >two.json
python3 expect.py two.json saxpy.sqlite 2 || fail "two-process report"
python3 - <<'PY' || fail "two ranks / steps"
import json
d = json.load(open("two.json"))
assert sorted(r["rank"] for r in d["ranks"]) == [0, 1], d["ranks"]
assert all(r["steps"] == 2 for r in d["ranks"]), d["ranks"]
PY
# --step-range: no range matches -> no steps
"$ASCENT" import two.sqlite -o two_nosteps.db -q --step-range '^never$'
[[ "$(sqlite3 two_nosteps.db 'SELECT count(*) FROM event WHERE kind = 3')" == 0 ]] || fail "--step-range ignored"

# Nsight's MPI trace tables (`--trace=mpi` in newer versions; the real export predates them):
# MPI_P2P_EVENTS, MPI_COLLECTIVES_EVENTS, MPI_START_WAIT_EVENTS, MPI_OTHER_EVENTS and MPI_RANKS with
# the columns Nsight Systems' own `mpi_event_trace` report reads, added to the two-process copy.
# MPI_RANKS gives the first process (pid order) rank 1 and the second rank 0, over their "MPI Rank N"
# markers. Expected figures from the file with our own SQL.
python3 - <<'PY'
import sqlite3, shutil, random
shutil.copy("two.sqlite", "mpi.sqlite")
db = sqlite3.connect("mpi.sqlite")
q = lambda s, *a: db.execute(s, a).fetchall()
tids = [r[0] for r in q("SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY globalTid")]
t0 = q("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0] + 1000000
mx = q("SELECT max(id) FROM StringIds")[0][0]
names = ["MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Sendrecv", "MPI_Allreduce", "MPI_Bcast", "MPI_Allgather",
         "MPI_Barrier", "MPI_Wait", "MPI_Comm_split"]
ids = {n: mx + 1 + i for i, n in enumerate(names)}
db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, n) for n, i in ids.items()])
db.execute("CREATE TABLE MPI_P2P_EVENTS (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, textId INTEGER, size INTEGER, tag INTEGER, remoteRank INTEGER)")
db.execute("CREATE TABLE MPI_COLLECTIVES_EVENTS (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, textId INTEGER, size INTEGER, recvSize INTEGER, rootRank INTEGER)")
for t in ("MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS"):
    db.execute(f"CREATE TABLE {t} (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, textId INTEGER)")
db.execute("CREATE TABLE MPI_RANKS (globalTid INTEGER, rank INTEGER)")
rnd = random.Random(12)
for p, tid in enumerate(tids):
    rank, other = (1, 0) if p == 0 else (0, 1)
    db.execute("INSERT INTO MPI_RANKS VALUES (?, ?)", (tid, rank))
    t = t0
    for i in range(12):
        n = ("MPI_Send", "MPI_Recv", "MPI_Isend")[i % 3]
        db.execute("INSERT INTO MPI_P2P_EVENTS VALUES (?, ?, ?, ?, ?, 7, ?)",
                   (t, t + rnd.randrange(100, 900), tid, ids[n], rnd.randrange(1, 1 << 20), other))
        t += 1000
    # an MPI_Sendrecv whose halves differ: two rows of one call (one event, bytes summed)
    for sz in (4096, 512):
        db.execute("INSERT INTO MPI_P2P_EVENTS VALUES (?, ?, ?, ?, ?, 3, ?)", (t, t + 600, tid, ids["MPI_Sendrecv"], sz, other))
    t += 1000
    for i in range(8):
        n = ("MPI_Allreduce", "MPI_Bcast", "MPI_Allgather", "MPI_Barrier")[i % 4]
        sz = 0 if n == "MPI_Barrier" else rnd.randrange(1, 1 << 22)
        rs = sz * 2 if n == "MPI_Allgather" else sz
        db.execute("INSERT INTO MPI_COLLECTIVES_EVENTS VALUES (?, ?, ?, ?, ?, ?, 1)", (t, t + rnd.randrange(100, 900), tid, ids[n], sz, rs))
        t += 1000
    db.execute("INSERT INTO MPI_START_WAIT_EVENTS VALUES (?, ?, ?, ?)", (t, t + 300, tid, ids["MPI_Wait"]))
    db.execute("INSERT INTO MPI_OTHER_EVENTS VALUES (?, ?, ?, ?)", (t + 1000, t + 1100, tid, ids["MPI_Comm_split"]))
    # damaged rows: reversed times, a name not in StringIds (skipped, counted)
    db.execute("INSERT INTO MPI_P2P_EVENTS VALUES (?, ?, ?, ?, 8, 1, 0)", (t + 2000, t + 1000, tid, ids["MPI_Send"]))
    db.execute("INSERT INTO MPI_COLLECTIVES_EVENTS VALUES (?, ?, ?, 999999, 8, 8, 0)", (t + 3000, t + 3100, tid))
db.commit()
PY
"$ASCENT" import mpi.sqlite -o mpi.db -q 2>mpi.err || fail "import with MPI tables: $(cat mpi.err)"
grep -q "2 .*MPI_P2P_EVENTS" mpi.err || fail "the reversed MPI_P2P_EVENTS rows (one a process) not counted: $(cat mpi.err)"
grep -q "2 .*MPI_COLLECTIVES_EVENTS" mpi.err || fail "the nameless MPI_COLLECTIVES_EVENTS rows not counted: $(cat mpi.err)"
"$ASCENT" report mpi.db --format json >mpi.json
python3 - <<'PY' || fail "MPI tables: events, bytes, peers or ranks differ from the export"
import json, sqlite3
rep = json.load(open("mpi.json")); src = sqlite3.connect("mpi.sqlite"); out = sqlite3.connect("mpi.db")
q = lambda db, s: db.execute(s).fetchall()
rank_of = dict(q(src, "SELECT (globalTid >> 24) & 16777215, rank FROM MPI_RANKS"))
ok = "end >= start AND textId IN (SELECT id FROM StringIds)"
# point-to-point: one event per (thread, name, start, end), bytes summed, the first row's peer
want = sorted(q(src, f"SELECT (globalTid >> 24) & 16777215, s.value, count(*), sum(b), sum(e - st) FROM (SELECT globalTid, textId, start AS st, end AS e,"
                     f" sum(size) AS b FROM MPI_P2P_EVENTS WHERE {ok} GROUP BY globalTid, start, end, textId) JOIN StringIds s ON s.id = textId GROUP BY 1, 2"))
want = sorted((rank_of[p], n, c, b, d) for p, n, c, b, d in want)
got = sorted(q(out, "SELECT e.rank, s.value, count(*), sum(e.bytes), sum(e.dur_ns) FROM event e JOIN string s ON s.id = e.name_id"
                    " WHERE e.kind = 2 AND e.bytes > 0 GROUP BY 1, 2"))
assert got == want and len(want) == 8, (got, want)
peers = q(out, "SELECT DISTINCT rank, peer FROM event WHERE kind = 2 AND bytes > 0 ORDER BY 1")
assert peers == [(0, 1), (1, 0)], peers
# collectives: bytes = the larger of the send and receive sizes; the root only for rooted calls
want = sorted(q(src, f"SELECT (globalTid >> 24) & 16777215, s.value, count(*), sum(max(size, recvSize)), sum(end - start) FROM MPI_COLLECTIVES_EVENTS c"
                     f" JOIN StringIds s ON s.id = c.textId WHERE {ok} GROUP BY 1, 2"))
want = sorted((rank_of[p], n, c, b, d) for p, n, c, b, d in want)
got = sorted(q(out, "SELECT e.rank, s.value, count(*), sum(e.bytes), sum(e.dur_ns) FROM event e JOIN string s ON s.id = e.name_id"
                    " WHERE e.kind = 1 AND s.value LIKE 'MPI_%' AND e.comm_id IS NOT NULL GROUP BY 1, 2"))
assert got == want and len(want) == 8, (got, want)
roots = q(out, "SELECT DISTINCT s.value, e.peer FROM event e JOIN string s ON s.id = e.name_id WHERE e.kind = 1 AND s.value LIKE 'MPI_%' ORDER BY 1")
assert roots == [("MPI_Allgather", None), ("MPI_Allreduce", None), ("MPI_Barrier", None), ("MPI_Bcast", 1)], roots
# the collectives' report rows: bytes per name as the export gives them, calls matched across ranks
comm = {}
for c in rep["comm"]:
    if c["name"].startswith("MPI_"):
        comm[c["name"]] = comm.get(c["name"], 0) + c["bytes"]
        assert c["group_size"] == 2 and c["matched"] == c["count"], c
want = dict(q(src, f"SELECT s.value, sum(max(size, recvSize)) FROM MPI_COLLECTIVES_EVENTS c JOIN StringIds s ON s.id = c.textId WHERE {ok} GROUP BY 1"))
assert comm == want, (comm, want)
# start/wait and other calls: ranges
other = q(out, "SELECT s.value, e.kind, count(*) FROM event e JOIN string s ON s.id = e.name_id WHERE s.value IN ('MPI_Wait', 'MPI_Comm_split') GROUP BY 1, 2")
assert other == [("MPI_Comm_split", 8, 2), ("MPI_Wait", 8, 2)], other
assert sorted(r["rank"] for r in rep["ranks"]) == [0, 1], rep["ranks"]
print("ok MPI tables", sorted(comm.items()))
PY

# tables the real export holds empty (CUPTI memsets, OS runtime calls, GPU memory usage): rows
# added exactly as its own CREATE TABLE statements define them (Nsight Systems 2022.2.1, export
# schema 2.9.1), checked against totals computed here from the file
python3 - <<'PY'
import sqlite3, shutil
shutil.copy("saxpy.sqlite", "more.sqlite")
db = sqlite3.connect("more.sqlite")
q = lambda s, *a: db.execute(s, a).fetchall()
tid, t0 = q("SELECT globalTid, min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0]
gpid = q("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")[0][0]
corr = q("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0] + 1
mx = q("SELECT max(id) FROM StringIds")[0][0]
db.execute("INSERT INTO StringIds VALUES (?, 'cudaMemsetAsync'), (?, 'pthread_mutex_lock'), (?, 'read')", (mx + 1, mx + 2, mx + 3))
for i in range(3):   # memsets on stream 7, the first two launched by a runtime call
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?, ?, 1, ?, ?, ?, 0)",
               (t0 + 1000 * i, t0 + 1000 * i + 300, tid, corr + i, mx + 1))
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, memKind) VALUES (?, ?, 0, 1, 7, ?, ?, 0, ?, 2)",
               (t0 + 1000 * i + 500, t0 + 1000 * i + 900 + 10 * i, corr + i if i < 2 else None, gpid, 4096 << i))
for i in range(6):   # OS runtime calls on two threads of the process, one with its end before its start
    db.execute("INSERT INTO OSRT_API (start, end, eventClass, globalTid, nameId, returnValue, nestingLevel, callchainId) VALUES (?, ?, 0, ?, ?, 0, 0, 0)",
               (t0 + 100 * i, t0 + 100 * i + (40 if i < 5 else -5), tid + (i % 2), mx + 2 + i % 2))
# two devices of the process, their records interleaved in time: each its own running sum
for i, (b, op, dev) in enumerate(((1 << 20, 0, 0), (7 << 20, 0, 1), (3 << 20, 0, 0), (1 << 20, 1, 0), (2 << 20, 1, 1),
                                  (5 << 20, 0, 0), (1 << 20, 0, 1))):
    db.execute("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType) VALUES (?, ?, ?, 1, ?, 0, ?, 2, ?)",
               (t0 + 50 * i, gpid, dev, 4096 * i, b, op))
db.commit()
PY
"$ASCENT" import more.sqlite -o more.db -q 2>more.err || fail "import with memsets, OS calls, memory: $(cat more.err)"
grep -q "1 .*OSRT_API" more.err || fail "the OS call with a reversed time not counted: $(cat more.err)"
"$ASCENT" report more.db --format json >more.json
python3 - <<'PY' || fail "memsets / OS calls / memory differ from the export"
import json, sqlite3
rep = json.load(open("more.json")); src = sqlite3.connect("more.sqlite"); out = sqlite3.connect("more.db")
q = lambda db, s: db.execute(s).fetchall()
ms = q(src, "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMSET")[0]
got = [(o["instances"], o["total_ns"]) for o in rep["ops"] if o["kind"] == "memset"]
assert got == [ms], (got, ms)
osrt = q(src, "SELECT s.value, count(*), sum(end - start) FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId WHERE end >= start GROUP BY 1 ORDER BY 1")
mine = q(out, "SELECT s.value, count(*), sum(e.dur_ns) FROM event e JOIN string s ON s.id = e.name_id WHERE s.value IN ('read', 'pthread_mutex_lock') GROUP BY 1 ORDER BY 1")
assert osrt == mine and len(osrt) == 2, (osrt, mine)
lanes = q(out, "SELECT count(DISTINCT e.tid) FROM event e JOIN string s ON s.id = e.name_id WHERE s.value IN ('read', 'pthread_mutex_lock')")[0][0]
assert lanes == 2, lanes
mem, run = {}, {}
for dev, b, op in q(src, "SELECT deviceId, bytes, memoryOperationType FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start"):
    run[dev] = run.get(dev, 0) + (-b if op == 1 else b)
    m = mem.setdefault(dev, [0, 0, 0, 0])   # allocs, frees, peak, final
    m[0 if op != 1 else 1] += 1
    m[2], m[3] = max(m[2], run[dev]), run[dev]
rows = {r["device"]: [r["allocs"], r["frees"], r["peak_bytes"], r["final_bytes"]] for r in rep["mem"]}
assert len(mem) == 2 and rows == mem, (rows, mem)   # device 0: peak 8 MiB, final 8; device 1: peak 7, final 6
linked = q(src, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)")[0][0]
flows = q(out, "SELECT count(*) FROM flow f JOIN event e ON e.rank = f.rank AND e.tid = f.dst_tid AND e.start_ns = f.dst_ns WHERE e.kind = 13")[0][0]
assert linked == flows == 2, (linked, flows)
print("ok memsets", got, "os calls", osrt, "memory", rows)
PY

# bad input
expect_bad() {   # expect_bad WHAT FILE PATTERN
  set +e; "$ASCENT" import "$2" -o bad.db -q 2>bad.err; rc=$?; set -e
  [[ $rc == 2 ]] || fail "$1: exit $rc ($(cat bad.err))"
  grep -q -- "$3" bad.err || fail "$1: message '$(cat bad.err)' lacks '$3'"
  [[ ! -e bad.db ]] || fail "$1: output left behind"
  ls bad.db.tmp-* 2>/dev/null && fail "$1: temporary left behind"
  return 0
}
head -c 100000 saxpy.sqlite >cut.sqlite
set +e; "$ASCENT" import cut.sqlite -o cut.db -q 2>cut.err; rc=$?; set -e
[[ $rc == 0 || $rc == 2 ]] || fail "truncated export: exit $rc"
python3 -c 'import sqlite3; db=sqlite3.connect("plain.sqlite"); db.execute("CREATE TABLE t(x)"); db.commit()'
expect_bad "an SQLite file that is no export" plain.sqlite "not an Nsight Systems export"
python3 - <<'PY'
import sqlite3, shutil
shutil.copy("saxpy.sqlite", "nocol.sqlite")
db = sqlite3.connect("nocol.sqlite")
db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN demangledName TO other")
db.commit()
shutil.copy("saxpy.sqlite", "badrows.sqlite")
db = sqlite3.connect("badrows.sqlite")
db.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = start - 5 WHERE rowid IN (1, 2)")
db.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 999999 WHERE rowid = 1")
db.commit()
PY
expect_bad "a kernel table without demangledName" nocol.sqlite "table CUPTI_ACTIVITY_KIND_KERNEL has no column demangledName"
"$ASCENT" import badrows.sqlite -o badrows.db -q 2>badrows.err || fail "bad rows refused the file"
grep -q "2 .*CUPTI_ACTIVITY_KIND_MEMCPY" badrows.err || fail "bad copy times not counted: $(cat badrows.err)"
grep -q "1 .*CUPTI_ACTIVITY_KIND_RUNTIME" badrows.err || fail "nameless runtime call not counted: $(cat badrows.err)"
set +e; "$ASCENT" import saxpy.sqlite -o saxpy.sqlite -q 2>same.err; rc=$?; set -e
[[ $rc == 2 ]] || fail "-o = input: exit $rc"
[[ "$(md5sum saxpy.sqlite)" == "$sum0" ]] || fail "-o = input changed the input"
# the fuzz target's replayer on its seeds and on the damaged files above (no crash, no stray file)
[[ ! -x "$ASCENT_BUILD/fuzz/bin/nsys_import" ]] || "$ASCENT_BUILD/fuzz/bin/nsys_import" "$ASCENT_ROOT"/tests/fuzz/corpus/nsys_import/* cut.sqlite plain.sqlite nocol.sqlite badrows.sqlite \
  || fail "the fuzz replayer failed"
echo "import_nsys: ok"
