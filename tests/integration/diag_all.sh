#!/usr/bin/env bash
# diag all: one report (identity, checks, JSON twin), exit 0 on this machine's clean environment,
# exit 1 when any part FAILs; also under mpirun -np 2.
set -u
fail() { echo "FAIL: $*"; exit 1; }
CLEAN=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u OMP_NUM_THREADS
       -u OPENBLAS_NUM_THREADS -u HCCL_EXEC_TIMEOUT -u HCCL_EVENT_TIMEOUT -u HCCL_CONNECT_TIMEOUT -u NCCL_SOCKET_IFNAME
       -u HCCL_SOCKET_IFNAME -u ASCENT_IFNAME)
"${CLEAN[@]}" "$ASCENT" diag all --preset tiny --json >a.json 2>/dev/null; rc=$?
[[ $rc -eq 0 ]] || fail "diag all exited $rc: $(python3 -c 'import json; print([c for c in json.load(open("a.json"))["checks"] if c["status"]=="FAIL"])')"
python3 - <<'PY' || exit 1
import json
d = json.load(open("a.json"))
names = [c["name"] for c in d["checks"]]
for prefix in ("versions.", "net.", "env.", "mem."):
    assert any(n.startswith(prefix) for n in names), prefix
assert d["verdict"] == "PASS" and d["identity"]["ascent"]
assert "versions" in d and "interfaces" in d and "timeouts" in d and "per_rank" in d
PY
"${CLEAN[@]}" "$ASCENT" diag all >b.txt 2>/dev/null || fail "table form"
grep -q '^PASS env.launcher' b.txt || fail "$(cat b.txt)"
grep -q ' -> PASS$' b.txt || fail "no verdict line"
"${CLEAN[@]}" HCCL_CONNECT_TIMEOUT=10 "$ASCENT" diag all >c.txt 2>/dev/null; rc=$?
[[ $rc -eq 1 ]] || fail "a FAIL in env must make diag all exit 1 (got $rc)"
if command -v mpirun >/dev/null; then
  "${CLEAN[@]}" timeout 60 mpirun -np 2 --oversubscribe "$ASCENT" diag all --json >m.txt 2>/dev/null; rc=$?
  [[ $rc -eq 0 ]] || fail "diag all under mpirun -np 2 exited $rc"
fi
echo ok
