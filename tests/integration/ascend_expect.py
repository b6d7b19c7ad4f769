#!/usr/bin/env python3
"""ascend_expect.py — the expected result of `ascent import` on torch_npu's two exports, computed with
nothing but Python's json, gzip, decimal and sqlite3 modules (an independent reader, not the
importer's code), compared with `ascent report --format json`.

usage: ascend_expect.py REPORT.json (text|db) FILE...
  text: trace_view.json files (plain or .gz); db: ascend_pytorch_profiler_N.db files.
Prints the expected totals; exits 1 with the differences when the report does not agree.

What it checks, per name: the count and total ns of CPU operators, kernels, copies and collectives
(with their bytes), and the number of steps; every source event counted, duplicates included.
The mapping is docs/import.md's:
  text: processes by their process_name (the metadata may come after the events); "Overlap
    Analysis" not kept; "Ascend Hardware" tasks by name (MEMCPY_ASYNC: a copy), else by
    args."Task Type" (the table below; an unlisted type: a kernel); "HCCL" rows named hcom_*:
    collectives named by type (hcom_allReduce__586_0_1 → hcom_allReduce_), bytes = count × the
    size of data_type; on the host ProfilerStep#N is a step and cpu_op an operator. ts and dur are
    µs (ts a decimal string), exact to the ns.
  db: PYTORCH_API rows of type op are operators, ProfilerStep#N among them the steps (STEP_TIME
    rows for those steps are not read again); TASK rows with COMPUTE_TASK_INFO are kernels named by
    it; TASK rows of type MEMCPY_ASYNC without it are copies; COMMUNICATION_OP rows are collectives
    named by opType (by opName without its _N_N_N tail when opType is empty or N/A).
"""
import decimal
import gzip
import json
import re
import sqlite3
import sys

DTYPE = {"INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "FP16": 2, "BFP16": 2, "INT32": 4, "UINT32": 4,
         "FP32": 4, "INT64": 8, "UINT64": 8, "FP64": 8, "INT128": 16}
TASK_KIND = {t: "kernel" for t in ("AI_CORE", "AI_VECTOR_CORE", "AI_CPU", "MIX_AIC", "MIX_AIV", "DSA_SQE",
                                   "KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_AICPU", "Other")}
TASK_KIND.update({"PCIE_DMA_SQE": "memcpy", "SDMA_SQE": "memcpy"})
TASK_KIND.update({t: "range" for t in ("Notify Wait", "SDMA", "Write Value", "EVENT_RECORD_SQE", "EVENT_WAIT_SQE",
                                       "PLACE_HOLDER_SQE")})
STEP = re.compile(r"ProfilerStep#(\d+)")


