#!/usr/bin/env bash
# tests/integration/report_text.sh — names from a trace are data, not terminal commands: a Kineto
# trace whose operator name holds ESC and BEL (an OSC sequence that would retitle a terminal) is
# imported; report's table, CSV and overview print those bytes as C escapes (\e, \a), never raw,
# and the JSON keeps the name exact.
set -euo pipefail
printf '%s' '{"traceEvents": [
 {"ph": "X", "cat": "cpu_op", "name": "evil\u001b]0;pwned\u0007op", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
 {"ph": "X", "cat": "cpu_op", "name": "tab\there", "pid": 1, "tid": 1, "ts": 10, "dur": 2}]}' > esc.json
"$ASCENT" import esc.json -o esc.db
for fmt in table csv; do
  "$ASCENT" report esc.db --by op --format $fmt > "op.$fmt"
done
"$ASCENT" report esc.db > all.table
for f in op.table op.csv all.table; do
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$f"; then
    echo "$f holds raw control bytes:"; od -c "$f" | head -20; exit 1
  fi
  grep -qF 'evil\e]0;pwned\aop' "$f" || { echo "$f lacks the escaped name"; cat "$f"; exit 1; }
done
grep -qF 'tab\there' op.csv
"$ASCENT" report esc.db --format json > all.json
python3 -c "
import json
names = {o['name'] for o in json.load(open('all.json'))['ops']}
assert 'evil\x1b]0;pwned\x07op' in names, names"
echo ok
