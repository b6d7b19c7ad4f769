#!/usr/bin/env bash
# tests/integration/dist_profile.sh — `ascent train --profile` under mpirun: every rank writes its
# database, rank 0 merges them into RUN/trace.db (parts removed) with the viewer's tables ready;
# the gradient allreduces are traced on the DP communicator's lane (matched across ranks) and some
# of them overlap the backward; the Chrome export draws every collective as an X event on its lane,
# with no operator nested under it; counters (loss, lr, loss scale, tokens/s) and the meta keys the
# advisor reads are there; memory categories per rank show what ZeRO-1 saves (the optimizer state
# of DP=2 ZeRO-1 is half of DDP's) and what TP saves (parameters per rank); a pipeline run's step
# table has a bubble on every rank while a DP run has none (the size of the bubble against theory
# is timing, measured in bench/bench_dist.sh; the schedules' own bubble is checked exactly against
# theory in tests/unit/test_trainer_pp.c).
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
P=("${SMALL[@]}" --steps 6 --profile)
train 2 ddp "${P[@]}" --dp 2
train 2 z1 "${P[@]}" --dp 2 --zero 1
train 2 tp2 "${P[@]}" --tp 2
train 2 pp2 "${P[@]}" --pp 2 --schedule gpipe --microbatches 4
for r in ddp z1 tp2 pp2; do
  [[ -f $r/trace.db ]] || { echo "FAIL: $r/trace.db missing"; exit 1; }
  ! ls $r/rank-*.db >/dev/null 2>&1 || { echo "FAIL: $r: rank databases not removed after the merge"; exit 1; }
  grep -q "profile: $r/trace.db" $r.log || { echo "FAIL: $r: the run does not say where trace.db is"; exit 1; }
done
"$ASCENT" report ddp/trace.db > report.txt
grep -q "allreduce" report.txt
"$ASCENT" view ddp/trace.db --dump overview --size 100x30 > view.txt
# the export: collectives on their communicator's lane (a thread row named with "comm"), each an X
# event, no operator nested under one, no async events for them
"$ASCENT" export ddp/trace.db -o ddp.json >/dev/null
python3 - <<'PY'
import json
ev = json.load(open("ddp.json"))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
comm = [e for e in ev if e.get("cat") == "comm"]
assert comm and all(e["ph"] == "X" for e in comm), {e["ph"] for e in comm}
assert all("comm" in names[(e["pid"], e["tid"])] for e in comm), "a collective off its lane"
ops = {}
for e in ev:
    if e.get("cat") == "op" and e.get("ph") == "X":
        ops.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
for e in comm:
    for a, b in ops.get((e["pid"], e["tid"]), []):
        assert not (a >= e["ts"] and b <= e["ts"] + e["dur"]), ("an operator nested under a collective", e)
waits = [e for e in ev if e.get("cat") == "wait"]
assert waits and all("comm" not in names[(e["pid"], e["tid"])] for e in waits), "waits belong to the computing thread"
print("export: %d collectives on lanes %s, %d waits" % (len(comm), sorted({names[(e['pid'], e['tid'])] for e in comm}),
                                                      len(waits)))
PY
python3 - <<'PY'
import sqlite3
def q(db, sql): return sqlite3.connect(db).execute(sql).fetchall()
def mem(db, cat):
    return dict(q(db, "SELECT rank, peak_bytes FROM mem_peak WHERE category = '%s'" % cat))
# the DP gradient buckets: non-blocking allreduces on the dp communicator, matched across ranks
rows = q("ddp/trace.db", "SELECT rank, count(*) FROM event e JOIN string s ON s.id = e.name_id "
         "WHERE e.kind = 1 AND s.value = 'allreduce' AND e.comm_id = 16777216 GROUP BY rank")
assert len(rows) == 2 and rows[0][1] == rows[1][1] and rows[0][1] >= 6, rows
over = q("ddp/trace.db", "SELECT sum(overlapped_ns), sum(comm_ns) FROM step_stat")[0]
assert over[0] > 0, "no gradient communication overlaps computation: %s" % (over,)
names = {r[0] for r in q("ddp/trace.db", "SELECT DISTINCT s.value FROM counter c JOIN string s ON s.id = c.name_id")}
assert {"loss", "lr", "loss_scale", "tokens_per_s", "grad_norm"} <= names, names
meta = dict(q("ddp/trace.db", "SELECT key, value FROM meta"))
for k in ("blas_core", "blas_threads", "host_cores", "cpu_isa", "cpu_brand", "host_mem_bytes", "pp", "microbatches",
          "virtual_stages"):
    assert k in meta, "meta %s missing" % k
cfg = q("ddp/trace.db", "SELECT config_json FROM run")[0][0]
assert '"pp":1' in cfg and '"microbatches"' in cfg and '"virtual_stages"' in cfg, cfg
# ZeRO-1 at DP=2 halves the optimizer state per rank; TP=2 shards the block matrices
d, z = mem("ddp/trace.db", "optimizer"), mem("z1/trace.db", "optimizer")
for r in (0, 1):
    assert 0.45 < z[r] / d[r] < 0.55, ("zero-1 optimizer bytes", z, d)
p1, p2 = mem("ddp/trace.db", "param"), mem("tp2/trace.db", "param")
assert p2[0] < 0.7 * p1[0], ("tp2 params per rank", p2, p1)
assert mem("pp2/trace.db", "comm_buffer"), "pipeline buffers not recorded"
# bubble: every pipeline rank waits in receives; data parallelism has no pipeline bubble
b = q("pp2/trace.db", "SELECT rank, sum(bubble_ns) FROM step_stat GROUP BY rank")
assert len(b) == 2 and all(x[1] > 0 for x in b), b
assert q("ddp/trace.db", "SELECT sum(bubble_ns) FROM step_stat")[0][0] == 0
print("profile checks passed; optimizer bytes ddp %s zero-1 %s" % (d, z))
PY
echo ok
