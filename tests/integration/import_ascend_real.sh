#!/usr/bin/env bash
# import_ascend_real.sh — `ascent import` of real torch_npu output (tests/fixtures/ascend: a 2-rank job
# exported as databases and as text, and msprof-analyze's trace_view.json): every form a user holds
# (the job's folder, a rank's *_ascend_pt folder, its ASCEND_PROFILER_OUTPUT, each file) imports
# with exit 0; per name, the counts and total ns of operators, kernels, copies and collectives and
# the number of steps equal what ascend_expect.py computes from the files with Python's json and
# sqlite3; the two exports of the one job give the same operator and kernel names and the same step
# split (HCCL's tasks are communication, not computing); the summaries beside the traces are
# counted, not read; times that are not decimals are counted and skipped.
set -euo pipefail
F="$ASCENT_ROOT/tests/fixtures/ascend"
X="$ASCENT_ROOT/tests/integration/ascend_expect.py"
fail() { echo "FAIL: $*"; exit 1; }
tar -xzf "$F/msinsight_db_level1.tar.gz"
tar -xzf "$F/msinsight_text_level1.tar.gz"
DB=msinsight_db_level1 TX=msinsight_text_level1
sum0=$(find $DB $TX -type f | sort | xargs md5sum | md5sum)

# the job's folder (its rank folders): both exports
"$ASCENT" import $TX -o text.db -q 2>text.err || fail "text job: $(cat text.err)"
"$ASCENT" import $DB -o dbx.db -q 2>db.err || fail "database job: $(cat db.err)"
[[ "$(find $DB $TX -type f | sort | xargs md5sum | md5sum)" == "$sum0" ]] || fail "an input changed"
"$ASCENT" report text.db --format json >text.json
"$ASCENT" report dbx.db --format json >db.json
python3 "$X" text.json text $TX/rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json || fail "text export: report differs"
python3 "$X" db.json db $DB/rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db || fail "database export: report differs"
# the summaries beside the traces: counted by reason, not read (11 per text rank, analysis.db per db rank)
grep -q "22 files of a torch_npu output folder" text.err || fail "text summaries not counted: $(cat text.err)"
grep -q "2 files of a torch_npu output folder" db.err || fail "database summaries not counted: $(cat db.err)"
grep -q "Overlap Analysis" text.err || fail "Overlap Analysis rows not counted: $(cat text.err)"

python3 - <<'PY' || fail "the text and database exports of one job differ"
import json
t, d = json.load(open("text.json")), json.load(open("db.json"))
for kind in ("op", "kernel", "memcpy"):
    a = {o["name"] for o in t["ops"] if o["kind"] == kind}
    b = {o["name"] for o in d["ops"] if o["kind"] == kind}
    assert a and a == b, (kind, sorted(a ^ b)[:20])
# ranks from profiler_info_N.json; one step each, ProfilerStep#50, a step (not an operator)
for rep in (t, d):
    assert sorted(r["rank"] for r in rep["ranks"]) == [0, 1], rep["ranks"]
    assert [(s["rank"], s["step"]) for s in sorted(rep["steps"], key=lambda s: s["rank"])] == [(0, 50), (1, 50)], rep["steps"]
    assert not [o for o in rep["ops"] if o["name"].startswith("ProfilerStep")], "a step as an operator"
    assert {c["name"] for c in rep["comm"]} == {"hcom_allReduce_"}, rep["comm"]
    assert all(c["matched"] == c["count"] and c["group_size"] == 2 for c in rep["comm"]), rep["comm"]
# the step split: HCCL's tasks are not computing; communication is mostly exposed, as the database
# export (its communication tasks are COMMUNICATION_TASK_INFO's) says
def split(rep):
    tot = sum(r["total_ns"] for r in rep["ranks"])
    return (sum(r["computing_ns"] for r in rep["ranks"]) / tot,
            sum(r["comm_not_overlapped_ns"] for r in rep["ranks"]) / tot,
            sum(r["comm_hidden_share"] for r in rep["ranks"]) / 2)
(tc, te, th), (dc, de, dh) = split(t), split(d)
print(f"text: computing {tc:.3f}, exposed communication {te:.3f}, hidden {th:.3f}; "
      f"database: {dc:.3f}, {de:.3f}, {dh:.3f}")
assert tc < 0.15 and dc < 0.15 and te > 0.5 and de > 0.5 and th < 0.2 and dh < 0.2
assert abs(tc - dc) < 0.02 and abs(te - de) < 0.02
PY

