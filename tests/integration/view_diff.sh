#!/usr/bin/env bash
# view_diff.sh — `ascent view B --against A` (docs/viewer.md, docs/diff.md) on the two ranks of a real
# PyTorch profiler trace (tests/fixtures/kineto/trace_filter__sampled_rank-{0,1}), imported:
#  1. the diff read from the summary tables import builds (view_opdev, view_launch, view_comm,
#     view_mem) equals the diff read from the events (the same traces diffed on the fly, imported
#     without those tables): every field of the JSON;
#  2. --dump diff: the rows and numbers of `ascent diff A B` (the first rows by the absolute change,
#     their change, totals and counts), each side's mean step; 80x24 keeps the key bar;
#  3. --dump diff-row: the first row's distributions on A and on B — instances, min, median, p95
#     and max — equal what Python computes from the two files' events;
#  4. --dump steps: A's step times beside B's;
#  5. the TUI in tmux (when installed): it opens on the diff view, Enter shows the distributions,
#     Backspace goes back, 4 shows A's step times, D comes back, q quits;
#  6. errors: --against a missing file, the diff view without --against.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/kineto"
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p tmp
export TMPDIR="$PWD/tmp"
R0="$F/trace_filter__sampled_rank-0.json.gz"
R1="$F/trace_filter__sampled_rank-1.json.gz"
"$ASCENT" import "$R0" -o a.db -q 2>/dev/null || fail "import rank 0"
"$ASCENT" import "$R1" -o b.db -q 2>/dev/null || fail "import rank 1"

# 1. summary tables against the events
"$ASCENT" diff a.db b.db --format json >summary.json || fail "diff a.db b.db"
"$ASCENT" diff "$R0" "$R1" -q --format json >scan.json || fail "diff of the traces"
python3 - <<'PY' || fail "the diff from the summary tables differs from the diff from the events"
import json
a, b = json.load(open("summary.json")), json.load(open("scan.json"))
for k in ("a", "b"):
    a.pop(k), b.pop(k)
for k in a:
    assert a[k] == b[k], (k, [x for x, y in zip(a[k], b[k]) if x != y][:3] if isinstance(a[k], list) else (a[k], b[k]))
assert a["op_device"] and a["comm"] and a["overview"]["a"]["linked"] > 0
PY

# 2. the diff view
"$ASCENT" view b.db --against a.db --dump diff --size 160x40 >diff.txt 2>err.txt || { cat err.txt; fail "--dump diff"; }
grep -q "D diff" diff.txt || fail "no diff tab: $(head -3 diff.txt)"
grep -q "mean step 615.12 ms -> 619.27 ms" diff.txt || fail "mean steps: $(head -6 diff.txt)"
python3 - <<'PY' || fail "the diff view's rows are not ascent diff's"
import json, re
ops = json.load(open("summary.json"))["ops"]
rows = [l for l in open("diff.txt").read().splitlines()[6:] if re.search(r"\b(unchanged|added|removed|increased|decreased)\b", l)]
UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
def ns(t):
    v, u = t.split()
    return float(v.lstrip("+-")) * UNIT[u] * (-1 if v.startswith("-") else 1)
# ascent diff's order: |change| descending (ties by kind, name); the view's first rows are the same
want = sorted(ops, key=lambda o: -abs(o["diff_total_ns"]))
assert len(rows) >= 8, rows
for line, o in zip(rows[:8], want[:8]):
    m = re.search(r"\s(\S+)\s+(unchanged|added|removed|increased|decreased)\s+([+-]?[\d.]+ \w+)\s+\S+\s+([\d.]+ \w+)\s+([\d.]+ \w+)\s+(\d+)\s+(\d+)$", line)
    assert m, line
    assert (m.group(1), m.group(2)) == (o["kind"], o["category"]), (line, o)
    for got, exp in ((ns(m.group(3)), o["diff_total_ns"]), (ns(m.group(4)), o["a_total_ns"]), (ns(m.group(5)), o["b_total_ns"])):
        assert abs(got - exp) <= 0.006 * abs(exp) + 1, (line, o)
    assert (int(m.group(6)), int(m.group(7))) == (o["a_count"], o["b_count"]), (line, o)
print("diff view: first %d rows are ascent diff's" % 8)
PY
"$ASCENT" view b.db --against a.db --dump diff --size 80x24 >small.txt || fail "--dump diff at 80x24"
[[ $(wc -l <small.txt) -eq 24 ]] && tail -1 small.txt | grep -q help && grep -q "^ 1  2 .* D diff" small.txt \
  || fail "80x24 (the tabs by key, the diff's named): $(cat small.txt)"
