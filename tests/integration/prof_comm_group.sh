#!/usr/bin/env bash
# tests/integration/prof_comm_group.sh — `ascent report`'s comm table on real 2-rank profiles: the n
# of bus bandwidth (group_size) is the communicator's member count from the merged comm table, for
# collectives on the DP communicator (comm/ gives it the id 1 << 24, which the report once failed to
# look up, printing n = 1 for the gradient allreduce and ZeRO's reduce-scatter/allgather rows) and on
# the TP communicator; busbw = algbw x the nccl-tests factor of that n.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
P=(--data corpus.txt --n-layer 2 --n-head 4 --n-embd 64 --max-seq 32 --seq 32 --batch 8 --steps 2 --warmup 1
   --threads 1 --eval-every 0 --eval-batches 1 --profile)
train 2 dp "${P[@]}" --dp 2
train 2 z1 "${P[@]}" --dp 2 --zero 1
train 2 tp "${P[@]}" --tp 2
for r in dp z1 tp; do
  "$ASCENT" report $r/trace.db --by comm --format json > $r.json
  "$ASCENT" report $r/trace.db --by comm > $r.txt
  python3 - $r <<'PY' || { cat $r.txt; exit 1; }
import json, sqlite3, sys
name = sys.argv[1]
rows = [c for c in json.load(open(name + ".json"))["comm"] if c["kind"] == "comm"]
assert rows, "no collectives in " + name
# every communicator of a 2-rank run with more than one member has 2
sizes = dict(sqlite3.connect(name + "/trace.db").execute("SELECT name, max(size) FROM comm GROUP BY name"))
assert sizes["dp" if name != "tp" else "tp"] == 2, sizes
f = {"allreduce": 1.0, "reduce_scatter": 0.5, "allgather": 0.5, "broadcast": 1.0}
for c in rows:
    assert c["group_size"] == 2, "%s: %s %d B has n = %d" % (name, c["name"], c["size_bucket"], c["group_size"])
    if c["name"] in f and c["algbw_gbs"] > 0:
        assert abs(c["busbw_gbs"] - c["algbw_gbs"] * f[c["name"]]) <= 1e-9 * c["algbw_gbs"], c
want = {"dp": {"allreduce"}, "z1": {"reduce_scatter", "allgather"}, "tp": {"allreduce"}}[name]
assert want <= {c["name"] for c in rows}, (name, {c["name"] for c in rows})
print(name, "ok:", len(rows), "rows, all n = 2")
PY
done
echo ok
