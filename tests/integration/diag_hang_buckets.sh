#!/usr/bin/env bash
# tests/integration/diag_hang_buckets.sh — a real DP=2 training job that hangs inside the overlapped
# gradient buckets: 16 non-blocking allreduces per step on the DP communicator (seq 17–32 in step 2),
# rank 1 never enters dp seq 24 (ASCENT_FAULT=hang:rank=1,seq=24,comm=dp) while rank 0 has posted all
# 16 of its buckets. The watchdog (ASCENT_COMM_TIMEOUT=2) stops the job, both ranks dump, and
# `ascent diag hang RUN` must name rank 1 as missing at allreduce seq 24 on 'dp' (the first seq rank 0
# started and rank 1 never reached), not compare the ranks' oldest pending calls (seq 19 on both).
set -uo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
export ASCENT_COMM_TIMEOUT=2 ASCENT_FAULT=hang:rank=1,seq=24,comm=dp
timeout 60 "${MPI[@]}" -x ASCENT_FAULT -np 2 "$ASCENT" train "${SMALL[@]}" --steps 4 --dp 2 --out run >out.txt 2>&1
rc=$?
[[ $rc -ne 0 && $rc -ne 124 ]] || { tail -20 out.txt; echo "FAIL: job exit $rc (expected a non-zero exit, not the test's timeout)"; exit 1; }
[[ -s run/flight/rank-00000.json && -s run/flight/rank-00001.json ]] || { ls -R run; echo "FAIL: no flight dumps"; exit 1; }
# the dumps really hold many buckets in flight: rank 0 pending on more than one dp allreduce
python3 - <<'PY' || exit 1
import json
d = json.load(open("run/flight/rank-00000.json"))
pend = [e["seq"] for e in d["entries"] if e["comm"] == "dp" and e["state"] != "completed" and not e["p2p"]]
assert len(pend) > 1 and 24 in pend, pend
PY
"$ASCENT" diag hang run >hang.txt 2>&1
cat hang.txt
grep -q "FAIL hang.missing: .*rank 1 ([^)]*) never arrived at allreduce seq 24 on 'dp'" hang.txt || { echo "FAIL: missing rank not named"; exit 1; }
grep -q "rank 0 ([^)]*) never arrived" hang.txt && { echo "FAIL: rank 0 named missing"; exit 1; }
"$ASCENT" diag hang run --json >hang.json 2>/dev/null
python3 - <<'PY' || exit 1
import json
d = json.load(open("hang.json"))
m = d["missing"]
assert [(x["rank"], x["comm"], x["seq"], x["last_enqueued"]) for x in m] == [(1, "dp", 24, 23)], m
assert {c["name"]: c["status"] for c in d["checks"]}["hang.missing"] == "FAIL"
PY
echo ok
