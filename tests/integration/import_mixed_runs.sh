#!/usr/bin/env bash
# tests/integration/import_mixed_runs.sh — `ascent import` never puts two runs into one rank
# silently: files that claim the same rank but come from different profiling sessions (Kineto's
# baseTimeNanoseconds differ, even when their times do not overlap) or from different profilers are
# refused (exit 2, naming both files) unless --allow-mixed-runs, which combines them with a warning.
# Ranks 0 and 1 of one real job still combine without a flag.
set -euo pipefail
F=$ASCENT_ROOT/tests/fixtures/kineto
# run B: the same trace as if profiled again a while later (another base time, later times)
python3 - "$F"/nccl_parser_config__nccl_data.json.gz <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
json.dump(d, open("run-a.json", "w"))
d["baseTimeNanoseconds"] += 3600 * 10**9
for e in d["traceEvents"]:
    if "ts" in e:
        e["ts"] += 10**10
json.dump(d, open("run-b.json", "w"))
PY
set +e
"$ASCENT" import run-a.json run-b.json -o mixed.db -q 2> mixed.err
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "two runs of one rank imported (exit $rc)"; cat mixed.err; exit 1; }
grep -q "'run-a.json' and 'run-b.json' both hold rank .* different profiling sessions" mixed.err || { cat mixed.err; exit 1; }
grep -q -- "--allow-mixed-runs" mixed.err
[[ ! -e mixed.db ]]
"$ASCENT" import run-a.json run-b.json -o mixed.db -q --allow-mixed-runs 2> allowed.err
grep -q "different base times" allowed.err || { cat allowed.err; exit 1; }

# Nsight and Kineto traces of one rank: different profilers
set +e
zcat "$ASCENT_ROOT/tests/fixtures/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz" > saxpy.sqlite
"$ASCENT" import saxpy.sqlite run-a.json -o two.db -q 2> two.err
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "'saxpy.sqlite' (nsight .*) and 'run-a.json' (.*) both hold rank 0: traces of different profilers" two.err \
  || { echo "Nsight + Kineto of rank 0: exit $rc"; cat two.err; exit 1; }

# ranks 0 and 1 of one job: no flag needed
"$ASCENT" import "$F"/trace_filter__sampled_rank-0.json.gz "$F"/trace_filter__sampled_rank-1.json.gz -o job.db -q
python3 -c "
import sqlite3
assert [r for (r,) in sqlite3.connect('job.db').execute('SELECT rank FROM rank ORDER BY rank')] == [0, 1]"
echo ok
