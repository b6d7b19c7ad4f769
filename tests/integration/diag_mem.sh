#!/usr/bin/env bash
# diag mem: per-category JSON, ZeRO lowering the per-rank bytes, --fit ranking, bad layouts exit 2.
set -u
fail() { echo "FAIL: $*"; exit 1; }
"$ASCENT" diag mem --preset small --json >a.json || fail "small preset"
"$ASCENT" diag mem --preset small --dp 4 --zero 2 --json >b.json || fail "zero 2"
python3 - <<'PY' || exit 1
import json
a = json.load(open("a.json")); b = json.load(open("b.json"))
for k in ("params", "grads", "optimizer", "activations", "comm_buffers", "total"):
    assert k in a["per_rank"], k
p = a["model"]["params"]
assert a["per_rank"]["params"] == 4 * p and a["per_rank"]["optimizer"] == 8 * p, a["per_rank"]
assert b["per_rank"]["optimizer"] == 2 * p and b["per_rank"]["grads"] == p, b["per_rank"]
assert a["checks"][0]["name"] == "mem.estimate"
PY
echo '{"model": "tiny", "pp": 2, "microbatches": 4, "batch": 4, "precision": "bf16"}' >cfg.json
"$ASCENT" diag mem --config cfg.json --json >c.json || fail "--config"
python3 -c 'import json; d=json.load(open("c.json")); assert len(d["stages"])==2 and d["stages"][0]["in_flight"]==2 and d["layout"]["precision"]=="bf16", d["stages"]' || fail "config stages"

"$ASCENT" diag mem --preset gpt2-124m --batch 1 --fit 2G --world 8 --json >d.json; rc=$?
python3 - <<'PY' || exit 1
import json
d = json.load(open("d.json"))
assert d["fit"], "nothing fits 2 GiB on 8 ranks?"
assert all(f["peak"] <= 2 << 30 for f in d["fit"])
assert all(f["dp"] * f["tp"] * f["pp"] == 8 for f in d["fit"])
PY
"$ASCENT" diag mem --preset gpt2-124m --batch 16 --fit 1M >e.txt; rc=$?
[[ $rc -eq 1 ]] || fail "a 1 MiB budget must exit 1 (got $rc)"
grep -q 'FAIL mem.fit' e.txt || fail "$(cat e.txt)"
"$ASCENT" diag mem --preset small --tp 3 >/dev/null 2>f.txt; rc=$?
[[ $rc -eq 2 ]] || fail "--tp 3 with 8 heads exited $rc"
grep -q "does not divide" f.txt || fail "$(cat f.txt)"
"$ASCENT" diag mem >/dev/null 2>g.txt; rc=$?
[[ $rc -eq 2 ]] || fail "no model exited $rc"
echo '{"model": "huge"}' >bad.json
"$ASCENT" diag mem --config bad.json >/dev/null 2>h.txt; rc=$?
[[ $rc -eq 2 ]] || fail "unknown preset in config exited $rc"
echo ok
