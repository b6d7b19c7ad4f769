#!/usr/bin/env bash
# tests/integration/import_parallel.sh — `ascent import -j N` (import/part.h) writes the same profile
# as the sequential import (-j 1): every table compared row by row (import_compare.py: sqlite3, string
# ids by their text), the warnings printed compared line by line, on real multi-file inputs: the two
# trace_filter ranks, torch_npu's output folders (databases and text), and copies of a real Kineto
# trace given other ranks (distributedInfo.rank), one of them with a process group first used there
# (its comm_id numbered by the whole import) and one whose group definition disagrees with the first
# file's (a warning counted across files), one without a rank (its rank from the file order); files
# of one rank in two parts (imported again together); errors: the same exit code and message as -j 1
# (a damaged file among good ones, the earliest of two, two files of one rank that overlap, two
# sessions of one rank) and no output left; an interrupted import (SIGTERM, SIGKILL) leaves no file
# and no worker.
set -euo pipefail
F=$ASCENT_ROOT/tests/fixtures
C=$ASCENT_ROOT/tests/integration/import_compare.py
fail() { echo "FAIL: $*"; exit 1; }

# same NAME ARGS...: import ARGS with -j 1 and -j 4, both succeed, same tables, same warnings
same() {
  local name=$1; shift
  "$ASCENT" import "$@" -o "$name-1.db" -j 1 2>"$name-1.err" || fail "$name -j 1: $(cat "$name-1.err")"
  "$ASCENT" import "$@" -o "$name-4.db" -j 4 2>"$name-4.err" || fail "$name -j 4: $(cat "$name-4.err")"
  python3 "$C" "$name-1.db" "$name-4.db" || fail "$name: -j 4 differs from -j 1"
  diff <(grep 'import: warning' "$name-1.err" || true) <(grep 'import: warning' "$name-4.err" || true) \
    || fail "$name: the warnings differ"
  grep -q "4 workers" "$name-4.err" || fail "$name: no parallel import: $(cat "$name-4.err")"
  echo "$name: same profile ($(sqlite3 "$name-1.db" "SELECT count(*) FROM event") events," \
       "$(grep -c 'import: warning' "$name-1.err" || true) warning lines)"
}
# differ_same NAME ARGS...: both fail with the same exit code and message, no output left
fails_same() {
  local name=$1; shift
  set +e
  "$ASCENT" import "$@" -o "$name-1.db" -j 1 -q 2>"$name-1.err"; local rc1=$?
  "$ASCENT" import "$@" -o "$name-4.db" -j "${J:-4}" -q 2>"$name-4.err"; local rc4=$?
  set -e
  [[ $rc1 -ne 0 && $rc1 == "$rc4" ]] || fail "$name: exit $rc1 with -j 1, $rc4 with -j 4: $(cat "$name-4.err")"
  diff "$name-1.err" <(sed "s/$name-4\.db/$name-1.db/g" "$name-4.err") || fail "$name: the messages differ"
  [[ ! -e $name-1.db && ! -e $name-4.db ]] || fail "$name: an output was left"
  echo "$name: exit $rc1 both, $(head -c 120 "$name-1.err")"
}

same sampled "$F"/kineto/trace_filter__sampled_rank-0.json.gz "$F"/kineto/trace_filter__sampled_rank-1.json.gz
tar -xzf "$F/ascend/msinsight_db_level1.tar.gz"
tar -xzf "$F/ascend/msinsight_text_level1.tar.gz"
same npu_db msinsight_db_level1
same npu_text msinsight_text_level1

# Nsight exports and a Kineto trace: a file of two ranks, rank 0 in two parts, two formats, a warning
# found at a file's end (the base times differ: allowed with --allow-mixed-runs)
zcat "$F/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz" >saxpy.sqlite
zcat "$F/nsys/nsysai_h100_2gpu_1s.sqlite.gz" >nsysai.sqlite
same formats saxpy.sqlite "$F"/kineto/trace_filter__sampled_rank-1.json.gz nsysai.sqlite --allow-mixed-runs
grep -q "2 files of one rank with different base times" formats-4.err || fail "formats: $(cat formats-4.err)"

# copies of one real trace as ranks 0..5 (world 7), rank 6 from the file order
python3 - "$F"/kineto/nccl_parser_config__nccl_data.json.gz <<'PY'
import gzip, json, sys
src = json.load(gzip.open(sys.argv[1]))
for r in range(7):
    d = json.loads(json.dumps(src))
    if r == 6:
        del d["distributedInfo"]           # rank: the number of files before it
    else:
        d["distributedInfo"]["rank"] = r
        d["distributedInfo"]["world_size"] = 7
    if r == 3:   # a group first used in this file (its first there, the second of the import): renumbered
        d["distributedInfo"]["pg_config"].insert(0, {"pg_name": "7", "pg_desc": "tp", "pg_size": 2, "ranks": [0, 1]})
        for e in d["traceEvents"]:
            a = e.get("args", {})
            if a.get("Process Group Name") == "0":
                a["Process Group Name"], a["Process Group Description"] = "7", "tp"
    if r == 4:   # a definition of group "0" that disagrees with the first file's: counted once
        d["distributedInfo"]["pg_config"][0]["ranks"] = [0, 1, 2]
        d["distributedInfo"]["pg_config"][0]["pg_size"] = 3
    json.dump(d, open("copy%d.json" % r, "w"))
