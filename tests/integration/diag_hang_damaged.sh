#!/usr/bin/env bash
# tests/integration/diag_hang_damaged.sh — `ascent diag hang` on dumps a killed or damaged job leaves
# (issue 14):
#   14  rank 1 killed with -9 (no dump): it is missing at the seq rank 0 waits in, not one past it
#   10  a dump claiming world_size 2000000000: bounded by the ranks the dumps name, answers at once;
#       a dump of rank 672865946 in a world of 2 (found by the flight_dump fuzz target) is refused
#   13  an enqueued_ns of 1e300 and a dump_ns near INT64_MAX: no overflow (UBSan in make check)
set -u
F="$ASCENT_ROOT/tests/fixtures/flight/killed"
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p k/flight && cp "$F/rank-00000.json" k/flight/

"$ASCENT" diag hang k >out.txt 2>err.txt; rc=$?
[[ $rc -eq 1 ]] || fail "killed rank: exit $rc (want 1, checks failed) $(cat err.txt)"
grep -Eq "rank 1 (\([^)]*\) )?never arrived at allreduce seq 5 on 'world'" out.txt || { cat out.txt; fail "missing seq (14)"; }
"$ASCENT" diag hang k --json >out.json 2>/dev/null
python3 - out.json <<'PY' || fail "JSON missing entry (14)"
import json, sys
m = json.load(open(sys.argv[1]))["missing"]
assert any(x["rank"] == 1 and x["seq"] == 5 and x["op"] == "allreduce" and not x["dump"] for x in m), m
PY

mkdir -p w/flight
python3 - "$F/rank-00000.json" w/flight/rank-00000.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["world_size"] = 2000000000
json.dump(d, open(sys.argv[2], "w"))
PY
timeout 20 "$ASCENT" diag hang w >out.txt 2>err.txt; rc=$?
[[ $rc -eq 1 ]] || fail "world_size 2e9: exit $rc $(cat err.txt)"
grep -q "the dumps say 2000000000" out.txt || { cat out.txt; fail "world size not bounded (10)"; }
grep -Eq "rank 1 (\([^)]*\) )?never arrived at allreduce seq 5" out.txt || { cat out.txt; fail "world_size 2e9: wrong missing"; }

# 10 (found by tests/fuzz/flight_dump): a dump of rank 672865946 in a world of 2 is refused, at once
mkdir -p h/flight
python3 - "$F/rank-00000.json" h/flight/rank-00000.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["rank"] = 672865946
json.dump(d, open(sys.argv[2], "w"))
PY
timeout 20 "$ASCENT" diag hang h >out.txt 2>err.txt; rc=$?
[[ $rc -eq 2 ]] && grep -q "rank 672865946 is not below its world_size 2" err.txt || fail "rank 672865946: exit $rc $(cat err.txt)"

mkdir -p u/flight
python3 - "$F/rank-00000.json" u/flight/rank-00000.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["entries"][-1]["enqueued_ns"] = 1e300
d["entries"][0]["enqueued_ns"] = -1e300
d["dump_ns"] = 9.2e18
json.dump(d, open(sys.argv[2], "w"))
PY
"$ASCENT" diag hang u >out.txt 2>err.txt; rc=$?
[[ $rc -eq 0 || $rc -eq 1 ]] || fail "enqueued_ns 1e300: exit $rc $(cat err.txt)"
! grep -q "runtime error" err.txt || fail "undefined behaviour (13): $(cat err.txt)"
echo ok
