#!/usr/bin/env python3
"""nsys_expect.py — the expected result of `ascent import` on an Nsight Systems SQLite export,
computed with nothing but Python's sqlite3 on the export (an independent reader, not the importer's
SQL), compared with `ascent report --format json` (kernels, copies, memsets) and the profile itself
(runtime calls, which are ranges: its op_stat table; ranks, lanes).

usage: nsys_expect.py EXPORT.sqlite REPORT.json PROFILE.db
Exits 1 with the differences when they do not agree.

What it checks (docs/import.md): per name, the count and total ns of kernels (kind comm when the
name holds nccl/rccl), copies (named by copyKind, unified memory's by direction), memsets and CUDA
runtime calls; the number of steps (NVTX ranges named as the default --step-range says:
ProfilerStep#N, "step N", train_step_N); one rank per process, each with its pid; device lanes named
"gpu D stream S"; the launch links per kind (a device row whose correlationId some runtime call of
its process has).
"""
import json
import re
import sqlite3
import sys

COPY = ["Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD",
        "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP", "Memcpy HtoD (unified)",
        "Memcpy DtoH (unified)", "Memcpy DtoD (unified)"]
OK = "start >= 0 AND end >= start"
DEV = "deviceId BETWEEN 0 AND 4095 AND streamId BETWEEN 0 AND 16777215"


def main(src_path, rep_path, db_path):
    src = sqlite3.connect(src_path)
    out = sqlite3.connect(db_path)
    rep = json.load(open(rep_path))
    tables = {r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    q = lambda s: src.execute(s).fetchall()
    names = dict(q("SELECT id, value FROM StringIds"))
    want, bad = {}, []

    def add(name, kind, dur):
        c, t = want.get((name, kind), (0, 0))
        want[(name, kind)] = (c + 1, t + dur)

    pid = "(globalPid >> 24) & 16777215"
    pids = set()
    corr = {}   # pid → the runtime calls' correlationIds
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        for gt, name_id, d, c in q(f"SELECT globalTid, nameId, end - start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE {OK}"):
            p = (gt >> 24) & 0xffffff
            pids.add(p)
            corr.setdefault(p, set()).add(c)
            add(names[name_id], "range", d)
    links = {"kernels_linked": 0, "copies_linked": 0, "memsets_linked": 0, "collectives_linked": 0}
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        for p, dn, sn, d, c in q(f"SELECT {pid}, demangledName, shortName, end - start, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE {OK} AND {DEV}"):
            name = names.get(dn) or names.get(sn)
            kind = "comm" if "nccl" in name.lower() or "rccl" in name.lower() else "kernel"
            add(name, kind, d)
            pids.add(p)
            if c in corr.get(p, ()):
                links["collectives_linked" if kind == "comm" else "kernels_linked"] += 1
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        for p, k, d, c in q(f"SELECT {pid}, copyKind, end - start, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE {OK} AND {DEV}"):
            add(COPY[k] if 0 < k < len(COPY) else "Memcpy", "memcpy", d)
            pids.add(p)
            links["copies_linked"] += c in corr.get(p, ())
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for p, d, c in q(f"SELECT {pid}, end - start, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE {OK} AND {DEV}"):
            add("Memset", "memset", d)
            pids.add(p)
            links["memsets_linked"] += c in corr.get(p, ())
    # NVTX ranges that share a runtime call's name count with it; those named as steps are steps
    steps = 0
    step_re = re.compile(r"ProfilerStep#[0-9]+|(^|[^a-z])step[ _#]*[0-9]+$", re.I)
    if "NVTX_EVENTS" in tables:
        for text, tid, d in q(f"SELECT text, textId, end - start FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) AND {OK}"):
            name = names.get(tid) or text
            if name and step_re.search(name):
                steps += 1
            elif (name, "range") in want:
                add(name, "range", d)
    got_steps = sum(r["steps"] for r in rep["ranks"])
    if got_steps != steps:
        bad.append(f"steps: export {steps}, report {got_steps}")
    got = {(o["name"], o["kind"]): (o["instances"], o["total_ns"]) for o in rep["ops"]
           if o["kind"] in ("kernel", "memcpy", "memset", "comm")}
    # runtime calls are ranges, which the report's operators leave out: the profile's op_stat
    # (all ranks) has them
    for name, c, t in out.execute("SELECT s.value, o.count, o.total_ns FROM op_stat o JOIN string s ON s.id = o.name_id"
                                  " WHERE o.rank = -1 AND o.kind = 8"):
        if (name, "range") in want:
            got[(name, "range")] = (c, t)
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            bad.append(f"{k}: export {want.get(k)}, report {got.get(k)}")
    # one rank per process, with its pid
    rank_pids = sorted(r[0] for r in out.execute("SELECT pid FROM rank"))
    if rank_pids != sorted(pids):
        bad.append(f"rank pids {rank_pids}, processes {sorted(pids)}")
    # device lanes: "gpu D stream S" (and the GPU's name in parentheses)
    for (name,) in out.execute("SELECT t.name FROM thread t JOIN device_lane d ON d.rank = t.rank AND d.tid = t.tid"):
        if not name.startswith("gpu ") or name != name.strip() or " stream " not in name:
            bad.append(f"device lane named {name!r}")
    total = {k: sum(l[k] for l in rep["launch"]) for k in links}
    if total != links:
        bad.append(f"launch links {total}, export {links}")
    if bad:
        print("\n".join(bad[:40]), file=sys.stderr)
        sys.exit(1)
    kinds = {}
    for (n, k), (c, t) in want.items():
        kinds[k] = kinds.get(k, 0) + c
    print(f"{src_path}: {len(want)} names {kinds}, {steps} steps, {len(pids)} processes, links {links}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
