#!/usr/bin/env bash
# tests/integration/prof_merge_runs.sh — `ascent merge` never mixes runs silently: each rank file
# carries its run's id (meta run_id: the launcher's job id), so
#   1. rank 2 of job 111 and rank 3 of job 222 in one folder: refused, exit 2, naming both files and
#      both runs, nothing written;
#   2. --allow-mixed-runs combines them, and says which ranks of the world are missing;
#   3. ranks 2 and 3 of one job: merged without a flag, warning and noting "ranks 0, 1 of 4 missing".
# The ranks are started as a launcher would (its environment), one after the other.
set -euo pipefail
cc -O1 -o spin "$ASCENT_ROOT/tests/integration/profile/spin.c"
rank() {   # rank DIR JOB RANK
  OMPI_MCA_ess_base_jobid=$2 OMPI_COMM_WORLD_RANK=$3 OMPI_COMM_WORLD_SIZE=4 \
    "$ASCENT" profile --out "$1" -- ./spin 1000 > /dev/null
}
rank mixed 111 2
rank mixed 222 3
set +e
"$ASCENT" merge mixed 2> mixed.err
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "merge of two runs exited $rc"; cat mixed.err; exit 1; }
grep -q "rank-00003.db' is from run 'ompi:222'" mixed.err && grep -q "rank-00002.db' is from run 'ompi:111'" mixed.err \
  || { cat mixed.err; exit 1; }
grep -q -- "--allow-mixed-runs" mixed.err
[[ ! -e mixed/trace.db && -f mixed/rank-00002.db && -f mixed/rank-00003.db ]]

"$ASCENT" merge mixed --allow-mixed-runs 2> allowed.err
test -f mixed/trace.db
grep -q "ranks 0, 1 of 4 missing" allowed.err || { cat allowed.err; exit 1; }

rank one 333 2
rank one 333 3
"$ASCENT" merge one 2> one.err
grep -q "ranks 0, 1 of 4 missing" one.err || { cat one.err; exit 1; }
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("one/trace.db")
assert [r for (r,) in db.execute("SELECT rank FROM rank ORDER BY rank")] == [2, 3]
notes = [t for (t,) in db.execute("SELECT text FROM note WHERE text LIKE 'ranks 0, 1 of 4 missing%'")]
assert len(notes) == 1, notes
assert db.execute("SELECT value FROM meta WHERE key = 'run_id'").fetchone() == ("ompi:333",)
PY
echo ok
