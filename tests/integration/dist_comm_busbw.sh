#!/usr/bin/env bash
# tests/integration/dist_comm_busbw.sh — the profile reports collectives at the bandwidth the link
# gives: a DP=2 profile of the tiny preset (make demo's run, fewer steps, one thread per rank), its
# `report --format json` busbw for the 1 MB gradient allreduce bucket, within 2x of what
# `ascent diag comm --json` measures for an in-place allreduce of that size on the same host.
# A bandwidth comparison needs cores to run on: skipped when the host's load average is above 2 per
# core (a shared, oversubscribed machine measures the neighbours, not the link).
set -uo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
loaded() { python3 -c 'import os; print(int(os.getloadavg()[0] > 2 * os.cpu_count()))'; }
[[ $(loaded) == 0 ]] || { echo "host load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores: skipped"; exit 77; }
train 2 demo --preset tiny --steps 6 --batch 32 --threads 1 --eval-every 0 --eval-batches 1 --profile --dp 2
"$ASCENT" report demo/trace.db --format json >report.json || { echo "FAIL: report"; exit 1; }
read -r bucket busbw < <(python3 - <<'PY'
import json
rows = [c for c in json.load(open("report.json"))["comm"] if c["name"] == "allreduce" and c["size_bucket"] == 1 << 20]
assert rows and rows[0]["count"] >= 6 and rows[0]["busbw_gbs"] > 0, rows
print(rows[0]["size_bucket"], rows[0]["busbw_gbs"])
PY
) || { echo "FAIL: no 1 MB allreduce bucket in the report"; exit 1; }
for try in 1 2; do
  [[ $(loaded) == 0 ]] || { echo "host became loaded: skipped"; exit 77; }
  "${MPI[@]}" -np 2 "$ASCENT" diag comm --ops allreduce -b "$bucket" -e "$bucket" --no-matrix --json >diag.json 2>diag.err ||
    { tail -5 diag.err; echo "FAIL: diag comm"; exit 1; }
  python3 - "$busbw" <<'PY' && { echo "busbw ok"; exit 0; }
import json, sys
prof = float(sys.argv[1])
row = [r for r in json.load(open("diag.json"))["rows"] if r["op"] == "allreduce" and r["in_place"]][0]
ratio = prof / row["busbw_gbs"]
print("profile busbw %.3f GB/s, diag comm %.3f GB/s at %d B: ratio %.2f" % (prof, row["busbw_gbs"], row["bytes"], ratio))
sys.exit(0 if 0.5 <= ratio <= 2 else 1)
PY
done
echo "FAIL: the profile's allreduce busbw is not within 2x of diag comm's (twice)"; exit 1
