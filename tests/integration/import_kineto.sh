#!/usr/bin/env bash
# import_kineto.sh — `ascent import` on the real PyTorch profiler traces of tests/fixtures/kineto:
# every fixture imported and checked against totals an independent reader (kineto_expect.py:
# Python's json/gzip/decimal) computes from the file; the two trace_filter ranks together (two
# ranks, collectives matched across them); every viewer view dumped and advise --format json on
# every fixture; bad input (exit 2 with the file and byte offset, no output left behind).
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
X="$ASCENT_ROOT/tests/integration/kineto_expect.py"
fail() { echo "FAIL: $*"; exit 1; }

for f in "$F"/*.json.gz; do
  b=$(basename "$f" .json.gz)
  "$ASCENT" import "$f" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --format json >"$b.json"
  python3 "$X" "$b.json" "$f" || fail "report of $b differs from the trace"
  for v in overview ops comm steps ranks memory timeline; do
    "$ASCENT" view "$b.db" --dump "$v" --size 120x30 >"$b.$v.txt" || fail "view --dump $v on $b"
    [[ -s "$b.$v.txt" ]] || fail "view --dump $v on $b is empty"
  done
  "$ASCENT" advise "$b.db" --format json >"$b.advise.json" || fail "advise on $b"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "rules" in d and d["rules"], d' "$b.advise.json" \
    || fail "advise --format json on $b is not a document with rules"
done
# a GPU trace's timeline draws device lanes under the rank
grep -q 'device' nccl_parser_config__nccl_data.timeline.txt || fail "no device lane in the timeline"

# two ranks of one job imported together: two ranks, their NCCL kernels matched by ordinal
"$ASCENT" import "$F"/trace_filter__sampled_rank-0.json.gz "$F"/trace_filter__sampled_rank-1.json.gz -o tf.db -q
"$ASCENT" report tf.db --format json >tf.json
python3 "$X" tf.json "$F"/trace_filter__sampled_rank-0.json.gz "$F"/trace_filter__sampled_rank-1.json.gz
python3 - <<'PY' || fail "trace_filter ranks not matched"
import json
d = json.load(open("tf.json"))
assert sorted(r["rank"] for r in d["ranks"]) == [0, 1], d["ranks"]
matched = sum(c["matched"] for c in d["comm"])
count = sum(c["count"] for c in d["comm"])
assert count == 20 and matched == 20, (count, matched)
PY
# the same files as a folder give the same profile
mkdir tfdir && cp "$F"/trace_filter__sampled_rank-*.json.gz tfdir/
"$ASCENT" import tfdir -o tf2.db -q
"$ASCENT" report tf2.db --format json >tf2.json
python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); assert a["ops"]==b["ops"] and a["comm"]==b["comm"]' tf.json tf2.json \
  || fail "a folder import differs from the same files"

# --rank over what the trace says; a rank claimed twice with overlapping times is refused
"$ASCENT" import "$F"/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz --rank 5 -o r5.db -q
"$ASCENT" report r5.db --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["rank"] for r in d["ranks"]]==[5], d["ranks"]'
set +e
cp "$F"/trace_filter__sampled_rank-0.json.gz copy-rank-0.json.gz
"$ASCENT" import "$F"/trace_filter__sampled_rank-0.json.gz copy-rank-0.json.gz -o dup.db -q 2>dup.err; rc=$?
set -e
[[ $rc -eq 2 ]] || fail "two files of rank 0 with overlapping times: exit $rc (want 2)"
grep -q 'overlap' dup.err || fail "no 'overlap' in: $(cat dup.err)"
[[ ! -e dup.db ]] || fail "a refused import left dup.db"
ls | grep -q 'dup.db.tmp' && fail "a refused import left its temporary file"

echo "import_kineto: ok"
