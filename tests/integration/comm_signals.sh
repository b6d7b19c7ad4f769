#!/usr/bin/env bash
# tests/integration/comm_signals.sh — flight-recorder dumps on SIGUSR1 (the job goes on and ends
# well) and on a crash (ASCENT_FAULT=crash raises SIGSEGV on rank 1: its dump says why); the delay
# fault makes rank 1 slow, and rank 0's dump shows it waiting in every allreduce.
set -uo pipefail
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
export ASCENT_COMM_TIMEOUT=30 ASCENT_FAULT="delay:rank=1,ms=40"
MPI=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -x ASCENT_COMM_TIMEOUT -x ASCENT_FAULT)
"${MPI[@]}" -np 2 "$ASCENT" comm-selftest --test loop --iters 60 --run-dir run >out.txt 2>err.txt &
job=$!
for _ in $(seq 600); do [[ -s run/pids/rank-00000.pid ]] && break; sleep 0.1; done
[[ -s run/pids/rank-00000.pid ]] || { kill $job; cat err.txt; echo "FAIL: no pid file"; exit 1; }
# a loaded host completed only 4 of the 60 calls in the first second: ask for a dump again (each one
# replaces the last) until rank 0 has completed 5 calls, while the job runs
completed() { python3 -c 'import json, sys; d = json.load(open("run/flight/rank-00000.json"))
sys.exit(0 if sum(e["state"] == "completed" for e in d["entries"]) >= 5 else 1)' 2>/dev/null; }
sleep 1.5
for _ in $(seq 60); do
  kill -USR1 "$(cat run/pids/rank-00000.pid)" 2>/dev/null || break
  for _ in $(seq 20); do [[ -s run/flight/rank-00000.json ]] && break; sleep 0.1; done
  completed && break
  sleep 0.5
done
wait $job
rc=$?
[[ $rc -eq 0 ]] || { cat out.txt err.txt; echo "FAIL: the job did not survive SIGUSR1 (exit $rc)"; exit 1; }
[[ -s run/flight/rank-00000.json ]] || { echo "FAIL: no SIGUSR1 dump"; exit 1; }
[[ -e run/flight/rank-00001.json ]] && { echo "FAIL: rank 1 dumped without a signal"; exit 1; }
python3 - <<'PY' || { echo "FAIL: SIGUSR1 dump content"; exit 1; }
import json
d = json.load(open("run/flight/rank-00000.json"))
assert d["reason"] == "SIGUSR1" and d["rank"] == 0 and d["world_size"] == 2, d["reason"]
done = [e for e in d["entries"] if e["state"] == "completed"]
assert len(done) >= 5, len(done)
# rank 1 sleeps 40 ms before each allreduce: rank 0 waits in most of them
waits = sorted((e["completed_ns"] - e["started_ns"]) / 1e6 for e in done)
assert waits[len(waits) // 2] >= 20, waits
assert [e["seq"] for e in done] == list(range(done[0]["seq"], done[0]["seq"] + len(done)))
assert all(e["op"] == "allreduce" and e["comm"] == "world" and e["bytes"] == 8 for e in done)
print("usr1 dump ok: median wait %.1f ms over %d calls" % (waits[len(waits) // 2], len(done)))
PY
"$ASCENT" diag hang run >hang.txt 2>&1
grep -q "PASS hang.stuck" hang.txt || { cat hang.txt; echo "FAIL: a running job's dump was called a hang"; exit 1; }

rm -rf run
ASCENT_FAULT="crash:rank=1,seq=5" timeout 60 "${MPI[@]}" -x ASCENT_FAULT -np 2 "$ASCENT" comm-selftest --test loop --iters 50 \
  --run-dir run >out.txt 2>err.txt
rc=$?
[[ $rc -ne 0 && $rc -ne 124 ]] || { echo "FAIL: crash run exit $rc"; exit 1; }
python3 - <<'PY' || { ls -R run; cat err.txt; echo "FAIL: crash dump"; exit 1; }
import json
d = json.load(open("run/flight/rank-00001.json"))
assert d["reason"] == "SIGSEGV", d["reason"]
w = [c for c in d["comms"] if c["kind"] == "world"][0]
assert w["last_completed"] == 4, w
print("crash dump ok")
PY
echo "comm signals ok"
