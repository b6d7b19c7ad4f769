#!/usr/bin/env bash
# diff_train.sh — `ascent diff` on two of ascent's own short runs (docs/diff.md): one process against
# DP=2 under mpirun, same model and global batch. Rank 0 against rank 0: the collectives (and the
# waits for them) appear as added, every operator, phase and micro-batch is there on both sides as
# often (each rank runs the same steps on half the batch); every count and total, the step split,
# tokens/s and the peak memory equal what SQL and Python compute here from the two trace.db files.
# The run folders are given as they are (their trace.db is read), and a run against itself changes
# nothing.
set -euo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
S=(--n-layer 2 --n-head 2 --n-embd 32 --max-seq 16 --seq 16 --batch 4 --steps 4 --warmup 1 --threads 1
   --eval-every 0 --eval-batches 1 --profile)
"$ASCENT" train "${S[@]}" --out one >one.log 2>&1 || { tail one.log; fail "train one process"; }
mpirun --oversubscribe -np 2 "$ASCENT" train "${S[@]}" --dp 2 --out dp2 >dp2.log 2>&1 || { tail dp2.log; fail "train DP=2"; }

"$ASCENT" diff one dp2 --rank 0 --format json >d.json || fail "diff one dp2 --rank 0"
"$ASCENT" diff one/trace.db dp2/trace.db >d.txt || fail "diff (table)"
grep -q "allreduce" d.txt && grep -q "tokens/s" d.txt || fail "table: $(head -30 d.txt)"
"$ASCENT" diff one one/trace.db --format json >self.json || fail "diff of a run with itself"

python3 - <<'PY' || fail "diff of two runs differs from the computation here"
import collections, json, sqlite3
KINDS = {0: "op", 1: "comm", 2: "p2p", 4: "phase", 5: "data", 6: "io", 7: "checkpoint", 8: "range", 9: "microbatch",
         10: "wait", 11: "kernel", 12: "memcpy", 13: "memset"}

def side(path, rank=0):
    db = sqlite3.connect(path)
    rows = {}
    for k, n, c, t in db.execute("SELECT e.kind, s.value, count(*), sum(e.dur_ns) FROM event e JOIN string s ON"
                                 " s.id = e.name_id WHERE e.rank = ? AND e.kind != 3 GROUP BY e.kind, s.value", (rank,)):
        rows[(KINDS[k], n)] = (c, t)
    steps = db.execute("SELECT count(*), sum(total_ns), sum(computing_ns), sum(comm_not_overlapped_ns), sum(free_ns)"
                       " FROM step_stat WHERE rank = ?", (rank,)).fetchone()
    tps = db.execute("SELECT avg(c.value) FROM counter c JOIN string s ON s.id = c.name_id"
                     " WHERE s.value = 'tokens_per_s' AND c.rank = ?", (rank,)).fetchone()[0]
    cur, peak = collections.Counter(), 0
    for cat, in_use in db.execute("SELECT category, in_use FROM mem_event WHERE rank = ? ORDER BY ts_ns, rowid", (rank,)):
        cur[cat] = in_use
        peak = max(peak, sum(cur.values()))
    return rows, steps, tps, peak

d = json.load(open("d.json"))
a, b = side("one/trace.db"), side("dp2/trace.db")
got = {(o["kind"], o["name"]): o for o in d["ops"]}
assert set(got) == set(a[0]) | set(b[0]), sorted(set(got) ^ (set(a[0]) | set(b[0])))
for key, o in got.items():
    want = a[0].get(key, (0, 0)) + b[0].get(key, (0, 0))
    assert (o["a_count"], o["a_total_ns"], o["b_count"], o["b_total_ns"]) == want, (key, o, want)
added = sorted(k for k, o in got.items() if o["category"] == "added")
assert ("comm", "allreduce") in added and ("wait", "allreduce") in added, added
assert all(k[0] in ("comm", "wait") for k in added), added
for k, o in got.items():
    if k[0] in ("op", "phase", "microbatch"):
        assert o["category"] == "unchanged", o       # the same work per rank, on half the batch
assert any(k == ("op", "matmul_qkv_bwd") for k in got), sorted(got)
comm = [c for c in d["comm"] if c["name"] == "allreduce"]
assert comm and all(c["a_count"] == 0 and c["b_count"] > 0 for c in comm), comm
assert sum(c["b_bytes"] for c in comm) > 0, comm
for s, (rows, steps, tps, peak) in (("a", a), ("b", b)):
    ov = d["overview"][s]
    assert ov["steps"] == 4 and ov["step_rows"] == steps[0] == 4, (ov, steps)
    assert (ov["step_total_ns"], ov["computing_ns"], ov["comm_not_overlapped_ns"], ov["free_ns"]) == steps[1:], (ov, steps)
    assert abs(ov["tokens_per_s"] - tps) <= 1e-9 * tps, (ov["tokens_per_s"], tps)
    assert ov["peak_mem_bytes"] == peak > 0, (ov["peak_mem_bytes"], peak)
assert d["overview"]["a"]["comm_not_overlapped_ns"] == 0 < d["overview"]["b"]["comm_not_overlapped_ns"]

x = json.load(open("self.json"))
assert x["ops"] and all(o["category"] == "unchanged" and o["diff_total_ns"] == 0 for o in x["ops"])
assert x["overview"]["a"] == x["overview"]["b"]
print("diff of two runs: %d names, %d added" % (len(got), len(added)))
PY
echo "diff_train: ok"
