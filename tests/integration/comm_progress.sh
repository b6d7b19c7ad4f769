#!/usr/bin/env bash
# tests/integration/comm_progress.sh — non-blocking collectives progress on the communication
# thread while the caller computes, with no poll: each of 2 ranks enqueues a 256 KiB allreduce,
# computes for 1.5 s (a profiled operator that never looks at the request), then waits. From the
# merged profile (times, not wall clocks): the allreduce is on the world's lane (a thread row named
# "comm world", not the computing thread), it ended before the computation did, and the wait found
# it complete (no wait event). A blocking allreduce's caller records its wait. Queueing: the
# 128 KiB allreduce enqueued right behind it carries its queue time as the argument "queue_ns"
# (enqueued after the first was, started after the first ended), the blocking barrier (nothing to
# wait for) none, and `report --format json` sums the arguments per row. A peer 300 ms late: the
# waiting rank's communication thread sleeps on the arrival flags (ranks on one host) with a handful
# of context switches, not thousands of polls (comm-selftest --test late).
set -uo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 \
  "$ASCENT" comm-selftest --test progress --compute-ms 1500 --run-dir run >out.txt 2>err.txt ||
  { cat out.txt err.txt; echo "FAIL: comm-selftest --test progress"; exit 1; }
grep -q "0 failed" out.txt || { cat out.txt; echo "FAIL: wrong allreduce result"; exit 1; }
[[ -f run/trace.db ]] || { ls -R run; echo "FAIL: no merged profile"; exit 1; }
"$ASCENT" report run/trace.db --by comm --format json > rep.json || { echo "FAIL: report"; exit 1; }
"$ASCENT" report run/trace.db --by comm | grep -q Queued || { echo "FAIL: no Queued column in the report"; exit 1; }
"$ASCENT" view run/trace.db --dump comm --size 160x30 | grep -q queued || { echo "FAIL: no queued column in the viewer"; exit 1; }
python3 - <<'PY' || exit 1
import json, sqlite3
db = sqlite3.connect("run/trace.db")
q = lambda sql, *a: db.execute(sql, a).fetchall()
for rank in (0, 1):
    lane = q("SELECT e.start_ns, e.dur_ns, e.seq, t.name, t.os_tid FROM event e JOIN thread t ON t.rank = e.rank AND t.tid = e.tid"
             " WHERE e.rank = ? AND e.kind = 1 AND e.bytes = 262144", rank)
    assert len(lane) == 1, (rank, lane)
    ls, ld, seq, tname, os_tid = lane[0]
    assert "comm" in tname and os_tid == 0, ("the collective is not on a lane", tname, os_tid)
    op = q("SELECT e.start_ns, e.dur_ns, e.tid FROM event e JOIN string s ON s.id = e.name_id"
           " WHERE e.rank = ? AND e.kind = 0 AND s.value = 'compute'", rank)
    assert len(op) == 1, op
    os_, od, otid = op[0]
    assert ls + ld < os_ + od, ("rank %d: the allreduce ended at %d, after the computation (%d..%d): it did not "
                                "progress during it" % (rank, ls + ld, os_, os_ + od))
    waits = q("SELECT dur_ns FROM event WHERE rank = ? AND kind = 10 AND seq = ? AND bytes = 262144", rank, seq)
    assert waits == [], ("rank %d waited for an allreduce that had completed during the computation" % rank, waits)
    # the barrier before it was blocking: its caller (the computing thread) recorded the wait
    bw = q("SELECT e.tid FROM event e JOIN string s ON s.id = e.name_id WHERE e.rank = ? AND e.kind = 10"
           " AND s.value = 'barrier'", rank)
    assert bw and bw[0][0] == otid, ("no wait recorded for the blocking barrier on the computing thread", bw, otid)
    print("rank %d: allreduce on lane '%s' %.1f..%.1f ms, computation %.1f..%.1f ms" %
          (rank, tname, ls / 1e6, (ls + ld) / 1e6, os_ / 1e6, (os_ + od) / 1e6))
    # queueing: enqueue = start - queue_ns; FIFO: the second was enqueued after the first and
    # started after the first ended
    args = {}
    for kind, nbytes, start, dur, a in q("SELECT e.kind, e.bytes, e.start_ns, e.dur_ns, g.args FROM event e JOIN arg g"
                                         " ON g.rank = e.rank AND g.tid = e.tid AND g.start_ns = e.start_ns AND g.kind = e.kind"
                                         " AND g.name_id = e.name_id AND g.dur_ns = e.dur_ns WHERE e.rank = ?", rank):
        assert kind == 1, ("a queue argument on a non-collective", kind)
        args[nbytes] = (start, dur, json.loads(a)["queue_ns"])
    assert 262144 in args and 131072 in args, ("rank %d: no queue_ns on the non-blocking allreduces" % rank, args)
    s1, d1, q1 = args[262144]
    s2, d2, q2 = args[131072]
    assert q1 > 0 and q2 > 0, (q1, q2)
    assert s2 - q2 >= s1 - q1, ("rank %d: the second allreduce's enqueue precedes the first's" % rank, args)
    assert s2 >= s1 + d1, ("rank %d: the second allreduce started before the first ended" % rank, args)
    nb = q("SELECT count(*) FROM arg g JOIN string s ON s.id = g.name_id WHERE g.rank = ? AND s.value = 'barrier'", rank)[0][0]
    assert nb == 0, ("rank %d: a blocking barrier with nothing before it has a queue argument" % rank)
tot = {}
for nbytes, a in q("SELECT e.bytes, g.args FROM event e JOIN arg g ON g.rank = e.rank AND g.tid = e.tid"
                   " AND g.start_ns = e.start_ns AND g.kind = e.kind AND g.name_id = e.name_id"):
    tot[nbytes] = tot.get(nbytes, 0) + json.loads(a)["queue_ns"]
rows = {(c["name"], c["size_bucket"]): c for c in json.load(open("rep.json"))["comm"]}
for nbytes, t in tot.items():
    got = rows[("allreduce", nbytes)]["queue_ns"]
    assert got == t, ("report queue_ns %s for the %d-byte allreduce, the arguments sum to %d" % (got, nbytes, t))
print("queue_ns:", tot)
PY
timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 \
  "$ASCENT" comm-selftest --test late --compute-ms 300 >out.txt 2>err.txt ||
  { cat out.txt err.txt; echo "FAIL: comm-selftest --test late"; exit 1; }
grep -q "0 failed" out.txt || { cat out.txt; echo "FAIL: the late peer's wait"; exit 1; }
cat out.txt
echo "comm progress ok"
