#!/usr/bin/env bash
# diag versions: fixture trees (--root) give compatible / known-incompatible verdicts with exit 0 / 1;
# the real machine reports its libraries and the JSON contract holds.
set -u
F="$ASCENT_ROOT/tests/fixtures/diag"
export ASCENT_VERSION_MATRIX="$ASCENT_ROOT/samples/version_matrix.json"
status() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(c["status"] for c in d["checks"] if c["name"]==sys.argv[2]) or "NONE")' "$1" "$2"; }
fail() { echo "FAIL: $*"; exit 1; }

"$ASCENT" diag versions --root "$F/root-ascend" --json >ok.json; rc=$?
[[ $rc -eq 0 ]] || fail "compatible ascend fixture exited $rc"
[[ $(status ok.json versions.matrix.torch_npu) == PASS ]] || fail "torch_npu not compatible"
[[ $(status ok.json versions.matrix.cann_driver) == PASS ]] || fail "cann/driver not compatible"

"$ASCENT" diag versions --root "$F/root-ascend-bad" --json >bad.json; rc=$?
[[ $rc -eq 1 ]] || fail "incompatible ascend fixture exited $rc, want 1"
[[ $(status bad.json versions.matrix.torch_npu) == FAIL ]] || fail "torch 2.2 with torch_npu 2.1.0.post10 not flagged"
[[ $(status bad.json versions.matrix.cann_driver) == FAIL ]] || fail "old driver not flagged"
grep -q 'COMPATIBILITY.en.md' bad.json || fail "the matrix row's source is not quoted"

"$ASCENT" diag versions --root "$F/root-nvidia" >nv.txt; rc=$?
[[ $rc -eq 0 ]] || fail "nvidia fixture exited $rc"
grep -q 'PASS versions.matrix.cuda_driver' nv.txt || fail "cuda/driver not compatible: $(cat nv.txt)"
"$ASCENT" diag versions --root "$F/root-nvidia-bad" >nvb.txt; rc=$?
[[ $rc -eq 1 ]] || fail "driver 470 with CUDA 12.2 exited $rc, want 1"
grep -q 'FAIL versions.matrix.cuda_driver: known incompatible' nvb.txt || fail "$(cat nvb.txt)"

"$ASCENT" diag versions --root /nonexistent-root >/dev/null 2>err.txt; rc=$?
[[ $rc -eq 2 ]] || fail "a missing --root exited $rc, want 2"
grep -q "is not a directory" err.txt || fail "unclear error: $(cat err.txt)"
echo '{"x": 1' >broken.json
"$ASCENT" diag versions --matrix broken.json >/dev/null 2>err.txt; rc=$?
[[ $rc -eq 2 ]] || fail "a broken matrix exited $rc, want 2"

# the real machine: library versions present, JSON contract
"$ASCENT" diag versions --json >real.json 2>/dev/null; rc=$?
[[ $rc -le 1 ]] || fail "real machine exited $rc"
python3 - real.json <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
names = {v["name"]: v for v in d["versions"]}
for k in ("glibc", "compiler", "openblas", "mpi", "onednn", "cjson", "ncurses", "kernel"):
    assert k in names and names[k]["version"], k
# finding 23: the SQLite library version, the one Python's sqlite3 module (same system library) sees
import sqlite3
assert names.get("sqlite", {}).get("version") == sqlite3.sqlite_version, (names.get("sqlite"), sqlite3.sqlite_version)
for c in d["checks"]:
    assert set(("name", "status", "message", "fix")) <= set(c), c
    assert c["name"] != "versions.sqlite" or c["status"] != "SKIP", c
    assert c["status"] in ("PASS", "WARN", "FAIL", "SKIP"), c
# the ISA the numerics ran with: oneDNN's dispatch and the CPU's extensions, read from /proc/cpuinfo
# independently here
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
isa = names["onednn_isa"]["version"]
want = "avx512_core_amx" if "amx_bf16" in flags else "avx512_core_bf16" if "avx512_bf16" in flags else \
       "avx512_core_vnni" if "avx512_vnni" in flags else "avx512_core" if "avx512f" in flags else None
if want:
    assert isa == want, (isa, want, sorted(f for f in flags if f.startswith(("avx", "amx"))))
cpu = names["cpu_isa"]["version"].split("+")
assert ("amx" in cpu) == ("amx_tile" in flags) and ("avx512_bf16" in cpu) == ("avx512_bf16" in flags), (cpu, flags)
assert ("avx2" in cpu) == ("avx2" in flags) and ("avx512_fp16" in cpu) == ("avx512_fp16" in flags), (cpu, flags)
PY
# capped: ONEDNN_MAX_CPU_ISA=AVX2 is what oneDNN then runs, and the row says it was capped
ONEDNN_MAX_CPU_ISA=AVX2 "$ASCENT" diag versions >cap.txt 2>/dev/null
grep -q "onednn_isa *avx2 *(capped by ONEDNN_MAX_CPU_ISA=AVX2)" cap.txt || fail "ISA cap not reported: $(grep isa cap.txt)"
echo ok
