#!/usr/bin/env bash
# tests/integration/comm_hang.sh — the watchdog and the flight recorder for real: rank 1 never
# enters its 40th collective (ASCENT_FAULT=hang), ASCENT_COMM_TIMEOUT=2 must stop the 4-rank job
# within seconds with a message naming rank, communicator, operation and seq; every rank leaves a
# dump (the stuck ones on timeout, rank 1 on the SIGTERM mpirun sends), and `ascent diag hang`
# names the stuck ranks and rank 1 as the one that never arrived, in text and in JSON.
set -uo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=2 ASCENT_FAULT=hang:rank=1,seq=40
start=$(date +%s)
# the hung rank dumps on the SIGTERM mpirun sends; on a loaded machine one second before SIGKILL
# (odls_base_sigkill_timeout, default 1) may not be enough for it to be scheduled
timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 --mca odls_base_sigkill_timeout 5 -x ASCENT_COMM_TIMEOUT -x ASCENT_FAULT -np 4 \
  "$ASCENT" comm-selftest --test loop --iters 100 --run-dir run >out.txt 2>err.txt
rc=$?
el=$(( $(date +%s) - start ))
cat err.txt | head -20
[[ $rc -ne 0 && $rc -ne 124 ]] || { echo "FAIL: job exit $rc (expected a non-zero exit, not the test's timeout)"; exit 1; }
[[ $el -le 30 ]] || { echo "FAIL: took ${el}s to stop"; exit 1; }
grep -Eq "comm timeout on rank [023] .*: allreduce seq 40 on communicator 'world'" err.txt ||
  { echo "FAIL: no timeout message naming rank, op, seq and communicator"; exit 1; }
for r in 0 1 2 3; do
  f=run/flight/rank-0000$r.json
  [[ -s $f ]] || { ls -R run; echo "FAIL: no dump $f"; exit 1; }
done
ls run/flight | grep -q tmp && { echo "FAIL: temporary dump left behind"; exit 1; }

"$ASCENT" diag hang run >hang.txt 2>hang.err
hrc=$?
cat hang.txt
[[ $hrc -eq 1 ]] || { cat hang.err; echo "FAIL: diag hang exit $hrc, expected 1 (FAIL)"; exit 1; }
grep -q "rank 1 ([^)]*) never arrived at allreduce seq 40 on 'world'" hang.txt || { echo "FAIL: missing rank not named"; exit 1; }
for r in 0 2 3; do
  grep -q "rank $r ([^)]*) in allreduce seq 40 on 'world'" hang.txt || { echo "FAIL: stuck rank $r not named"; exit 1; }
done

"$ASCENT" diag hang run --json >hang.json 2>/dev/null
python3 - <<'PY' || { cat hang.json; echo "FAIL: diag hang --json"; exit 1; }
import json
d = json.load(open("hang.json"))
st = {c["name"]: c["status"] for c in d["checks"]}
assert all(set(c) >= {"name", "status", "message", "fix"} for c in d["checks"]), d["checks"]
assert st["hang.stuck"] == "FAIL" and st["hang.missing"] == "FAIL" and st["hang.dumps"] == "PASS", st
assert sorted(s["rank"] for s in d["stuck"]) == [0, 2, 3], d["stuck"]
assert all(s["op"] == "allreduce" and s["seq"] == 40 and s["comm"] == "world" and s["waited_s"] >= 2 for s in d["stuck"])
assert [(m["rank"], m["seq"], m["last_completed"]) for m in d["missing"]] == [(1, 40, 39)], d["missing"]
# the dumps themselves: rank 1 stopped after 39 completed collectives, the others have 40 started
r1 = json.load(open("run/flight/rank-00001.json")); r0 = json.load(open("run/flight/rank-00000.json"))
# the first stuck rank to time out aborts the job; the others may be stopped by mpirun's SIGTERM
# before their own watchdog fires, so "timeout" is required of one stuck rank, not of rank 0
reasons = [json.load(open("run/flight/rank-0000%d.json" % r))["reason"] for r in (0, 2, 3)]
assert r1["reason"] == "SIGTERM", r1["reason"]
assert "timeout" in reasons and set(reasons) <= {"timeout", "SIGTERM"}, reasons
w1 = [c for c in r1["comms"] if c["kind"] == "world"][0]; w0 = [c for c in r0["comms"] if c["kind"] == "world"][0]
assert (w1["last_enqueued"], w1["last_completed"]) == (39, 39), w1
assert (w0["last_started"], w0["last_completed"]) == (40, 39), w0
e = r0["entries"][-1]
assert e["state"] == "started" and e["seq"] == 40 and e["completed_ns"] == 0 and e["started_ns"] >= e["enqueued_ns"] > 0, e
assert all(x["state"] == "completed" for x in r0["entries"][:-1])
print("json ok")
PY
echo "comm hang ok (stopped after ${el}s)"
