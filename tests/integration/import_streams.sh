#!/usr/bin/env bash
# import_streams.sh — inputs that can be read only once, and inputs that are not what their name
# says. A FIFO (given, or inside an input folder) and a pipe on /dev/stdin, plain or gzip, import
# the same events as the file (the format is told from the stream the reader keeps: opening one
# twice hung or lost its first bytes); an SQLite file through a pipe, an empty or damaged .db, a
# folder named like a trace each get a message saying what is wrong (exit 2); more than 4,096
# inputs import; a path that starts with two slashes reads an SQLite file.
set -uo pipefail
K="$ASCENT_ROOT/tests/fixtures/kineto"
T="$K/nccl_parser_config__nccl_data.json.gz"
fail() { echo "FAIL: $*"; exit 1; }
events() { sqlite3 "$1" "SELECT count(*) FROM event" 2>/dev/null; }
# an import that must end by itself: a hang is a failure, not a stuck test
imp() { timeout 60 "$ASCENT" import "$@" -q; }

imp "$T" -o file.db 2>/dev/null || fail "import of the file"
n=$(events file.db)
[[ $n -gt 1000 ]] || fail "the file imported $n events"

mkfifo p.json
zcat "$T" >p.json &
imp p.json -o fifo.db 2>fifo.err || fail "import of a FIFO (exit $?): $(cat fifo.err)"
wait
[[ $(events fifo.db) == "$n" ]] || fail "the FIFO imported $(events fifo.db) events, the file $n"

cat "$T" >p.json &
imp p.json -o fifogz.db 2>fifogz.err || fail "import of a gzip FIFO (exit $?): $(cat fifogz.err)"
wait
[[ $(events fifogz.db) == "$n" ]] || fail "the gzip FIFO imported $(events fifogz.db) events"

mkdir dir && mkfifo dir/rank-0.json
zcat "$T" >dir/rank-0.json &
imp dir -o dir.db 2>dir.err || fail "import of a folder holding a FIFO (exit $?): $(cat dir.err)"
wait
[[ $(events dir.db) == "$n" ]] || fail "the folder's FIFO imported $(events dir.db) events"

# a bare array (torch_npu's trace_view.json) is read twice: a stream's first pass is kept to read again
A="$ASCENT_ROOT/tests/fixtures/ascend/trace_view_sample.json"
imp "$A" -o tv.db 2>/dev/null || fail "import of trace_view_sample.json"
cat "$A" >p.json &
imp p.json -o tvfifo.db 2>tv.err || fail "import of a bare array through a FIFO (exit $?): $(cat tv.err)"
wait
[[ $(events tvfifo.db) == "$(events tv.db)" && $(events tv.db) -gt 0 ]] || fail "the bare array's FIFO imported $(events tvfifo.db) events, the file $(events tv.db)"

zcat "$T" | imp /dev/stdin -o stdin.db 2>stdin.err || fail "zcat | import /dev/stdin: $(cat stdin.err)"
[[ $(events stdin.db) == "$n" ]] || fail "/dev/stdin imported $(events stdin.db) events"
imp /dev/stdin -o stdingz.db <"$T" 2>/dev/null && [[ $(events stdingz.db) == "$n" ]] ||
  fail "import /dev/stdin < T.json.gz"

# what an input is, said as it is
expect2() {   # expect2 TEXT ARGS...: exit 2 and TEXT in the message, no output file left
  local text=$1; shift
  rm -f out.db
  imp "$@" -o out.db 2>err.txt
  local rc=$?
  [[ $rc == 2 ]] || fail "import $*: exit $rc, not 2: $(cat err.txt)"
  grep -qF -- "$text" err.txt || fail "import $*: the message does not say '$text': $(cat err.txt)"
  [[ ! -e out.db ]] || fail "import $*: out.db was written"
}
mkfifo s.db
cat file.db >s.db &
expect2 "'s.db' is an SQLite database read as a stream (a pipe or FIFO)" s.db
wait
: >empty.db
expect2 "'empty.db' is named like an SQLite database (an Nsight Systems export or an Ascend profiler database) but is empty" empty.db
head -c 1000 /dev/zero >zeros.sqlite
expect2 "does not start with SQLite's header" zeros.sqlite
: >empty.json
expect2 "'empty.json': byte 0: the file is empty" empty.json
mkdir -p d2/x.json && zcat "$T" >d2/a.json
expect2 "'d2/x.json' is a folder named like a trace file" d2

# more inputs than any fixed table: 4,097 one-event traces, one rank each
mkdir many
for i in $(seq 0 4096); do
  echo "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":$i,\"dur\":1}]}" >"many/t$i.json"
done
imp many/t*.json -o many.db 2>many.err || fail "import of 4,097 inputs: $(tail -1 many.err)"
[[ $(sqlite3 many.db "SELECT count(*) FROM rank") == 4097 ]] || fail "4,097 inputs gave $(sqlite3 many.db "SELECT count(*) FROM rank") ranks"

# an SQLite input named with two leading slashes (the same file for the system)
zcat "$ASCENT_ROOT/tests/fixtures/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz" >nsys.sqlite
imp "/$PWD/nsys.sqlite" -o slash.db 2>slash.err || fail "import //PATH.sqlite: $(cat slash.err)"
imp nsys.sqlite -o plain.db 2>/dev/null || fail "import of the Nsight export"
[[ $(events slash.db) == "$(events plain.db)" ]] || fail "//PATH imported other events than PATH"
echo ok