def ns(v):
    return int((decimal.Decimal(str(v)) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def coll_type(op_name):
    m = re.fullmatch(r"(.+?)(_\d+){3}", op_name)
    return m.group(1) if m else op_name


def add(d, key, *vals):
    old = d.get(key, [0] * len(vals))
    d[key] = [a + b for a, b in zip(old, vals)]


def text(paths):
    ops, comm, steps = {}, {}, 0
    for p in paths:
        with (gzip.open if p.endswith(".gz") else open)(p, "rt") as f:
            ev = json.load(f, parse_float=decimal.Decimal)
        procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
        for e in ev:
            if e.get("ph") != "X" or "dur" not in e or "name" not in e:
                continue
            proc, name, dur = procs.get(e.get("pid")), e["name"], ns(e["dur"])
            if proc == "Overlap Analysis":
                continue
            if proc == "Ascend Hardware":
                kind = "memcpy" if name == "MEMCPY_ASYNC" else TASK_KIND.get(e.get("args", {}).get("Task Type"), "kernel")
                if kind != "range":
                    add(ops, (name, kind), 1, dur)
            elif proc == "HCCL":
                if name.startswith("hcom_"):
                    a = e.get("args", {})
                    add(comm, coll_type(name), 1, dur, int(a.get("count", 0)) * DTYPE.get(a.get("data_type"), 0))
            elif proc != "CANN":
                if STEP.fullmatch(name):
                    steps += 1
                elif e.get("cat") == "cpu_op":
                    add(ops, (name, "op"), 1, dur)
    return ops, comm, steps


def db(paths):
    ops, comm, steps = {}, {}, 0
    for p in paths:
        c = sqlite3.connect(f"file:{p}?immutable=1", uri=True)
        s = lambda i: c.execute("SELECT value FROM STRING_IDS WHERE id = ?", (i,)).fetchone()[0] if i is not None else None
        for name, start, end in c.execute(
                "SELECT n.value, CAST(p.startNs AS INTEGER), CAST(p.endNs AS INTEGER) FROM PYTORCH_API p "
                "JOIN STRING_IDS n ON n.id = p.name JOIN ENUM_API_TYPE t ON t.id = p.type WHERE t.name = 'op'"):
            if STEP.fullmatch(name):
                steps += 1
            else:
                add(ops, (name, "op"), 1, end - start)
        api_steps = {int(STEP.fullmatch(n).group(1)) for (n,) in c.execute(
            "SELECT n.value FROM PYTORCH_API p JOIN STRING_IDS n ON n.id = p.name") if STEP.fullmatch(n)}
        steps += sum(1 for (i,) in c.execute("SELECT id FROM STEP_TIME") if i not in api_steps)
        for name, start, end in c.execute("SELECT n.value, t.startNs, t.endNs FROM TASK t JOIN COMPUTE_TASK_INFO ci "
                                          "ON ci.globalTaskId = t.globalTaskId JOIN STRING_IDS n ON n.id = ci.name"):
            add(ops, (name, "kernel"), 1, end - start)
        for name, start, end in c.execute(
                "SELECT n.value, t.startNs, t.endNs FROM TASK t JOIN STRING_IDS n ON n.id = t.taskType "
                "WHERE t.globalTaskId NOT IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO) AND t.globalTaskId NOT IN "
                "(SELECT globalTaskId FROM COMMUNICATION_TASK_INFO) AND n.value = 'MEMCPY_ASYNC'"):
            add(ops, (name, "memcpy"), 1, end - start)
        for op_type, op_name, start, end, count, dtype in c.execute(
                "SELECT o.opType, o.opName, o.startNs, o.endNs, o.count, d.name FROM COMMUNICATION_OP o "
                "LEFT JOIN ENUM_HCCL_DATA_TYPE d ON d.id = o.dataType"):
            t = s(op_type)
            name = t if t and t != "N/A" else coll_type(s(op_name))
            add(comm, name, 1, end - start, int(count) * DTYPE.get(dtype, 0))
    return ops, comm, steps


def main():
    report, form, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    ops, comm, steps = (text if form == "text" else db)(paths)
    rep = json.load(open(report))
    got_ops = {(o["name"], o["kind"]): [o["instances"], o["total_ns"]] for o in rep["ops"]}
    got_comm = {}
    for c in rep["comm"]:
        add(got_comm, c["name"], c["count"], c["total_ns"], c["bytes"])
    got_steps = sum(r["steps"] for r in rep["ranks"])
    bad = []
    for k in sorted(set(ops) | set(got_ops)):
        if ops.get(k) != got_ops.get(k):
            bad.append(f"operator {k}: source {ops.get(k)}, report {got_ops.get(k)}")
    for k in sorted(set(comm) | set(got_comm)):
        if comm.get(k) != got_comm.get(k):
            bad.append(f"collective {k}: source {comm.get(k)}, report {got_comm.get(k)}")
    if steps != got_steps:
        bad.append(f"steps: source {steps}, report {got_steps}")
    kinds = {}
    for (_, k), (n, _) in ops.items():
        kinds[k] = kinds.get(k, 0) + n
    print(f"{form} {len(paths)} file(s): {kinds}, collectives {sum(v[0] for v in comm.values())}, steps {steps}")
    if bad:
        print("\n".join(bad[:40]))
        sys.exit(1)


main()
