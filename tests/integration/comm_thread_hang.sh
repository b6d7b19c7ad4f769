#!/usr/bin/env bash
# tests/integration/comm_thread_hang.sh — a hang inside the communication thread: rank 1 enqueues
# its 5th non-blocking allreduce but its thread never starts it (ASCENT_FAULT=stall). The watchdog
# (ASCENT_COMM_TIMEOUT=2) stops the job naming the call as enqueued and never started, every rank
# dumps its flight recorder, and `ascent diag hang` names rank 1 as the one that never arrived,
# with its communication thread stuck, in text and in JSON.
set -uo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=2 ASCENT_FAULT=stall:rank=1,seq=5
timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 --mca odls_base_sigkill_timeout 5 -x ASCENT_COMM_TIMEOUT \
  -x ASCENT_FAULT -np 2 "$ASCENT" comm-selftest --test loop --nonblocking --iters 20 --run-dir run >out.txt 2>err.txt
rc=$?
head -20 err.txt
[[ $rc -ne 0 && $rc -ne 124 ]] || { echo "FAIL: job exit $rc (expected a non-zero exit, not the test's timeout)"; exit 1; }
grep -Eq "comm timeout on rank [01] .*: allreduce seq 5 .*on communicator 'world'" err.txt ||
  { echo "FAIL: no timeout message naming rank, op, seq and communicator"; exit 1; }
for r in 0 1; do [[ -s run/flight/rank-0000$r.json ]] || { ls -R run; echo "FAIL: no dump of rank $r"; exit 1; }; done
"$ASCENT" diag hang run >hang.txt 2>hang.err
hrc=$?
cat hang.txt
[[ $hrc -eq 1 ]] || { cat hang.err; echo "FAIL: diag hang exit $hrc, expected 1"; exit 1; }
grep -q "rank 1 ([^)]*) never arrived at allreduce seq 5 on 'world': it enqueued the call but never started it" hang.txt ||
  { echo "FAIL: the rank with the stuck communication thread is not named"; exit 1; }
"$ASCENT" diag hang run --json >hang.json 2>/dev/null
python3 - <<'PY' || { cat hang.json; echo "FAIL: diag hang --json"; exit 1; }
import json
d = json.load(open("hang.json"))
m = d["missing"]
assert [(x["rank"], x["seq"], x["last_started"], x["enqueued_not_started"]) for x in m] == [(1, 5, 4, True)], m
r1 = json.load(open("run/flight/rank-00001.json"))
e = [x for x in r1["entries"] if x["seq"] == 5 and x["comm"] == "world"][0]
assert e["state"] == "enqueued" and e["started_ns"] == 0 and e["enqueued_ns"] > 0, e
w = [c for c in r1["comms"] if c["kind"] == "world"][0]
assert (w["last_enqueued"], w["last_started"], w["last_completed"]) == (5, 4, 4), w
print("json ok")
PY
echo "comm thread hang ok"