# rank 0 again, later in the same session (a profiler schedule's second cycle): same rank, no overlap
d = json.loads(json.dumps(src))
for e in d["traceEvents"]:
    if "ts" in e:
        e["ts"] += 10**8
json.dump(d, open("later0.json", "w"))
# rank 0 again from another session
d["baseTimeNanoseconds"] += 3600 * 10**9
json.dump(d, open("other0.json", "w"))
PY
same copies copy0.json copy1.json copy2.json copy3.json copy4.json copy5.json copy6.json
[[ $(sqlite3 copies-4.db "SELECT count(DISTINCT rank) FROM event") == 7 ]] || fail "copies: not 7 ranks"
[[ $(sqlite3 copies-4.db "SELECT group_concat(name, ';') FROM (SELECT DISTINCT (comm_id - 2113929216) || ' ' || name AS name
      FROM comm ORDER BY 1)") == "0 pg 0 (default_pg);1 pg 7 (tp)" ]] || fail "copies: groups $(sqlite3 copies-4.db "SELECT * FROM comm")"
[[ $(sqlite3 copies-4.db "SELECT DISTINCT comm_id FROM event WHERE rank = 3 AND comm_id IS NOT NULL") == 2113929217 ]] \
  || fail "copies: rank 3's collectives not in group 7's number"
grep -q "1 process-group definitions that disagree" copies-4.err || fail "copies: the conflict: $(cat copies-4.err)"
[[ $(sqlite3 copies-4.db "SELECT rank FROM event GROUP BY rank ORDER BY rank DESC LIMIT 1") == 6 ]]
# rank 0 in the first and the third file: imported again as one part, its lanes shared
same schedule copy0.json copy1.json later0.json copy2.json
[[ $(sqlite3 schedule-4.db "SELECT count(*) FROM event WHERE rank = 0") == \
   $(( 2 * $(sqlite3 copies-4.db "SELECT count(*) FROM event WHERE rank = 1") )) ]] || fail "schedule: rank 0 lost events"

# errors: what -j 1 says, -j 4 says
python3 - <<'PY'
t = open("copy1.json").read()
open("cut.json", "w").write(t[: len(t) // 2])
PY
fails_same damaged copy0.json cut.json copy2.json copy3.json
: >empty.json
fails_same earliest copy0.json copy1.json cut.json copy2.json empty.json copy3.json
fails_same earliest2 copy0.json empty.json copy2.json cut.json
fails_same twice copy0.json copy1.json copy1.json
fails_same sessions copy0.json copy1.json other0.json
fails_same mixed_rank copy0.json later0.json copy2.json other0.json
echo '{"traceEvents":[]}' >none1.json
echo '{"traceEvents":[]}' >none2.json
fails_same no_events none1.json none2.json
# two workers, runs of two files: the last run holds rank 0 again (overlapping the first file) and
# then a damaged file; the overlap comes first, as when read in order
cp copy0.json twin0.json
J=2 fails_same run_prefix copy0.json copy1.json copy2.json copy3.json copy4.json copy5.json twin0.json cut.json
grep -q "'copy0.json' and 'twin0.json' both hold rank 0" run_prefix-4.err

# interrupted: a worker waits on a FIFO nobody writes; the import is stopped; nothing is left
mkdir -p stop && cd stop
cp ../copy0.json ../copy1.json .
for sig in TERM KILL; do
  mkfifo wait.json
  "$ASCENT" import copy0.json copy1.json wait.json -o stopped.db -j 4 -q 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do   # until the workers are there (any time would do: nothing may be left)
    [[ $(pgrep -c -P "$pid" || true) -ge 3 ]] && break
    sleep 0.05
  done
  kill -$sig "$pid"
  wait "$pid" 2>/dev/null || true
  # no worker outlives its parent (each gets SIGKILL when it dies: allow the kernel a moment)
  for _ in $(seq 100); do
    pgrep -f -- "-o stopped.db" >/dev/null || break
    sleep 0.05
  done
  ! pgrep -f -- "-o stopped.db" >/dev/null || fail "SIG$sig: a worker survived its parent"
  left=$(ls -A | grep -v -x -e copy0.json -e copy1.json -e wait.json || true)
  [[ -z $left ]] || fail "SIG$sig: left behind: $left"
  rm wait.json
  echo "interrupted (SIG$sig): nothing left"
done
cd ..
echo "import_parallel: ok"
