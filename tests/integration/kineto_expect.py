#!/usr/bin/env python3
"""kineto_expect.py — the expected result of `ascent import` on PyTorch profiler traces, computed
with nothing but Python's json, gzip and decimal modules (an independent reader, not the importer's
code), compared with `ascent report --format json`.

usage: kineto_expect.py REPORT.json TRACE... [--ranks R...]
Exits 1 with the differences when they do not agree.

The mapping it checks (docs/import.md): complete events ("ph": "X") with a name and a duration;
device categories (kernel, gpu_*, MTIA's mtia_ccp_events) are kernels (collectives when the name holds nccl/rccl), copies
(gpu_memcpy) or memsets (gpu_memset); on the CPU, "ProfilerStep#N" is step N, cpu_op is an
operator and a user_annotation named gloo:* a collective (gloo's range around a CPU collective). Times are exact: µs with three decimals as integer ns. Every event counts, one
identical to another (same pid, tid, ts, kind, name, dur: two calls within one µs) too.
Memory per device: "[memory]" instants ("ph": "i") of each (rank, device) — device -1 the CPU
("Device Type" 0), else "Device Id" — their allocations (Bytes >= 0) and frees, and the peak and
final bytes in use (Total Allocated; PyTorch 1.8-1.10 wrote none: the running sum of Bytes on that
device in file order), the final one the latest record's (file order among equal times).
Launch links per kind (report's "launch": kernels, copies, memsets, collectives linked): a device
event whose "correlation" argument a runtime call (a category ending in "runtime", or "cuda_driver")
of its file also carries, HTA's rule; every fixture's flows link the same events.
"""
import decimal
import gzip
import json
import re
import sys

DEVICE_CATS = ("kernel",)
DTYPE = {"Float": 4, "float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8, "Short": 2,
         "Char": 1, "Byte": 1, "Bool": 1}


