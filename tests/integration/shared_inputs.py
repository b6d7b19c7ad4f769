"""shared_inputs.py MODE — `ascent import` over every real trace of the shared data folder (what
import_shared.sh and import_mutations.sh run; under `make check` the binary is sanitized).

MODE real:      each file alone (exit 0: every real file imports), then each file with the next of
                the list (two files into one profile: the pair that shares a group name "0" among
                them; exit 0 or a clean exit 2), then report and view;
                each file's report held to what its format's independent reader computes from the
                file itself (kineto_expect.py, nsys_expect.py, ascend_expect.py: per name, count and
                total ns of CPU operators, kernels, copies, memsets and collectives, the steps,
                duplicates included) — here for every shared file that tests/fixtures does not hold
                byte for byte; those are checked by import_kineto.sh, import_nsys_real.sh and
                import_ascend_real.sh.
MODE mutations: damaged copies of each file, made here: JSON cut short, bytes flipped, times and
                sizes made huge or negative, numbers made text; SQLite exports with times as text,
                INT64_MAX times and sizes, a column renamed, the file cut short, copy kinds past
                10, BLOB names.

Every import must end in exit 0 (the profile then reads with `report` and `view`) or exit 2 with
an error naming the input and no output left; anything else (a crash, a sanitizer report, exit 1
or 3, a hang past the timeout) fails. The data folder: $ASCENT_SHARED_DATA, else shared/data in
the checkout or beside it; none: the test is skipped.
"""
import filecmp, glob, gzip, os, random, shutil, sqlite3, subprocess, sys, tarfile

ASCENT = os.environ["ASCENT"]
ROOT = os.environ["ASCENT_ROOT"]
MODE = sys.argv[1]
SAN_MARKS = (b"AddressSanitizer", b"LeakSanitizer", b"runtime error:", b"UndefinedBehaviorSanitizer")


def data_dir():
    for d in (os.environ.get("ASCENT_SHARED_DATA"), os.path.join(ROOT, "shared", "data"),
              os.path.join(ROOT, "..", "shared", "data")):
        if d and os.path.isdir(os.path.join(d, "kineto")):
            return os.path.abspath(d)
    return None


SOURCE = {}   # input path -> the shared file it comes from (a tarball for what was unpacked)


