#!/usr/bin/env bash
# tests/integration/dist_comm_busbw.sh — the report's bus bandwidth is the transfer's, not the
# post→completion span's: a DP=2 profile of the tiny preset (make demo's run, fewer steps, one thread
# per rank), whose `report --format json` busbw for the 1 MB gradient allreduce bucket must equal the
# figure this script computes itself from trace.db: bytes over the transit time of every call (from
# the last member's arrival, on rank 0's clock, to the call's end), times allreduce's 2(n−1)/n.
# Every such collective must sit on a communication lane (a thread row named "comm …"), and the
# transit figure can only be at or above the recorded span's.
# How close that busbw comes to `diag comm`'s for the same size is a timing, so it is measured in
# `make bench` (bench_dist's "dist_demo_busbw" line), not asserted here.
set -uo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
train 2 demo --preset tiny --steps 6 --batch 32 --threads 1 --eval-every 0 --eval-batches 1 --profile --dp 2
"$ASCENT" report demo/trace.db --format json >report.json || { echo "FAIL: report"; exit 1; }
python3 - <<'PY' || exit 1
import json, sqlite3
rows = [c for c in json.load(open("report.json"))["comm"] if c["name"] == "allreduce" and c["size_bucket"] == 1 << 20]
assert rows and rows[0]["count"] >= 6 and rows[0]["busbw_gbs"] > 0, ("no 1 MB allreduce bucket", rows)
got = rows[0]["busbw_gbs"]

db = sqlite3.connect("demo/trace.db")
t0min = db.execute("SELECT t0_ns FROM rank ORDER BY rank LIMIT 1").fetchone()[0]
shift = {r: (t0 or 0) + (off or 0) - t0min for r, t0, off in db.execute("SELECT rank, t0_ns, clock_offset_ns FROM rank")}
lanes = {(r, t): n or "" for r, t, n in db.execute("SELECT rank, tid, name FROM thread")}
def bucket(b):
    p = 1
    while p <= b // 2:
        p *= 2
    return p
calls = {}
for rank, tid, comm_id, seq, nbytes, start, dur in db.execute(
        "SELECT e.rank, e.tid, e.comm_id, e.seq, e.bytes, e.start_ns, e.dur_ns FROM event e "
        "JOIN string s ON s.id = e.name_id WHERE s.value = 'allreduce' AND e.kind = 1 "
        "AND e.comm_id IS NOT NULL AND e.seq IS NOT NULL"):
    if bucket(nbytes or 0) != 1 << 20:
        continue
    assert "comm" in lanes.get((rank, tid), ""), ("allreduce not on a comm lane", rank, tid, lanes.get((rank, tid)))
    s = start + shift[rank]
    calls.setdefault((comm_id, seq), []).append((s, s + dur, nbytes))
assert calls and all(len(v) == 2 for v in calls.values()), ("every call matched on both ranks", calls)
nbytes = transit = span = 0
for v in calls.values():
    last = max(s for s, e, b in v)
    for s, e, b in v:
        nbytes += b
        transit += e - min(last, e)
        span += e - s
assert transit > 0
want = nbytes / transit * 2 * (2 - 1) / 2
print("report busbw %.4f GB/s, from the transit %.4f GB/s, from the span %.4f GB/s (%d calls)"
      % (got, want, nbytes / span, len(calls)))
assert abs(got - want) <= 1e-6 * want + 1e-9, ("report busbw is not the transit's", got, want)
assert got >= nbytes / span * (1 - 1e-9), ("transit figure below the span's", got, nbytes / span)
PY
echo ok
