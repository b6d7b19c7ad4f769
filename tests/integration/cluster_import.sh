#!/usr/bin/env bash
# `ascent import` shared by the processes of a job on a real 2-host cluster (scripts/cluster.sh, Slurm,
# Open MPI over TCP; import.h's imp_spread): `srun -N 2 --ntasks-per-node 2 ascent import DIR -o OUT.db`
# on a 16-rank job (copies of a real Kineto rank trace, each with its own distributedInfo.rank) writes
# the same profile, table by table (import_compare.py), as one process does, and leaves no parts
# folder; a damaged file among them fails the job as one process fails (same message from process 0,
# exit 2) with no output and no parts left. Needs root, network namespaces and slurm-wlm + munge;
# skips (77) with the reason otherwise.
set -u
source "$ASCENT_ROOT/tests/integration/cluster_common.inc"
F=$ASCENT_ROOT/tests/fixtures/kineto
python3 - "$F/trace_filter__sampled_rank-0.json.gz" <<'PY' || fail "making the job's traces"
import gzip, json, os, sys
src = json.load(gzip.open(sys.argv[1]))
os.makedirs("job", exist_ok=True)
for r in range(16):
    d = dict(src)
    d["distributedInfo"] = dict(src.get("distributedInfo", {}), rank=r, world_size=16)
    with gzip.open("job/rank-%02d.json.gz" % r, "wt", compresslevel=1) as f:
        json.dump(d, f)
PY
"$ASCENT" import job -o one.db -j 1 -q 2>one.err || fail "one process: $(cat one.err)"
cluster_up 2
SRUN=(timeout 300 srun -N 2 --ntasks-per-node 2)
launch spread.log spread.err "${SRUN[@]}" "$ASCENT" import job -o spread.db \
  || fail "srun import: $(tail -20 spread.log spread.err)"
grep -q "16 ranks from 16 files into spread.db .*4 processes x 1 workers" spread.err \
  || fail "no shared import: $(tail -5 spread.err)"
python3 "$ASCENT_ROOT/tests/integration/import_compare.py" one.db spread.db || fail "the shared import differs from one process's"
ls -d spread.db.parts-* 2>/dev/null && fail "a parts folder was left"
echo "shared import: $(sqlite3 spread.db 'SELECT count(*) FROM event') events of" \
     "$(sqlite3 spread.db 'SELECT count(*) FROM rank') ranks, the same tables as one process"

# a damaged file (rank 9: read by a process of node2 or node1 as the parts fall) fails the job
mkdir bad && cp job/* bad/ && head -c 20000 job/rank-09.json.gz >bad/rank-09.json.gz
"$ASCENT" import bad -o bad1.db -j 1 -q 2>bad1.err; rc1=$?
launch bad.log bad.err "${SRUN[@]}" "$ASCENT" import bad -o bad.db -q; rc=$?
[[ $rc1 -eq 2 && $rc -ne 0 ]] || fail "damaged input: exit $rc1 alone, $rc shared: $(tail -5 bad.err)"
msg=$(sed -n 's/^error: //p' bad1.err | sed 's/<fd:[0-9]*>/<fd>/')
sed 's/<fd:[0-9]*>/<fd>/' bad.err | grep -qF "error: $msg" || fail "process 0 does not say what one process says: $msg / $(cat bad.err)"
[[ ! -e bad.db ]] && ! ls -d bad.db.parts-* 2>/dev/null || fail "output or parts left after a failure"
echo ok