def inputs(d):
    """(label, path) of every real trace: JSON as given, SQLite exports and Ascend folders unpacked."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, "kineto", "*.json.gz")) + glob.glob(os.path.join(d, "ascend", "*.json.gz"))):
        out.append((os.path.basename(f), f))
        SOURCE[f] = f
    for f in sorted(glob.glob(os.path.join(d, "nsys", "*.sqlite.gz"))):
        p = os.path.basename(f)[:-3]
        with gzip.open(f) as src, open(p, "wb") as dst:
            shutil.copyfileobj(src, dst)
        out.append((p, os.path.abspath(p)))
        SOURCE[os.path.abspath(p)] = f
    tars = {}
    for f in sorted(glob.glob(os.path.join(d, "ascend", "*.tar.gz"))):
        with tarfile.open(f) as t:
            t.extractall("unpacked")
            tars.update({n.split("/")[0]: f for n in t.getnames()})
    for f in sorted(glob.glob("unpacked/*/*_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db")):
        out.append((f.split("/")[1] + "/" + os.path.basename(f), os.path.abspath(f)))
        SOURCE[os.path.abspath(f)] = tars.get(f.split("/")[1])
    for f in sorted(glob.glob("unpacked/*/*_ascend_pt")):
        out.append((f.split("/")[1] + "/" + os.path.basename(f), os.path.abspath(f)))
        SOURCE[os.path.abspath(f)] = tars.get(f.split("/")[1])
    return out


def in_fixtures(src):
    """The shared file is in tests/fixtures byte for byte (its per-name check is that folder's test)."""
    fx = os.path.join(ROOT, "tests", "fixtures", os.path.basename(os.path.dirname(src)), os.path.basename(src))
    return os.path.isfile(fx) and filecmp.cmp(src, fx, shallow=False)


def expect_cmd(path):
    """The independent reader's command for one input (its report at report.json, profile out.db)."""
    x = os.path.join(ROOT, "tests", "integration")
    if path.endswith(".sqlite"):
        return ["python3", os.path.join(x, "nsys_expect.py"), path, "report.json", "out.db"]
    if path.endswith(".db"):
        return ["python3", os.path.join(x, "ascend_expect.py"), "report.json", "db", path]
    if os.path.isdir(path):
        dbs = sorted(glob.glob(os.path.join(path, "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler_*.db")))
        return ["python3", os.path.join(x, "ascend_expect.py"), "report.json"] + (
            ["db"] + dbs if dbs else ["text", os.path.join(path, "ASCEND_PROFILER_OUTPUT", "trace_view.json")])
    if "/ascend/" in path:
        return ["python3", os.path.join(x, "ascend_expect.py"), "report.json", "text", path]
    return ["python3", os.path.join(x, "kineto_expect.py"), "report.json", path]


checked = []


failures = []


def run(args, timeout=300):
    try:
        p = subprocess.run([ASCENT] + args, capture_output=True, timeout=timeout)
        return p.returncode, p.stderr + p.stdout
    except subprocess.TimeoutExpired:
        return -1, b"timed out (a hang)"


def check(label, paths, reads=True, expect=False, real=False):
    """Import paths into one profile; exit 0 (then report and view read it) or a clean exit 2. real:
    exit 0 only (a real file imports); expect: also the report agrees with the file's reader."""
    out = "out.db"
    if os.path.exists(out):
        os.remove(out)
    rc, err = run(["import"] + paths + ["-o", out, "-q"])
    bad = [m for m in SAN_MARKS if m in err]
    if bad or rc not in (0, 2):
        failures.append("%s: import exit %d%s: %s" % (label, rc, " (sanitizer)" if bad else "", err[-1500:].decode(errors="replace")))
        return rc
    if rc == 2 and (expect or real):
        failures.append("%s: import exit 2 on a real file: %s" % (label, err[-1500:].decode(errors="replace")))
        return rc
    if rc == 2:
        named = any(os.path.basename(p).encode() in err for p in paths) or b"nothing to import" in err
        if not named or os.path.exists(out) or glob.glob(out + ".tmp*") or b".tmp-" in err:
            failures.append("%s: exit 2 without naming the input, or output left: %s" % (label, err[-600:].decode(errors="replace")))
        return rc
    if not reads:
        return rc
    for cmd in (["report", out, "--format", "json"], ["view", out, "--dump", "timeline", "--size", "120x30"]):
        r2, e2 = run(cmd)
        if r2 != 0 or any(m in e2 for m in SAN_MARKS):
            failures.append("%s: %s exit %d: %s" % (label, cmd[0], r2, e2[-1500:].decode(errors="replace")))
    if expect:
        with open("report.json", "wb") as f:
            f.write(subprocess.run([ASCENT, "report", out, "--format", "json"], capture_output=True).stdout)
        p = subprocess.run(expect_cmd(paths[0]), capture_output=True, text=True)
        if p.returncode != 0:
            failures.append("%s: the report differs from the file: %s" % (label, (p.stdout + p.stderr)[-1500:]))
        checked.append("%s: %s" % (label, p.stdout.strip()[:200]))
    # device lanes: "gpu D …" or torch_npu's "device D …", never a name with spaces around it
    for (name,) in sqlite3.connect(out).execute("SELECT t.name FROM thread t JOIN device_lane d ON d.rank = t.rank"
                                                " AND d.tid = t.tid"):
        if name != name.strip() or not (name.startswith("gpu ") or name.startswith("device ")):
            failures.append("%s: device lane named %r" % (label, name))
    return rc


def json_text(path):
    with (gzip.open(path) if path.endswith(".gz") else open(path, "rb")) as f:
        return f.read()


def json_mutations(label, path, rnd):
    t = json_text(path)
    big = os.path.getsize(path) > 400000   # the large traces: fewer mutations (make check's time)
    muts = [("cut", t[: len(t) // 2])]
    flip = bytearray(t)
    for _ in range(3):
        i = rnd.randrange(len(flip))
        flip[i] = rnd.randrange(256)
    muts.append(("flip", bytes(flip)))
    # the first few times and durations huge, negative or text; sizes past int64; group ranks long
    for name, old, new in (("huge-ts", b'"ts": ', b'"ts": 9.0e15, "x": '), ("neg-dur", b'"dur": ', b'"dur": -5, "x": '),
                           ("text-ts", b'"ts": ', b'"ts": "0x10", "x": '),
                           ("huge-size", b'"In msg nelems": ', b'"In msg nelems": 9223372036854775807, "x": '),
                           ("base", b'"traceEvents"', b'"baseTimeNanoseconds": 9223372036854775807, "traceEvents"'),
                           ("ranks", b'"Process Group Ranks": ', b'"Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7, 8]", "x": ')):
        if old in t and (not big or name in ("huge-ts", "ranks")):
            muts.append((name, t.replace(old, new, 40)))
    for name, data in muts:
        p = "%s.%s.json" % (os.path.basename(path), name)
        with open(p, "wb") as f:
            f.write(data)
        check("%s [%s]" % (label, name), [p], reads=name in ("huge-ts", "huge-size", "base", "ranks"))
        os.remove(p)


SQL_MUTATIONS = {
    # table -> [(name, statements)], applied when the table and columns exist
    "nsys": [("text-times", ["UPDATE {T} SET start = 'abc' WHERE rowid % 7 = 1", "UPDATE {T} SET end = '1.5e30' WHERE rowid % 7 = 2"]),
             ("huge-times", ["UPDATE {T} SET start = 9223372036854775000, end = 9223372036854775807 WHERE rowid % 5 = 1"]),
             ("no-end", ["ALTER TABLE {T} RENAME COLUMN end TO en"]),
             ("copy-kinds", ["UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 11 + rowid % 3, bytes = 9223372036854775807"]),
             ("blob-names", ["UPDATE StringIds SET value = x'00ff' WHERE id % 3 = 0"])],
    "ascend": [("text-times", ["UPDATE {T} SET startNs = 'abc' WHERE rowid % 7 = 1", "UPDATE {T} SET startNs = '' WHERE rowid % 7 = 2",
                               "UPDATE {T} SET startNs = '0x10' WHERE rowid % 7 = 3", "UPDATE {T} SET endNs = 1.5e30 WHERE rowid % 7 = 4"]),
               ("huge-times", ["UPDATE {T} SET startNs = 9223372036854775000, endNs = 9223372036854775807 WHERE rowid % 5 = 1"]),
               ("no-end", ["ALTER TABLE {T} RENAME COLUMN endNs TO en"])],
}
TIMED = {"nsys": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "NVTX_EVENTS"],
         "ascend": ["TASK", "PYTORCH_API", "COMMUNICATION_OP", "CANN_API"]}


def sqlite_mutations(label, path, kind):
    size = os.path.getsize(path)
    p = os.path.basename(path) + ".cut"
    with open(path, "rb") as f, open(p, "wb") as g:
        g.write(f.read(size // 2))
    check("%s [cut]" % label, [p], reads=False)
    os.remove(p)
    db = sqlite3.connect(path)
    tables = [t for t in TIMED[kind] if db.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]]
    db.close()
    for name, stmts in SQL_MUTATIONS[kind]:
        p = "%s.%s.sqlite" % (os.path.basename(path), name)
        shutil.copy(path, p)
        db = sqlite3.connect(p)
        try:
            for s in stmts:
                for t in (tables if "{T}" in s else [None]):
                    db.execute(s.replace("{T}", t or ""))
            db.commit()
        except sqlite3.Error:
            db.close()
            os.remove(p)
            continue
        db.close()
        check("%s [%s]" % (label, name), [p], reads=name != "no-end")
        os.remove(p)


def main():
    d = data_dir()
    if not d:
        print("skip: no shared data folder (set ASCENT_SHARED_DATA)")
        return 77
    ins = inputs(d)
    if MODE == "real":
        for label, p in ins:
            src = SOURCE.get(p)
            check(label, [p], expect=bool(src) and not in_fixtures(src), real=True)
        files = [(l, p) for l, p in ins if not os.path.isdir(p)]
        for i, (label, p) in enumerate(files):   # each with the next: every file in two pairs
            l2, p2 = files[(i + 1) % len(files)]
            check("%s + %s" % (label, l2), [p, p2], reads=False)
        print("%d inputs, %d pairs; held here to their format's reader (the others by the fixtures' tests):" %
              (len(ins), len(files)))
        print("\n".join("  " + c for c in checked))
    else:
        rnd = random.Random(28)
        for label, p in ins:
            if os.path.isdir(p):
                continue
            if p.endswith(".json.gz") or p.endswith(".json"):
                json_mutations(label, p, rnd)
            elif p.endswith(".sqlite"):
                sqlite_mutations(label, p, "nsys")
            elif p.endswith(".db"):
                sqlite_mutations(label, p, "ascend")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


sys.exit(main())
