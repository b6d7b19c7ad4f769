#!/usr/bin/env bash
# diff_precision.sh — `ascent diff` on two of ascent's own short runs that differ only in GEMM
# precision (docs/diff.md): fp32 against bf16 (--precision: the GEMMs only; master weights,
# gradients, optimizer and every other kernel stay fp32). The model is sized so that the GEMMs are
# most of a step; the first step (oneDNN creating its primitives) is left out with --steps 1:.
# What must show: the largest changes among the CPU operators are the matmuls, each way the host's
# bf16 goes (faster with AMX or AVX512-BF16, slower where bf16 is emulated) — the three largest
# operator changes are matmul_* operators, and the matmuls' changes together outweigh every other
# operator's together; every operator is there on both sides as often (the same work: only the
# GEMMs' precision differs); the diff's counts and totals equal what SQL computes from the files.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
S=(--n-layer 2 --n-head 4 --n-embd 256 --max-seq 64 --seq 64 --batch 4 --steps 4 --warmup 1 --threads 1
   --eval-every 0 --eval-batches 1 --profile)
"$ASCENT" train "${S[@]}" --precision fp32 --out fp32 >fp32.log 2>&1 || { tail fp32.log; fail "train fp32"; }
"$ASCENT" train "${S[@]}" --precision bf16 --out bf16 >bf16.log 2>&1 || { tail bf16.log; fail "train bf16"; }
"$ASCENT" diff fp32 bf16 --steps 1: --format json >d.json || fail "diff fp32 bf16"
"$ASCENT" diff fp32 bf16 --steps 1: --by op --top 5 >d.txt || fail "diff (table)"

python3 - <<'PY' || fail "fp32 against bf16: $(cat d.txt)"
import json, sqlite3
d = json.load(open("d.json"))
ops = [o for o in d["ops"] if o["kind"] == "op"]
assert ops, d["ops"][:3]
# the same work on both sides: every operator as often
for o in ops:
    assert o["category"] == "unchanged" and o["a_count"] == o["b_count"] > 0, o
# counts and totals: SQL on the files, the events starting inside steps 1 and later
def side(path):
    db = sqlite3.connect(path)
    lo, hi = db.execute("SELECT min(start_ns), max(start_ns + dur_ns) FROM event WHERE kind = 3 AND step >= 1").fetchone()
    return {n: (c, t) for n, c, t in db.execute(
        "SELECT s.value, count(*), sum(e.dur_ns) FROM event e JOIN string s ON s.id = e.name_id"
        " WHERE e.kind = 0 AND e.start_ns >= ? AND e.start_ns < ? GROUP BY s.value", (lo, hi))}
a, b = side("fp32/trace.db"), side("bf16/trace.db")
for o in ops:
    assert (o["a_count"], o["a_total_ns"]) == a[o["name"]] and (o["b_count"], o["b_total_ns"]) == b[o["name"]], o
# the largest changes are the matmuls
ops.sort(key=lambda o: -abs(o["diff_total_ns"]))
top = [o["name"] for o in ops[:3]]
assert all(n.startswith("matmul") for n in top), ("largest operator changes", [(o["name"], o["diff_total_ns"]) for o in ops[:6]])
mm = sum(abs(o["diff_total_ns"]) for o in ops if o["name"].startswith("matmul"))
rest = sum(abs(o["diff_total_ns"]) for o in ops if not o["name"].startswith("matmul"))
assert mm > rest, (mm, rest)
print("fp32 -> bf16: largest operator changes %s; matmuls %.1f ms, the other operators %.1f ms" % (top, mm / 1e6, rest / 1e6))
PY
echo "diff_precision: ok"
