#!/usr/bin/env bash
# tests/integration/view_real.sh — the viewer on a real 4-rank profile (DP=2 x PP=2, 1F1B, 4
# micro-batches): every --dump view at 120x40 and 80x24 shows sensible numbers — ranks 0-3 in the
# overview, ranks view and timeline; each communicator (dp 0,1 / dp 2,3 / pp 0,2 / pp 1,3 / world)
# once with its members and size, pipeline sends/receives matched across ranks (wait/transit, not
# "-"); every step with a bubble; memory per category for every rank; traffic between pipeline peers
# (p2p peers are stored as ranks in their communicator and must be mapped to world ranks). Also: the
# training prepared the viewer's tables (viewing does not change trace.db), and a run folder whose
# rank files hold nothing yet is refused with a message (a running one is watched: view_live.sh).
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
command -v sqlite3 >/dev/null || { echo "sqlite3 shell not found"; exit 77; }
P=(--data corpus.txt --n-layer 2 --n-head 4 --n-embd 64 --max-seq 32 --seq 32 --batch 8 --steps 5 --warmup 1
   --threads 1 --eval-every 0 --eval-batches 1 --profile)
train 4 p4 "${P[@]}" --dp 2 --pp 2 --microbatches 4 --schedule 1f1b
before=$(md5sum < p4/trace.db)
for sz in 120x40 80x24; do
  for v in overview ops comm steps ranks memory timeline devices; do
    "$ASCENT" view p4/trace.db --dump $v --size $sz > $v.$sz.txt || { cat $v.$sz.txt; echo "FAIL: --dump $v --size $sz"; exit 1; }
    w=${sz%x*}; h=${sz#*x}
    [[ $(wc -l < $v.$sz.txt) -eq $h ]] || { echo "FAIL: $v at $sz is not $h lines"; exit 1; }
    awk -v w=$w 'length($0) > w { bad = 1 } END { exit bad }' $v.$sz.txt || { echo "FAIL: $v wider than $w"; exit 1; }
  done
done
[[ $(md5sum < p4/trace.db) == "$before" ]] || { echo "FAIL: viewing rebuilt the viewer's tables (the training should have prepared them)"; exit 1; }
python3 - <<'PY'
import re
def dump(v, sz): return open("%s.%s.txt" % (v, sz)).read()
for sz in ("120x40", "80x24"):
    o = dump("overview", sz)
    assert "world 4" in o and "dp 2" in o and "pp 2" in o, o
    assert re.search(r"ranks 4\b", o), o
    m = re.search(r"bubble \(recv\)\s+\[[# ]*\]\s+([\d.]+)%", o)
    assert m and float(m.group(1)) > 0, "no bubble on a PP run:\n" + o
    c = dump("comm", sz)
    rows = re.findall(r"^(dp|pp|world)\s+([\d,]+)\s+(\d+)\s+(.*)$", c, re.M)
    got = sorted((r[0], r[1], int(r[2])) for r in rows)
    assert got == [("dp", "0,1", 2), ("dp", "2,3", 2), ("pp", "0,2", 2), ("pp", "1,3", 2), ("world", "0,1,2,3", 4)], (sz, got, c)
    assert all("-" not in r[3].split() for r in rows if r[0] == "pp"), "pipeline p2p not matched:\n" + c
    for op in ("send", "recv", "allreduce"):
        assert re.search(r"^%s\s" % op, c, re.M), (op, c)
    s = dump("steps", sz)
    hdr = [l for l in s.splitlines() if "step" in l and "bubble" in l]
    assert hdr, "no bubble column at %s:\n%s" % (sz, s)
    cols = hdr[0].split()
    bi = cols.index("bubble") + 1   # "step v" takes two words in the header
    steps = [l.split() for l in s.splitlines() if re.match(r"^\s+\d+\s+[\d.]+ [mun]?s\s", l)]
    assert [int(x[0]) for x in steps] == [1, 2, 3, 4, 5], s
    for x in steps:
        # times are "N unit" pairs: rebuild cells from the right (loss is one word)
        cells, toks = [], x[1:]
        while toks:
            if len(toks) >= 2 and toks[1] in ("ns", "us", "ms", "s"):
                cells.append(toks[0] + " " + toks[1]); toks = toks[2:]
            else:
                cells.append(toks[0]); toks = toks[1:]
        named = dict(zip(cols[2:], cells))
        assert named["bubble"] != "0 ns" and not named["bubble"].startswith("0 "), (sz, x, named)
    r = dump("ranks", sz)
    for k in range(4):
        assert re.search(r"^r%d\b" % k, r, re.M), (k, r)
    mat = {}
    for l in r.splitlines():
        m = re.match(r"^(r\d)\s+(.*)$", l)
        if m and "traffic" not in l and len(re.findall(r"(?:\d+\.?\d* [KMG]?B|\.)", m.group(2))) == 4:
            mat[m.group(1)] = re.findall(r"(\d+\.?\d* [KMG]?B|\.)", m.group(2))
    assert sorted(mat) == ["r0", "r1", "r2", "r3"], (mat, r)
    def b(x):
        if x == ".": return 0
        n, u = x.split()
        return float(n) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[u]
    # pipeline peers (0->2, 1->3) exchange activations on top of the world traffic that 0->3 also has
    assert b(mat["r0"][2]) > b(mat["r0"][3]) and b(mat["r1"][3]) > b(mat["r1"][2]), mat
    mem = dump("memory", sz)
    assert "memory in use over time" in mem and "peak" in mem, mem
    if sz == "120x40":
        for cat in ("param", "grad", "optimizer", "activation", "comm_buffer", "workspace"):
            assert set(re.findall(r"^%s\s+(r\d)" % cat, mem, re.M)) == {"r0", "r1", "r2", "r3"}, (cat, mem)
    t = dump("timeline", sz)
    # step marks drawn ("|N" where step N starts); which labels fit depends on the steps' lengths (a
    # short first step's label is overwritten by the next one's at 80 columns), so any step's
    assert "window" in t, t
    assert re.search(r"^steps\s.*\|[1-5]", t, re.M), ("no step marks", t)
    for k in range(4):
        assert re.search(r"^r%d t0 " % k, t, re.M), (k, t)
    assert "#" in t and "=" in t, t
print("views ok")
PY
# the report agrees: the pipeline's sends and receives are matched across ranks
"$ASCENT" report p4/trace.db --by comm --format json > rep.json
python3 -c '
import json
p2p = [c for c in json.load(open("rep.json"))["comm"] if c["kind"] == "p2p"]
assert p2p and all(c["matched"] == c["count"] for c in p2p), p2p
' || { echo "FAIL: p2p not matched in the report"; exit 1; }
# a run starting: its trace.db does not exist yet, its ranks' databases do but hold nothing yet
mkdir live && cp p4/config.json live/ && : > live/rank-00000.db && : > live/rank-00001.db
set +e
"$ASCENT" view live/trace.db --dump overview > /dev/null 2> live.err; rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "cannot watch the run in 'live'" live.err || { cat live.err; echo "FAIL: live run (exit $rc)"; exit 1; }
echo ok
