#!/usr/bin/env bash
# diff_advise.sh — `ascent diff A B --advise` (docs/diff.md): the regressions ranked by their share
# of the step-time change, each against a computation here (diff_advise_expect.py):
#  1. two of ascent's own runs, B made slower in known ways: B trains on 16 times the batch (every
#     operator grows, no collective: the rows, shares and causes equal what Python computes from the
#     two trace.db files' events inside the steps and their step table); and B is DP=2 under mpirun
#     with the same batch per rank (the collectives appear as added, with a parallelism change as
#     their cause, whatever the step times did);
#  2. the two ranks of the real trace_filter__sampled Kineto job (tests/fixtures/kineto): the rows
#     and shares equal what Python computes from `ascent diff --steps 0: --format json`'s rows and
#     overview, at the default 1% (rank 1's step is 0.7% longer: no regression, the largest changes
#     without share) and at --min-change 0 (shares);
#  3. a trace and a run against themselves: no row, "Nothing changed";
#  4. `ascent advise --against A B` is the same document.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
EXPECT="$ASCENT_ROOT/tests/integration"
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p tmp
export TMPDIR="$PWD/tmp"
S=(--n-layer 2 --n-head 2 --n-embd 32 --max-seq 16 --seq 16 --steps 4 --warmup 1 --threads 1
   --eval-every 0 --eval-batches 1 --profile)

# 1. ascent's own runs
"$ASCENT" train "${S[@]}" --batch 4 --out one >one.log 2>&1 || { tail one.log; fail "train one"; }
"$ASCENT" train "${S[@]}" --batch 64 --out big >big.log 2>&1 || { tail big.log; fail "train big"; }
"$ASCENT" diff one big --advise --top 0 --format json >big.json || fail "diff one big --advise"
"$ASCENT" diff one big --advise >big.txt || fail "diff one big --advise (table)"
grep -q "B is slower" big.txt && grep -q "usual cause: host compute" big.txt || fail "table: $(head -40 big.txt)"
"$ASCENT" diff one one --advise >self.txt || fail "diff one one --advise"
grep -q "^Nothing changed" self.txt || fail "a run against itself: $(cat self.txt)"
PYTHONPATH="$EXPECT" python3 - <<'PY' || fail "advice on two runs differs from the computation here"
import json, sqlite3
from diff_advise_expect import expected, check
KINDS = {0: "op", 1: "comm", 2: "p2p", 4: "phase", 5: "data", 6: "io", 7: "checkpoint", 8: "range", 9: "microbatch",
         10: "wait", 11: "kernel", 12: "memcpy", 13: "memset"}

def side(path):
    """Per (kind, name): count and total of the events starting inside the steps (per rank, from the
    first step's start to the last one's end), and the step table's sums."""
    db = sqlite3.connect(path)
    win = {r: (lo, hi) for r, lo, hi in db.execute(
        "SELECT rank, min(start_ns), max(start_ns + dur_ns) FROM event WHERE kind = 3 GROUP BY rank")}
    rows = {}
    for rank, k, n, s, d in db.execute("SELECT e.rank, e.kind, s.value, e.start_ns, e.dur_ns FROM event e"
                                       " JOIN string s ON s.id = e.name_id WHERE e.kind != 3"):
        lo, hi = win[rank]
        if lo <= s < hi:
            c, t = rows.get((KINDS[k], n), (0, 0))
            rows[(KINDS[k], n)] = (c + 1, t + d)
    n, tot, free = db.execute("SELECT count(*), sum(total_ns), sum(free_ns) FROM step_stat").fetchone()
    ranks = db.execute("SELECT count(*) FROM rank").fetchone()[0]
    return rows, {"step_rows": n, "step_total_ns": tot, "free_ns": free, "ranks": ranks, "linked": 0,
                  "unattributed": 0}

def merged(pa, pb):
    (ra, sa), (rb, sb) = side(pa), side(pb)
    rows = []
    for key in set(ra) | set(rb):
        (ca, ta), (cb, tb) = ra.get(key, (0, 0)), rb.get(key, (0, 0))
        cat = ("added" if ca == 0 else "removed" if cb == 0 else "increased" if cb > ca else
               "decreased" if cb < ca else "unchanged")
        rows.append({"kind": key[0], "name": key[1], "category": cat, "a_count": ca, "b_count": cb,
                     "a_total_ns": ta, "b_total_ns": tb})
    return rows, {"a": sa, "b": sb}

rows, sides = merged("one/trace.db", "big/trace.db")
got = json.load(open("big.json"))
verdict, change, want = expected(rows, sides, 0.01, 0)
assert verdict == "slower", (verdict, change)        # 16 times the batch
regs = check(got, verdict, change, want)
assert regs and all(r["kind"] in ("op", "data", "free", "io", "checkpoint") for r in regs), regs
assert regs[0]["kind"] == "op" and "host compute" in regs[0]["cause"], regs[0]
print("batch 4 -> 64: step %.2f -> %.2f ms, %d regressions, top %s %.1f%%" % (
    got["advice"]["a_step_mean_ns"] / 1e6, got["advice"]["b_step_mean_ns"] / 1e6, len(regs), regs[0]["name"],
    100 * regs[0]["share_of_step_change"]))