[[ $(awk '{ if (length($0) > 80) n++ } END { print n + 0 }' small.txt) -eq 0 ]] || fail "80x24: lines wider than 80"

# 3. the first row's distributions against the events themselves
"$ASCENT" view b.db --against a.db --dump diff-row --size 120x40 >row.txt || fail "--dump diff-row"
python3 - <<'PY' || fail "the distributions differ from the events"
import json, re, sqlite3
o = sorted(json.load(open("summary.json"))["ops"], key=lambda o: -abs(o["diff_total_ns"]))[0]
KIND = {"op": 0, "comm": 1, "range": 8, "kernel": 11, "memcpy": 12, "memset": 13}[o["kind"]]
UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
txt = open("row.txt").read()
assert o["name"][:60] in txt, (o["name"], txt[:300])
for side, path in (("A", "a.db"), ("B", "b.db")):
    d = sorted(r[0] for r in sqlite3.connect(path).execute(
        "SELECT e.dur_ns FROM event e JOIN string s ON s.id = e.name_id WHERE s.value = ? AND e.kind = ?", (o["name"], KIND)))
    n = len(d)
    med = (d[(n - 1) // 2] + d[n // 2]) // 2
    p95 = d[max(0, -(-95 * n // 100) - 1)]
    line = re.search(r"^%s +(\d+) +(.*)$" % side, txt, re.M)
    assert line, txt
    assert int(line.group(1)) == n == o["%s_count" % side.lower()], (line.group(0), n)
    vals = re.findall(r"([\d.]+) (ns|us|ms|s)\b", line.group(2))
    mean, mn, md, p, mx = (float(v) * UNIT[u] for v, u in vals)
    for got, exp in ((mn, d[0]), (md, med), (p, p95), (mx, d[-1]), (mean, sum(d) / n)):
        assert abs(got - exp) <= 0.006 * exp + 1, (side, got, exp)
assert "histogram" in txt
print("diff-row: %s %s" % (o["kind"], o["name"][:50]))
PY

# 4. steps side by side
"$ASCENT" view b.db --against a.db --dump steps --size 140x20 >steps.txt || fail "--dump steps"
grep -Eq "A step +A time +change" steps.txt || fail "steps: no A columns: $(cat steps.txt)"
python3 - <<'PY' || fail "steps: A's and B's step times: $(cat steps.txt)"
import re, sqlite3
def ms(path):
    return {s: t / 1e6 for s, t in sqlite3.connect(path).execute("SELECT step, total_ns FROM step_stat")}
a, b = ms("a.db"), ms("b.db")
for step in (551, 552):
    m = re.search(r"^ +%d +([\d.]+) ms .* %d +([\d.]+) ms +([+-][\d.]+) (ms|us)$" % (step, step), open("steps.txt").read(), re.M)
    assert m, step
    d = float(m.group(3)) * (1 if m.group(4) == "ms" else 1e-3)
    assert abs(float(m.group(1)) - b[step]) < 0.01 and abs(float(m.group(2)) - a[step]) < 0.01, (m.group(0), a, b)
    assert abs(d - (b[step] - a[step])) < 0.01, (m.group(0), a, b)
PY

# 5. the TUI
if command -v tmux >/dev/null; then
  S=ascent-view-diff-$$
  export TMUX_TMPDIR=$PWD
  trap 'tmux kill-server 2>/dev/null' EXIT
  tmux -f /dev/null new-session -d -s $S -x 120 -y 40 "TERM=xterm-256color '$ASCENT' view b.db --against a.db; echo VIEWER-EXIT=\$?; sleep 600"
  screen() { tmux capture-pane -p -t $S; }
  wait_for() { for _ in $(seq 600); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done; echo "FAIL: screen lacks '$1':"; screen; exit 1; }
  keys() { tmux send-keys -t $S "$@"; sleep 0.3; }
  wait_for "D diff"
  wait_for "mean step 615.12 ms -> 619.27 ms"
  keys Enter;      wait_for "durations on A and on B"
  wait_for "diff > diff-row"
  keys BSpace;     wait_for "change v"
  keys 4;          wait_for "A time"
  keys D;          wait_for "change v"
  keys q;          wait_for "VIEWER-EXIT=0"
fi

# 6. errors
"$ASCENT" view b.db --against missing.db --dump diff >out.txt 2>err.txt && fail "--against missing.db accepted"
grep -q "no such file" err.txt || fail "--against missing: $(cat err.txt)"
"$ASCENT" view b.db --dump diff >out.txt 2>err.txt && fail "--dump diff without --against accepted"
grep -q "against" err.txt || fail "diff without --against: $(cat err.txt)"
echo "view_diff: ok"
