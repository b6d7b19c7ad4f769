#!/usr/bin/env bash
# tests/integration/cluster_links.sh — the communication matrix and the advisor's link.slow on
# two-member collectives (docs/cluster.md "Reading a whole job"): a 16-rank Kineto job made as
# bench/bench_bigjob.c makes its jobs (rank r from the sampled rank r % 2 of tests/fixtures/kineto,
# 8 ranks a host, each rank's NCCL kernels in the two-rank process group of r and r xor 8, 4 MiB a
# call), with the link between ranks 5 and 13 slowed (their NCCL kernels 3 x as long). Checked:
# every matrix cell (calls, bytes, time, GB/s) against an independent computation from the source
# JSON (each pair's calls matched by their order in the group, transit = the earlier end - the later
# start), the host matrix as the cells' sums, the events left off the links; link.slow names the
# planted pair and no other, by bandwidth when the calls carry byte sizes and by transit time per
# call when they do not (and says so); the same job without the slowed link: link.slow quiet.
set -euo pipefail
D="$ASCENT_ROOT/tests/fixtures/kineto"
python3 - "$D" <<'PY'
import gzip, json, os, sys
src = [json.load(gzip.open("%s/trace_filter__sampled_rank-%d.json.gz" % (sys.argv[1], k))) for k in (0, 1)]
N, PER_HOST, SLOW = 16, 8, (5, 13)
def nccl(e):
    return e.get("cat") == "kernel" and "nccl" in e.get("name", "")