PY

if command -v mpirun >/dev/null; then
	mpirun --oversubscribe -np 2 "$ASCENT" train "${S[@]}" --batch 8 --dp 2 --out dp2 >dp2.log 2>&1 ||
		{ tail dp2.log; fail "train DP=2"; }
	"$ASCENT" diff one dp2 --advise --top 0 --format json >dp2.json || fail "diff one dp2 --advise"
	"$ASCENT" diff one dp2 --steps 0: --format json >dp2-diff.json || fail "diff one dp2 --steps 0:"
	PYTHONPATH="$EXPECT" python3 - <<'PY' || fail "advice on DP=1 vs DP=2 differs from the computation here"
import json
from diff_advise_expect import expected, check
d, got = json.load(open("dp2-diff.json")), json.load(open("dp2.json"))
verdict, change, want = expected(d["ops"], d["overview"], 0.01, 0)
regs = check(got, verdict, change, want)
ar = [r for r in regs if r["kind"] == "comm" and r["name"] == "allreduce"]
assert ar and ar[0]["category"] == "added" and "parallelism change" in ar[0]["cause"], ar
assert ar[0]["phase"] == "communication not overlapped", ar
print("DP 1 -> 2: %s, step %+.2f ms, allreduce %+.2f ms per step and rank (#%d)" % (
    verdict, change / 1e6, ar[0]["delta_per_step_ns"] / 1e6, ar[0]["rank_order"]))
PY
else
	echo "mpirun not found: DP=2 pair skipped"
fi

# 2. two ranks of a real Kineto job
R0="$F/trace_filter__sampled_rank-0.json.gz"
R1="$F/trace_filter__sampled_rank-1.json.gz"
"$ASCENT" diff "$R0" "$R1" -q --steps 0: --format json >k-diff.json || fail "diff kineto --steps 0:"
"$ASCENT" diff "$R0" "$R1" -q --advise --format json >k-adv.json || fail "diff kineto --advise"
"$ASCENT" diff "$R0" "$R1" -q --advise --min-change 0 --top 0 --format json >k-adv0.json || fail "--min-change 0"
"$ASCENT" diff "$R0" "$R1" -q --advise >k-adv.txt || fail "diff kineto --advise (table)"
grep -q "The step time did not change" k-adv.txt || fail "kineto table: $(head -30 k-adv.txt)"
PYTHONPATH="$EXPECT" python3 - <<'PY' || fail "advice on the Kineto ranks differs from the computation here"
import json
from diff_advise_expect import expected, check
d = json.load(open("k-diff.json"))
dev = {o["name"]: o for o in d["op_device"]}
rows = []
for o in d["ops"]:
    r = dict(o)
    if o["kind"] == "op" and o["name"] in dev:
        r["a_device_ns"], r["b_device_ns"] = dev[o["name"]]["a_device_ns"], dev[o["name"]]["b_device_ns"]
    rows.append(r)
verdict, change, want = expected(rows, d["overview"], 0.01, 10)
assert verdict == "unchanged", verdict        # +0.7%
regs = check(json.load(open("k-adv.json")), verdict, change, want)
assert len(regs) == 10 and any(r["delta_per_step_ns"] < 0 for r in regs), regs
verdict, change, want = expected(rows, d["overview"], 0, 0)
assert verdict == "slower", verdict
regs = check(json.load(open("k-adv0.json")), verdict, change, want)
print("kineto rank 0 -> 1: step %+.2f ms; at --min-change 0 %d regressions, top %s (%s) %.0f%%" % (
    change / 1e6, len(regs), regs[0]["name"][:40], regs[0]["kind"], 100 * regs[0]["share_of_step_change"]))
PY

# 3. against itself
"$ASCENT" diff "$R0" "$R0" -q --advise --format json >k-self.json || fail "kineto against itself"
python3 - <<'PY' || fail "a trace against itself has regressions"
import json
d = json.load(open("k-self.json"))
assert d["regressions"] == [] and d["advice"]["verdict"] == "unchanged", d["advice"]
assert d["advice"]["step_change_ns"] == 0 and d["advice"]["message"].startswith("Nothing changed"), d["advice"]
PY

# 4. the alias
"$ASCENT" advise --against "$R0" "$R1" --format json >k-alias.json 2>/dev/null || fail "advise --against"
cmp -s k-alias.json k-adv.json || fail "advise --against differs from diff --advise"
[ -z "$(ls tmp)" ] || fail "left in TMPDIR: $(ls tmp)"
echo "diff_advise: ok"
