#!/usr/bin/env bash
# tests/integration/diag_mem_check.sh — `ascent diag mem --check RUN.db`: tiny profiled runs under
# mpirun in several layouts (DP=2 ZeRO-0, ZeRO-1 and ZeRO-2 (8 layers), TP=2, PP=2 1F1B with 4 micro-batches, DP=2 with
# recompute, DP=2 bf16); the estimate takes the model and layout from the run's config and must be
# within 10% of the measured peak on every category both have, on every rank (mem.check.* PASS,
# rel_err <= 0.1 in --json). A wrong layout given on the command line (a micro-batch twice the run's)
# must make the activation check fail (exit 1): the check can fail.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
P=(--data corpus.txt --n-layer 2 --n-head 4 --n-embd 64 --max-seq 32 --seq 32 --batch 8 --steps 2 --warmup 1
   --threads 1 --eval-every 0 --eval-batches 1 --profile)
train 2 z0 "${P[@]}" --dp 2
train 2 z1 "${P[@]}" --dp 2 --zero 1
train 2 tp2 "${P[@]}" --tp 2
train 2 pp2 "${P[@]}" --pp 2 --schedule 1f1b --microbatches 4
train 2 rc "${P[@]}" --dp 2 --zero 1 --recompute
train 2 bf "${P[@]}" --dp 2 --precision bf16
# ZeRO-2 against ZeRO-1 on 8 layers (its gradient window holds 2 blocks, so it pays from 5 up at DP=2)
P8=(--data corpus.txt --n-layer 8 --n-head 4 --n-embd 64 --max-seq 32 --seq 32 --batch 8 --steps 2 --warmup 1
   --threads 1 --eval-every 0 --eval-batches 1 --profile)
train 2 z1l8 "${P8[@]}" --dp 2 --zero 1
train 2 z2l8 "${P8[@]}" --dp 2 --zero 2
for r in z0 z1 tp2 pp2 rc bf z1l8 z2l8; do
  "$ASCENT" diag mem --check $r/trace.db > $r.txt || { cat $r.txt; echo "FAIL: $r: diag mem --check exited $?"; exit 1; }
  "$ASCENT" diag mem --check $r/trace.db --json > $r.json
  python3 - "$r" <<'PY' || { cat $r.txt; exit 1; }
import json, sys
name = sys.argv[1]
d = json.load(open(name + ".json"))
cats = ("params", "grads", "optimizer", "activations", "comm_buffers", "workspace")
ck = d["check"]
assert d["layout"]["dp"] * d["layout"]["tp"] * d["layout"]["pp"] == 2, d["layout"]
assert len(ck["ranks"]) == 2, ck["ranks"]
both = set()
for r in ck["ranks"]:
    for c in cats:
        e, m = r["estimate"][c], r["measured"][c]
        if e > 0 and m > 0:
            both.add(c)
            assert abs(e - m) / m <= 0.10, "%s rank %d %s: estimate %d measured %d" % (name, r["rank"], c, e, m)
            assert abs(r["rel_err"][c] - abs(e - m) / m) < 1e-9
# every layout measures params, grads, optimizer, activations and workspace
assert {"params", "grads", "optimizer", "activations", "workspace"} <= both, (name, both)
if name == "pp2":
    assert "comm_buffers" in both, "the pipeline's send/receive buffers are measured and estimated"
    assert {r["stage"] for r in ck["ranks"]} == {0, 1}
checks = {c["name"]: c["status"] for c in d["checks"]}
for c in both:
    assert checks["mem.check." + c] == "PASS", (name, c, checks)
assert all(s != "FAIL" for s in checks.values()), checks
print(name, "ok:", sorted(both))
PY
done
grep -q "rank 1 activations" z1.txt || { cat z1.txt; echo "FAIL: no per-rank table"; exit 1; }
# recompute keeps fewer activations than the same layout without it (measured and estimated)
python3 - <<'PY'
import json
a, b = json.load(open("z1.json")), json.load(open("rc.json"))
ma, mb = a["check"]["ranks"][0]["measured"], b["check"]["ranks"][0]["measured"]
assert mb["activations"] < ma["activations"] and mb["workspace"] > ma["workspace"], (ma, mb)
PY
# ZeRO-2 holds less gradient memory than ZeRO-1 (which keeps the whole block): measured and estimated
python3 - <<'PY'
import json
a, b = json.load(open("z1l8.json")), json.load(open("z2l8.json"))
for r in (0, 1):
    ma, mb = a["check"]["ranks"][r]["measured"], b["check"]["ranks"][r]["measured"]
    ea, eb = a["check"]["ranks"][r]["estimate"], b["check"]["ranks"][r]["estimate"]
    assert mb["grads"] < 0.85 * ma["grads"] and eb["grads"] < 0.85 * ea["grads"], (r, ma, mb, ea, eb)
    assert mb["optimizer"] == ma["optimizer"], (ma, mb)
print("zero 2 grads %d vs zero 1 %d bytes" % (b["check"]["ranks"][0]["measured"]["grads"],
                                             a["check"]["ranks"][0]["measured"]["grads"]))
PY
# the check fails on a wrong estimate: a micro-batch of 8 (the run's is 4) doubles the activations
set +e
"$ASCENT" diag mem --check z1/trace.db --batch 8 > wrong.txt; rc=$?
set -e
[[ $rc -eq 1 ]] || { cat wrong.txt; echo "FAIL: a wrong micro-batch exited $rc, expected 1"; exit 1; }
grep -q "FAIL mem.check.activations" wrong.txt || { cat wrong.txt; echo "FAIL: activations not flagged"; exit 1; }
# a profile without a run row / a missing file: clear errors, exit 2
set +e
"$ASCENT" diag mem --check nonexistent.db > /dev/null 2> err.txt; rc=$?
set -e
[[ $rc -eq 2 ]] || { cat err.txt; echo "FAIL: missing file exited $rc"; exit 1; }
echo ok
