#!/usr/bin/env bash
# ascent advise on the command line: a profile that holds only pre-flight results (diag all --db
# under mpirun -np 2 also runs the comm benchmark) gives the preflight rule and skips the others
# with reasons; --format json is one document; bad input exits 2 with a clear message. (Each rule's
# trigger/no-trigger fixtures are in tests/unit/test_diag_advise.c.)
set -u
fail() { echo "FAIL: $*"; exit 1; }
CLEAN=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u OMP_NUM_THREADS
       -u OPENBLAS_NUM_THREADS -u HCCL_EXEC_TIMEOUT -u HCCL_EVENT_TIMEOUT -u HCCL_CONNECT_TIMEOUT -u NCCL_SOCKET_IFNAME
       -u HCCL_SOCKET_IFNAME -u ASCENT_IFNAME)
if command -v mpirun >/dev/null; then
  "${CLEAN[@]}" timeout 120 mpirun -np 2 --mca mpi_yield_when_idle 1 "$ASCENT" diag all --db run.db >all.txt 2>&1 \
    || fail "diag all --db: $(tail -20 all.txt)"
  grep -q '^PASS comm.allreduce.wrong' all.txt || fail "diag all under mpirun must include the comm benchmark"
  grep -q '^# Avg bus bandwidth' all.txt || fail "benchmark tables after the report"
else
  "${CLEAN[@]}" "$ASCENT" diag all --db run.db >all.txt 2>&1 || fail "diag all --db: $(tail -20 all.txt)"
fi
# a FAILing env check is stored too, and makes diag all exit 1
"${CLEAN[@]}" HCCL_CONNECT_TIMEOUT=10 "$ASCENT" diag all --db run.db >fail.txt 2>&1; [[ $? -eq 1 ]] || fail "FAIL must exit 1"
"$ASCENT" advise run.db --format json >a.json || fail "advise json"
python3 - <<'PY' || exit 1
import json
d = json.load(open("a.json"))
f = {x["rule"]: x for x in d["findings"]}
assert "preflight" in f and f["preflight"]["severity"] == "High", d["findings"]
assert "HCCL_CONNECT_TIMEOUT" in f["preflight"]["evidence"], f["preflight"]
assert f["preflight"]["query"].startswith("SELECT") and f["preflight"]["fix"]
r = {x["rule"]: x for x in d["rules"]}
assert r["compute.free_time"]["state"] == "skipped" and "no steps" in r["compute.free_time"]["note"]
assert d["summary"]["high"] >= 1
PY
"$ASCENT" advise run.db >a.txt || fail "advise table"
grep -q '^1\. \[High\] preflight: ' a.txt || fail "$(cat a.txt)"
grep -q '^   query:    SELECT' a.txt || fail "query line"
grep -q '^  skipped  pipeline.bubble' a.txt || fail "skipped rules listed"
echo "not a profile" >x.db
"$ASCENT" advise x.db >/dev/null 2>err.txt; [[ $? -eq 2 ]] || fail "foreign file must exit 2"
grep -q "not a database" err.txt || fail "$(cat err.txt)"
"$ASCENT" advise missing.db >/dev/null 2>err.txt; [[ $? -eq 2 ]] || fail "missing file must exit 2"
"$ASCENT" advise >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "no argument must exit 2"
"$ASCENT" advise run.db --format xml >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "bad format must exit 2"
echo ok