# every other form: a rank folder, its ASCEND_PROFILER_OUTPUT, the file itself; the rank recorded
for r in 0 1; do
  for p in $TX/rank${r}_ascend_pt $TX/rank${r}_ascend_pt/ASCEND_PROFILER_OUTPUT $TX/rank${r}_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json \
           $DB/rank${r}_ascend_pt $DB/rank${r}_ascend_pt/ASCEND_PROFILER_OUTPUT $DB/rank${r}_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_$r.db; do
    rm -f one.db
    "$ASCENT" import "$p" -o one.db -q 2>one.err || fail "$p: $(cat one.err)"
    [[ "$(sqlite3 one.db 'SELECT group_concat(rank) FROM rank')" == "$r" ]] || fail "$p: not rank $r"
  done
done
"$ASCENT" report one.db --format json >one.json
python3 "$X" one.json db $DB/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db || fail "one rank's database"

# msprof-analyze's trace_view.json (2024: Task Type "Other" for every task)
"$ASCENT" import "$F/msprof-analyze_timeline_advice_trace_view.json.gz" -o ma.db -q 2>ma.err || fail "msprof-analyze: $(cat ma.err)"
"$ASCENT" report ma.db --format json >ma.json
python3 "$X" ma.json text "$F/msprof-analyze_timeline_advice_trace_view.json.gz" || fail "msprof-analyze trace: report differs"
! grep -q "Task Type" ma.err || fail "Other is in the task table: $(cat ma.err)"

# the database export: copies are copies (the advisor sees them), the Level0 form of the collective
# (opType written "N/A") named by its type from opName
"$ASCENT" advise dbx.db >adv.txt 2>&1 || fail "advise: $(cat adv.txt)"
! grep -q "no device copies" adv.txt || fail "advise found no copies: $(grep copies adv.txt)"
cp $DB/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db level0_1.db
sqlite3 level0_1.db "INSERT INTO STRING_IDS (id, value) VALUES ((SELECT max(id) + 1 FROM STRING_IDS), 'N/A');
                     UPDATE COMMUNICATION_OP SET opType = (SELECT id FROM STRING_IDS WHERE value = 'N/A');"
"$ASCENT" import level0_1.db -o level0.db -q 2>level0.err || fail "Level0 collectives: $(cat level0.err)"
"$ASCENT" report level0.db --format json >level0.json
python3 "$X" level0.json db level0_1.db || fail "Level0 collectives: report differs"

# times that are not decimals: counted and skipped, never read as 0
cat >strings.json <<'J'
[
 {"ph":"X","name":"good","pid":7,"tid":7,"ts":"1736408883688177.930","dur":1.5,"cat":"cpu_op"},
 {"ph":"X","name":"abc","pid":7,"tid":7,"ts":"abc","dur":1,"cat":"cpu_op"},
 {"ph":"X","name":"empty","pid":7,"tid":7,"ts":"","dur":1,"cat":"cpu_op"},
 {"ph":"X","name":"hex","pid":7,"tid":7,"ts":"0x10","dur":1,"cat":"cpu_op"},
 {"ph":"X","name":"huge","pid":7,"tid":7,"ts":"1.5e30","dur":1,"cat":"cpu_op"},
 {"ph":"X","name":"baddur","pid":7,"tid":7,"ts":"1736408883688178.000","dur":"1x","cat":"cpu_op"},
 {"ph":"X","name":"MatMul","pid":9,"tid":2,"ts":"1736408883688179.000","dur":"2.0004","args":{"Task Type":"AI_CORE"}},
 {"ph":"X","name":"NewTask","pid":9,"tid":2,"ts":"1736408883688182.000","dur":1,"args":{"Task Type":"FUTURE_SQE"}},
 {"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"Python"}},
 {"ph":"M","name":"process_name","pid":9,"tid":0,"args":{"name":"Ascend Hardware"}}
]
J
"$ASCENT" import strings.json -o strings.db -q 2>strings.err || fail "string times: $(cat strings.err)"
grep -q "^import: warning: 5 events with a negative, overflowing or unreadable time" strings.err || fail "bad times not counted: $(cat strings.err)"
grep -q "1 device tasks of a Task Type.*FUTURE_SQE" strings.err || fail "unknown task type not counted: $(cat strings.err)"
[[ "$(sqlite3 strings.db "SELECT group_concat(s.value || ':' || e.kind || ':' || e.dur_ns, ' ') FROM event e JOIN string s ON s.id = e.name_id ORDER BY e.start_ns")" \
   == "good:0:1500 MatMul:11:2000 NewTask:11:1000" ]] || fail "string times stored wrong: $(sqlite3 strings.db 'SELECT * FROM event')"
echo "import_ascend_real: ok"