# each source rank's other events rendered once; its pid (the file name holds it)
rest = [",\n".join(json.dumps(e) for e in s["traceEvents"] if not nccl(e)) for s in src]
pids = [next(e["pid"] for e in s["traceEvents"] if e.get("cat") == "cpu_op") for s in src]
for job, sizes, slow in (("bw", True, SLOW), ("time", False, SLOW), ("none", True, ())):
    os.makedirs(job, exist_ok=True)
    for r in range(N):
        s = src[r % 2]
        peer = r ^ PER_HOST
        lo, hi = min(r, peer), max(r, peer)
        evs = []
        for e in s["traceEvents"]:
            if not nccl(e):
                continue
            e = dict(e)
            a = {"Process Group Name": "pp%d" % lo, "Process Group Description": "pipeline",
                 "Process Group Ranks": "[%d, %d]" % (lo, hi), "Group size": 2}
            if sizes:
                a.update({"In msg nelems": 4 << 20, "Out msg nelems": 4 << 20, "dtype": "Byte"})
            a.update(e.get("args", {}))
            e["args"] = a
            if r in slow:
                e["dur"] = e["dur"] * 3
            evs.append(json.dumps(e))
        info = {"backend": "nccl", "rank": r, "world_size": N, "pg_count": 1,
                "pg_config": [{"pg_name": "pp%d" % lo, "pg_desc": "pipeline", "pg_size": 2, "ranks": [lo, hi]}]}
        with open("%s/node%04d_%d.1682725897226.pt.trace.json" % (job, r // PER_HOST, pids[r % 2] + r), "w") as f:
            f.write('{"schemaVersion": 1, "distributedInfo": %s,\n"traceEvents": [\n%s,\n%s\n]}\n'
                    % (json.dumps(info), rest[r % 2], ",\n".join(evs)))
PY
for job in bw time none; do
  "$ASCENT" import $job/*.json -o $job.db >/dev/null
  "$ASCENT" report $job.db --format json > $job.json
  "$ASCENT" report $job.db --by matrix > $job.matrix.txt
  "$ASCENT" advise $job.db --format json > $job.advise.json
done
grep -q "collective" bw.matrix.txt
python3 - <<'PY'
import glob, json

def want_matrix(job):
    """From the source JSON only: each rank's NCCL kernels in its group, matched by order."""
    calls = {}
    for path in glob.glob(job + "/*.json"):
        doc = json.load(open(path))
        r = doc["distributedInfo"]["rank"]
        ks = sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e.get("name", "")),
                    key=lambda e: e["ts"])
        for i, e in enumerate(ks):
            a = e["args"]
            nbytes = a.get("In msg nelems", 0)   # dtype Byte: one byte an element
            start = round(e["ts"] * 1000)
            calls.setdefault((a["Process Group Name"], i), []).append((r, nbytes, start, start + round(e["dur"] * 1000)))
    cells = {}
    for key, g in calls.items():
        assert len(g) == 2, (key, g)
        (ra, ba, sa, ea), (rb, bb, sb, eb) = g
        t = max(0, min(ea, eb) - max(sa, sb))
        for s, d, b in ((ra, rb, ba), (rb, ra, bb)):
            c = cells.setdefault((s, d), dict(transfers=0, bytes=0, time_ns=0))
            c["transfers"] += 1
            c["bytes"] += b
            c["time_ns"] += t
    return cells, sum(len(g) for g in calls.values())

def rules(job):
    a = json.load(open(job + ".advise.json"))
    out = {f["rule"]: f for f in a.get("findings", [])}
    for f in a.get("rules", []) + a.get("checked", []):
        out.setdefault(f["rule"], f)
    return out

for job in ("bw", "time", "none"):
    js = json.load(open(job + ".json"))
    want, events = want_matrix(job)
    got = {(x["src"], x["dst"]): x for x in js["matrix"]}
    assert all(x["via"] == "collective" for x in js["matrix"]), "the job holds no point-to-point events"
    assert set(got) == set(want), (job, set(got) ^ set(want))
    for k, w in want.items():
        for f, v in w.items():
            assert got[k][f] == v, (job, k, f, got[k][f], v)
        gbs = w["bytes"] / w["time_ns"] if w["time_ns"] else 0
        assert abs(got[k]["gbs"] - gbs) <= 1e-9 * max(1, gbs), (job, k, got[k]["gbs"], gbs)
        assert got[k]["one_sided"] == 0
    hm = js["host_matrix"]
    for f in ("transfers", "bytes", "time_ns"):
        assert sum(x[f] for x in hm) == sum(w[f] for w in want.values()), (job, f)
    assert sum(w["transfers"] for w in want.values()) == events, "every NCCL kernel is on a link"
    r = rules(job)["link.slow"]
    if job == "none":
        assert r.get("state") == "ok", ("no link planted: link.slow must stay quiet", r)
        print("none: %d cells match; link.slow quiet: %s" % (len(want), r["note"]))
        continue
    assert "title" in r, ("link.slow must fire", r)
    slow = r["evidence"].split("; slow: ")[1]
    # the hosts from the file names (tensorboard_trace_handler's {host}_{pid}: node0000, node0001)
    assert slow == "rank 5 (node0000) <-> rank 13 (node0001)", ("exactly the planted pair, with its hosts", slow)
    assert "rank 5 " in r["title"] and "rank 13 " in r["title"], r["title"]
    if job == "time":
        assert all(x["bytes"] == 0 for x in js["matrix"])
        assert "judged by time" in r["evidence"] and "by transit time per call" in r["title"], r
    else:
        assert "judged by time" not in r["evidence"], r
    # the planted pair against the others: bandwidth, or mean transit per call, from the source
    def speed(a, b):
        w = want[(a, b)]
        return (w["bytes"] + want[(b, a)]["bytes"]) / w["time_ns"] if job == "bw" else w["time_ns"] / w["transfers"]
    pairs = [(a, b) for (a, b) in want if a < b and want[(a, b)]["time_ns"] > 0]
    others = sorted(speed(a, b) for a, b in pairs if (a, b) != (5, 13))
    print("%s: %d cells match; planted 5<->13 %.4g against the others %.4g..%.4g (%s); %s"
          % (job, len(want), speed(5, 13), others[0], others[-1], "GB/s" if job == "bw" else "ns/call", r["title"]))
PY
