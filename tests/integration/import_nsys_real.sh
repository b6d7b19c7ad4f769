#!/usr/bin/env bash
# import_nsys_real.sh — every real Nsight Systems export of tests/fixtures/nsys imports (exit 0),
# and its report agrees with figures computed from the export itself (nsys_expect.py: per name,
# count and total ns of kernels, copies, memsets and runtime calls; a rank per process with its
# pid; lanes "gpu D stream S"; launch links per kind). Then what those files showed: unified-memory
# copies named by direction, warnings that name their format, long kernel names in tables.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/nsys"
X="$ASCENT_ROOT/tests/integration/nsys_expect.py"
fail() { echo "FAIL: $*"; exit 1; }
for b in saxpy-mpi-cuda_nsys_perlmutter0 fuser_report1_2025-03 nsysai_h100_2gpu_1s; do
  gzip -dc "$F/$b.sqlite.gz" >"$b.sqlite"
  "$ASCENT" import "$b.sqlite" -o "$b.db" -q 2>"$b.err" || fail "import $b: $(cat "$b.err")"
  "$ASCENT" report "$b.db" --format json >"$b.json" || fail "report $b"
  python3 "$X" "$b.sqlite" "$b.json" "$b.db" || fail "$b: the report differs from the export"
  # warnings name the format they come from, and no other
  ! grep -i kineto "$b.err" || fail "$b: a warning names Kineto: $(cat "$b.err")"
  while read -r line; do
    [[ "$line" == *"(nsight systems (sqlite export))"* ]] || fail "$b: a warning without its format: $line"
  done <"$b.err"
done
# nsys-ai's 1 s window: 1,810 kernels (and copies) whose launch is before it, kept and said so
grep -q "device activities whose launching call is not in the file" nsysai_h100_2gpu_1s.err ||
  fail "no warning for the device work launched before the window: $(cat nsysai_h100_2gpu_1s.err)"
# emit_nvtx: every range its own name, every one imported (16,782 distinct names)
n=$(sqlite3 nsysai_h100_2gpu_1s.sqlite "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) AND end >= start")
m=$(sqlite3 nsysai_h100_2gpu_1s.db "SELECT count(*) FROM event e JOIN string s ON s.id = e.name_id WHERE s.value LIKE 'aten::%' OR s.value LIKE 'autograd::%' OR s.value LIKE '%op_id%'")
d=$(sqlite3 nsysai_h100_2gpu_1s.sqlite "SELECT count(DISTINCT COALESCE(s.value, e.text)) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId WHERE eventType IN (59, 60, 70, 71) AND end >= start")
[[ "$n" -gt 16000 && "$d" -gt 16000 ]] || fail "the emit_nvtx export has $n ranges, $d names"
k=$(sqlite3 nsysai_h100_2gpu_1s.db "SELECT count(*) FROM event e JOIN thread t ON t.rank = e.rank AND t.tid = e.tid WHERE t.tid NOT IN (SELECT tid FROM device_lane WHERE rank = e.rank) AND e.kind IN (3, 8, 1, 2)")
r=$(sqlite3 nsysai_h100_2gpu_1s.sqlite "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE end >= start")
[[ "$k" == $((n + r)) ]] || fail "$k CPU ranges imported, the export has $n NVTX ranges and $r runtime calls"

# unified memory: copyKind 11-13 named by direction; a process whose copies are all unified memory
python3 - <<'PY'
import sqlite3, shutil
shutil.copy("saxpy-mpi-cuda_nsys_perlmutter0.sqlite", "um.sqlite")
db = sqlite3.connect("um.sqlite")
db.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = CASE copyKind WHEN 1 THEN 11 WHEN 2 THEN 12 END")
db.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 13 WHERE rowid IN (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)")
db.commit()
PY
"$ASCENT" import um.sqlite -o um.db -q 2>um.err || fail "import with unified-memory copies: $(cat um.err)"
"$ASCENT" report um.db --format json >um.json
python3 "$X" um.sqlite um.json um.db || fail "unified-memory copies"
names=$(sqlite3 um.db "SELECT group_concat(DISTINCT s.value) FROM (SELECT DISTINCT name_id FROM event WHERE kind = 12) e JOIN string s ON s.id = e.name_id ORDER BY 1")
for w in "Memcpy HtoD (unified)" "Memcpy DtoH (unified)" "Memcpy DtoD (unified)"; do
  [[ "$names" == *"$w"* ]] || fail "no '$w' among the copies: $names"
done

# a kernel name of 1,500 characters: tables fit the terminal (COLUMNS), --wide and the CSV and
# JSON carry the whole name
python3 - <<'PY'
import sqlite3, shutil
shutil.copy("saxpy-mpi-cuda_nsys_perlmutter0.sqlite", "long.sqlite")
db = sqlite3.connect("long.sqlite")
(i,) = db.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()
name = "void at::native::elementwise_kernel<128, 2, " + ", ".join("at::detail::Array<char *, %d>" % k for k in range(50)) + ">(int, T3)"
db.execute("UPDATE StringIds SET value = ? WHERE id = ?", (name, i))
db.commit()
open("long.name", "w").write(name)
PY
"$ASCENT" import long.sqlite -o long.db -q
for cols in 140 200; do   # the numbers alone take ~115 columns
  COLUMNS=$cols "$ASCENT" report long.db --by op >long.$cols.txt
  w=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' long.$cols.txt)
  [[ "$w" -le "$cols" ]] || fail "report --by op at COLUMNS=$cols: a line of $w characters"
  grep -q 'void at::native::elementwise_kernel<...>(...)' long.$cols.txt || grep -q 'void at::nat.*~' long.$cols.txt ||
    fail "the long name not shortened: $(cat long.$cols.txt)"
  ! grep -q ' $' long.$cols.txt || fail "lines end in blanks"
done
COLUMNS=100 "$ASCENT" report long.db --by op --wide >long.wide.txt
grep -qF "$(cat long.name)" long.wide.txt || fail "--wide lacks the whole name"
COLUMNS=100 "$ASCENT" report long.db --by op --format csv >long.csv
grep -qF "$(cat long.name)" long.csv || fail "the CSV lacks the whole name"
COLUMNS=100 "$ASCENT" report long.db --format json | python3 -c '
import json, sys
d = json.load(sys.stdin); name = open("long.name").read()
assert any(o["name"] == name for o in d["ops"]), "the JSON lacks the whole name"' || fail "json"

# Kineto's device lanes ("stream 7 " with a trailing space) are "gpu D stream S" too; the GPU user
# annotations beside a stream are "gpu D stream S annotations" (docs/import.md)
K="$ASCENT_ROOT/tests/fixtures/kineto"
"$ASCENT" import "$K/nccl_parser_config__nccl_data.json.gz" -o kin.db -q 2>/dev/null
lanes=$(sqlite3 kin.db "SELECT t.name FROM thread t JOIN device_lane d ON d.rank = t.rank AND d.tid = t.tid")
[[ -n "$lanes" ]] || fail "no device lanes in the Kineto trace"
while read -r l; do
  [[ "$l" =~ ^gpu\ [0-9]+\ stream\ [0-9]+(\ annotations)?$ ]] || fail "Kineto device lane named '$l'"
done < <(sqlite3 kin.db "SELECT '' || t.name || '' FROM thread t JOIN device_lane d ON d.rank = t.rank AND d.tid = t.tid")
[[ -z "$(sqlite3 kin.db "SELECT name FROM thread WHERE name LIKE '% '")" ]] || fail "lane names end in a blank"
echo "import_nsys_real: ok"
