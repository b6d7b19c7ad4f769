"""diff_advise_expect.py — the regressions `ascent diff A B --advise` should list (docs/diff.md),
computed here from per-name rows and the two sides' step sums, for tests/integration/diff_advise.sh.

expected(rows, sides, min_change, top) -> (verdict, [row dicts]) where rows is a list of
{kind, name, category, a_count, b_count, a_total_ns, b_total_ns, [a_device_ns, b_device_ns]} and
sides is {"a": {...}, "b": {...}} with step_rows, step_total_ns, free_ns, ranks, linked, unattributed
(the names of `ascent diff --format json`'s overview)."""
import math

# enum db_kind's order (ties are broken by it); -1: the steps' free time
KIND_NUM = {"free": -1, "op": 0, "comm": 1, "p2p": 2, "step": 3, "phase": 4, "data": 5, "io": 6, "checkpoint": 7,
            "range": 8, "microbatch": 9, "wait": 10, "kernel": 11, "memcpy": 12, "memset": 13}
# the kinds that do work; phases, ranges, micro-batches enclose them and steps are the overview
WORK = {"op", "comm", "p2p", "data", "io", "checkpoint", "wait", "kernel", "memcpy", "memset"}
PHASE = {"op": "computing", "kernel": "computing", "memcpy": "computing", "memset": "computing",
         "comm": "communication not overlapped", "wait": "communication not overlapped",
         "p2p": "communication not overlapped", "data": "free", "io": "free", "checkpoint": "free", "free": "free"}


def expected(rows, sides, min_change=0.01, top=10):
    a, b = sides["a"], sides["b"]
    steps = a["step_rows"] > 0 and b["step_rows"] > 0
    div = [float(s["step_rows"] if steps else max(s["ranks"], 1)) for s in (a, b)]
    mean = [s["step_total_ns"] / s["step_rows"] if s["step_rows"] else 0.0 for s in (a, b)]
    change = mean[1] - mean[0]
    if not steps:
        verdict = "no steps"
    elif change > 0 and change > min_change * mean[0]:
        verdict = "slower"
    elif change < 0 and -change > min_change * mean[0]:
        verdict = "faster"
    else:
        verdict = "unchanged"
    cand = [dict(r) for r in rows if r["kind"] in WORK]
    if steps:
        cand.append({"kind": "free", "name": "free (idle) time in steps", "category": "unchanged", "a_count": 0,
                     "b_count": 0, "a_total_ns": a["free_ns"], "b_total_ns": b["free_ns"]})
    links = a["linked"] > a["unattributed"] and b["linked"] > b["unattributed"]
    out = []
    for r in cand:
        pa, pb = r["a_total_ns"] / div[0], r["b_total_ns"] / div[1]
        d = pb - pa
        if d == 0 or (verdict == "slower" and d < 0):
            continue
        r["delta_per_step_ns"] = d
        r["share_of_step_change"] = d / change if verdict == "slower" else None
        r["phase"] = PHASE[r["kind"]]
        if r["kind"] == "p2p" and "recv" in r["name"].lower():
            r["phase"] = "bubble"
        if r["kind"] == "op":
            if not links:
                r["op_group"] = "cpu"
            else:
                dd = r.get("b_device_ns", 0) / div[1] - r.get("a_device_ns", 0) / div[0]
                r["op_group"] = "device" if dd >= 0.5 * d else "host"
        r["change"] = ("added" if r["a_count"] == 0 else
                       "more" if r["b_count"] / div[1] > r["a_count"] / div[0] else "slower")
        out.append(r)
    out.sort(key=lambda r: (-abs(r["delta_per_step_ns"]), KIND_NUM[r["kind"]], r["name"].encode()))
    return verdict, change, (out[:top] if top else out)


def cause_hint(r):
    """A phrase of the cause the advice gives a row that grew (docs/diff.md's table)."""
    k, ch = r["kind"], r["change"]
    if k in ("kernel", "memset"):
        return {"added": "new kernels", "more": "more launches", "slower": "same launches take longer"}[ch]
    if k == "memcpy":
        return "copies: data placement"
    if k == "p2p" and "recv" in r["name"].lower():
        return "pipeline receives"
    if k in ("comm", "p2p"):
        return {"added": "new collectives", "more": "more collectives", "slower": "slower collectives"}[ch]
    if k == "wait":
        return "waiting for communication"
    if k == "op":
        g = r["op_group"]
        if g == "cpu":
            return "a new operator" if ch == "added" else "host compute"
        return "device work grew" if g == "device" else "host overhead"
    return {"data": "data loading", "io": "file I/O", "checkpoint": "file I/O", "free": "idle time"}[k]


def check(got, verdict, change, want):
    """got: `ascent diff --advise --format json`'s document; raises AssertionError on a difference."""
    adv = got["advice"]
    assert adv["verdict"] == verdict, (adv, verdict)
    assert math.isclose(adv["step_change_ns"], change, rel_tol=1e-12, abs_tol=1e-6), (adv, change)
    regs = got["regressions"]
    assert len(regs) == len(want), ([(r["kind"], r["name"]) for r in regs], [(r["kind"], r["name"]) for r in want])
    for i, (g, w) in enumerate(zip(regs, want)):
        assert g["rank_order"] == i + 1, g
        for k in ("kind", "name", "category", "a_total_ns", "b_total_ns", "phase"):
            assert g[k] == w[k], (i, k, g, w)
        assert math.isclose(g["delta_per_step_ns"], w["delta_per_step_ns"], rel_tol=1e-12), (g, w)
        if w["share_of_step_change"] is None:
            assert g["share_of_step_change"] is None, g
        else:
            assert math.isclose(g["share_of_step_change"], w["share_of_step_change"], rel_tol=1e-9), (g, w)
        if w["delta_per_step_ns"] < 0:
            assert g["cause"] == "", g
        else:
            assert cause_hint(w) in g["cause"], (cause_hint(w), g)
            assert g["evidence"], g
    return regs
