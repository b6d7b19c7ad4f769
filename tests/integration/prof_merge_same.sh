#!/usr/bin/env bash
# tests/integration/prof_merge_same.sh — `ascent merge RUN` makes the trace.db the trainer makes at
# the end of a run (issue 14, finding 26): the same meta facts (host, layout, BLAS), the same tables
# (the viewer's included) and the same rows. Run b's own merge is made to fail (a folder where its
# temporary file goes), so its rank file is merged by hand.
set -u
command -v sqlite3 >/dev/null || { echo "sqlite3 is not installed"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
head -c 4000 /usr/share/games/fortunes/fortunes >t.txt 2>/dev/null || python3 -c "print('hello world ' * 400)" >t.txt
P=(--data t.txt --n-layer 1 --n-embd 16 --n-head 2 --max-seq 16 --seq 8 --batch 2 --steps 3 --threads 1
   --eval-every 0 --eval-batches 1 --seed 7 --profile)
"$ASCENT" train "${P[@]}" --out a >a.txt 2>&1 || { cat a.txt; fail "train a"; }
mkdir -p b/trace.db
"$ASCENT" train "${P[@]}" --out b >b.txt 2>&1 || { cat b.txt; fail "train b"; }
grep -q "profile merge failed" b.txt || { cat b.txt; fail "run b merged anyway"; }
rmdir b/trace.db
"$ASCENT" merge b >/dev/null 2>err.txt || fail "ascent merge b: $(cat err.txt)"
for d in a b; do
  sqlite3 $d/trace.db "SELECT key, value FROM meta WHERE key NOT IN ('created_utc', 'run_id') ORDER BY key" >$d.meta
  sqlite3 $d/trace.db "SELECT type, name FROM sqlite_master ORDER BY name" >$d.tables
  for t in event counter mem_event rank thread string comm step_stat op_stat view_op view_lane view_step; do
    echo "$t $(sqlite3 $d/trace.db "SELECT count(*) FROM $t")"
  done >$d.counts
done
diff a.meta b.meta >meta.diff || { cat meta.diff; fail "meta differs between the trainer's merge and ascent merge"; }
for k in host_cores host_mem_bytes cpu_isa blas_core blas_threads dp schedule bubble_theory; do
  grep -q "^$k|" a.meta || fail "the trainer's profile lacks $k"
done
diff a.tables b.tables >tables.diff || { cat tables.diff; fail "tables differ"; }
grep -q "view_op" b.tables || fail "ascent merge built no viewer tables"
diff a.counts b.counts >counts.diff || { cat counts.diff; fail "row counts differ"; }
echo ok