def ns(v):
    return int((decimal.Decimal(v) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        d = json.load(f, parse_float=decimal.Decimal)
    if isinstance(d, list):
        return {"traceEvents": d}
    return d


def kind_of(e):
    cat = e.get("cat", "")
    name = e["name"]
    cat = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Operator": "cpu_op",  # PyTorch 1.8-1.10
           "mtia_ccp_events": "kernel"}.get(cat, cat)  # MTIA's device work
    if cat == "kernel" or cat.startswith("gpu_") or cat.startswith("mtia_ccp"):
        if cat == "kernel":
            return "comm" if ("nccl" in name.lower() or "rccl" in name.lower()) else "kernel"
        if cat == "gpu_memcpy":
            return "memcpy"
        if cat == "gpu_memset":
            return "memset"
        return "range"
    if re.fullmatch(r"ProfilerStep#\d+", name):
        return "step"
    if cat == "user_annotation" and name.startswith("gloo:"):
        return "comm"
    return "op" if cat == "cpu_op" else "range"


def memory(rank, e, mem, sums):
    a = e.get("args", {})
    dev = -1 if int(a.get("Device Type", 1)) == 0 else int(a.get("Device Id", 0)) & 0xffff
    b = int(a["Bytes"])
    if "Total Allocated" in a:
        use = int(a["Total Allocated"])
    else:
        use = sums[(rank, dev)] = sums.get((rank, dev), 0) + b
    m = mem.setdefault((rank, dev), {"allocs": 0, "frees": 0, "peak": None, "last": None})
    m["allocs" if b >= 0 else "frees"] += 1
    m["peak"] = use if m["peak"] is None else max(m["peak"], use)
    t = ns(e["ts"])
    if m["last"] is None or t >= m["last"][0]:
        m["last"] = (t, use)


LINKED = {"kernel": "kernels_linked", "memcpy": "copies_linked", "memset": "memsets_linked", "comm": "collectives_linked"}


def expect(paths, ranks, mem, links):
    ops, comm, steps, rank_set, sums = {}, {}, [], set(), {}
    for i, p in enumerate(paths):
        d = load(p)
        rank = ranks[i] if ranks else d.get("distributedInfo", {}).get("rank", i)
        rank_set.add(rank)
        calls, device = set(), []
        for e in d["traceEvents"]:
            if isinstance(e, dict) and e.get("ph") == "i" and e.get("name") == "[memory]":
                memory(rank, e, mem, sums)
            if not isinstance(e, dict) or e.get("ph") != "X" or "dur" not in e or "name" not in e:
                continue
            k = kind_of(e)
            cat, corr = e.get("cat", ""), e.get("args", {}).get("correlation")
            if corr is not None and (cat.lower().endswith("runtime") or cat == "cuda_driver"):
                calls.add(corr)
            if k in LINKED and cat != "user_annotation":
                device.append((k, corr))
            if k == "step":
                steps.append((rank, int(e["name"].split("#")[1])))
            elif k in ("op", "kernel", "memcpy", "memset"):
                c = ops.setdefault((e["name"], k), [0, 0])
                c[0] += 1
                c[1] += ns(e["dur"])
            elif k == "comm":
                a = e.get("args", {})
                n = max(int(a.get("In msg nelems", 0)), int(a.get("Out msg nelems", 0)))
                c = comm.setdefault(e["name"], [0, 0, 0])
                c[0] += 1
                c[1] += ns(e["dur"])
                c[2] += n * DTYPE.get(a.get("dtype", ""), 0)
        for k, corr in device:
            links[LINKED[k]] += corr is not None and corr in calls
    return ops, comm, steps, rank_set


def main():
    args = sys.argv[1:]
    ranks = []
    if "--ranks" in args:
        i = args.index("--ranks")
        ranks = [int(x) for x in args[i + 1:]]
        args = args[:i]
    report, paths = args[0], args[1:]
    with open(report) as f:
        got = json.load(f)
    mem, links = {}, {v: 0 for v in LINKED.values()}
    ops, comm, steps, rank_set = expect(paths, ranks, mem, links)
    bad = []
    got_ops = {}
    for r in got["ops"]:
        got_ops[(r["name"], r["kind"])] = [r["instances"], r["total_ns"]]
    for k, v in ops.items():
        if got_ops.get(k) != v:
            bad.append(f"op {k}: expected {v}, report has {got_ops.get(k)}")
    for k in got_ops:
        if k not in ops:
            bad.append(f"op {k}: in the report, not in the trace")
    got_comm = {}
    for r in got["comm"]:
        c = got_comm.setdefault(r["name"], [0, 0, 0])
        c[0] += r["count"]
        c[1] += r["total_ns"]
        c[2] += r["bytes"]
    if got_comm != comm:
        bad.append(f"comm: expected {comm}, report has {got_comm}")
    got_steps = {(r["rank"], r["step"]) for r in got["steps"]}
    if got_steps != set(steps):
        bad.append(f"steps: expected {sorted(set(steps))}, report has {sorted(got_steps)}")
    if sum(r["steps"] for r in got["ranks"]) != len(steps):   # every step event, a repeated one too
        bad.append(f"steps: {len(steps)} step events, the report's ranks have {sum(r['steps'] for r in got['ranks'])}")
    got_ranks = {r["rank"] for r in got["ranks"]}
    if steps and got_ranks != rank_set:
        bad.append(f"ranks: expected {sorted(rank_set)}, report has {sorted(got_ranks)}")
    # memory: one row per (rank, device) (the importer's category is "other"), all of them
    got_mem = {}
    for r in got["mem"]:
        if r["category"] != "other" or (r["rank"], r["device"]) in got_mem:
            bad.append(f"memory row {r}: not one 'other' row per rank and device")
        got_mem[(r["rank"], r["device"])] = {"allocs": r["allocs"], "frees": r["frees"], "peak": r["peak_bytes"],
                                             "final": r["final_bytes"]}
    want_mem = {k: {"allocs": m["allocs"], "frees": m["frees"], "peak": m["peak"], "final": m["last"][1]}
                for k, m in mem.items()}
    if got_mem != want_mem:
        bad.append(f"memory per device: expected {want_mem}, report has {got_mem}")
    got_links = {k: sum(r[k] for r in got["launch"]) for k in links}
    if got_links != links:
        bad.append(f"launch links per kind: expected {links}, report has {got_links}")
    kinds = {}
    for (n, k), v in ops.items():
        kinds[k] = kinds.get(k, 0) + v[0]
    print(f"{len(paths)} file(s): {len(ops)} operator names {kinds}, {sum(v[0] for v in comm.values())} "
          f"collectives, {len(steps)} steps, ranks {sorted(rank_set)}, memory records per (rank, device) "
          f"{ {k: m['allocs'] + m['frees'] for k, m in sorted(mem.items())} }, links {links}")
    if bad:
        print("\n".join(bad[:30]))
        sys.exit(1)


if __name__ == "__main__":
    main()
