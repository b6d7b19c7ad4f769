#!/usr/bin/env bash
# tests/integration/cluster_analyses.sh — the whole job's analyses (docs/cluster.md "Reading a whole
# job"): `report --by spread|collective|matrix` and their JSON, each figure checked against an
# independent computation in Python from the profile's own rows (step_stat; the collective and
# point-to-point events on rank 0's clock), on ascent's own 4-rank runs and on imported Kineto rank
# traces; the advisor names a planted slow rank (ASCENT_FAULT delay) and a planted slow host.
# One machine has one host name: the host test places ranks on two hosts by the profile's rank.host
# column (what the analyses read), in a copy of the profile.
set -euo pipefail
source "$ASCENT_ROOT/tests/integration/dist_common.inc"
P=("${SMALL[@]}" --steps 5 --profile)
# a pipeline (point-to-point between stages) with data parallelism; rank 3 sleeps 20 ms before each
# send and collective
MPI+=(-x ASCENT_FAULT)
ASCENT_FAULT="delay:rank=3,ms=20" train 4 slow "${P[@]}" --dp 2 --pp 2 --schedule 1f1b --microbatches 4
# data parallelism over 4 ranks, ranks 2 and 3 (the second "host") slow; Open MPI's allreduce locked to
# its ring, which comm/ then records on each call ({"algo": "ring"}) and the matrix puts on ring links
MPI0=("${MPI[@]}")
MPI+=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)
ASCENT_FAULT="delay:rank=2,ms=20;delay:rank=3,ms=20" train 4 slowhost "${P[@]}" --dp 4
MPI=("${MPI0[@]}")
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE rank SET host = CASE WHEN rank < 2 THEN 'nodeA' ELSE 'nodeB' END\"); c.commit()" slowhost/trace.db
# the pipeline run with its ranks placed the same way: one slow rank of two on nodeB is no slow host
cp slow/trace.db onehost.db
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE rank SET host = CASE WHEN rank < 2 THEN 'nodeA' ELSE 'nodeB' END\"); c.commit()" onehost.db
"$ASCENT" advise onehost.db --format json > onehost.db.advise.json
D="$ASCENT_ROOT/tests/fixtures/kineto"
"$ASCENT" import "$D/trace_filter__sampled_rank-0.json.gz" "$D/trace_filter__sampled_rank-1.json.gz" -o kineto.db >/dev/null
for db in slow/trace.db slowhost/trace.db kineto.db; do
  "$ASCENT" report "$db" --format json > "$db.json"
  for w in spread collective matrix; do
    "$ASCENT" report "$db" --by $w > "$db.$w.txt"
    "$ASCENT" report "$db" --by $w --format csv > "$db.$w.csv"
  done
  "$ASCENT" advise "$db" --format json > "$db.advise.json"
done
grep -q "Step split over ranks" slow/trace.db.spread.txt
grep -q "Collectives per rank" slow/trace.db.collective.txt
grep -q "By host pair" slow/trace.db.matrix.txt
python3 - <<'PY'
import json, sqlite3, csv, statistics, re

def rows(db, sql):
    return sqlite3.connect(db).execute(sql).fetchall()

def shifts(db):
    r = rows(db, "SELECT rank, coalesce(t0_ns,0), coalesce(clock_offset_ns,0) FROM rank ORDER BY rank")
    t0 = r[0][1]
    return {k: a + b - t0 for k, a, b in r}

def calls(db, kind):
    sh = shifts(db)
    out = {}
    for rank, name, comm, seq, peer, nbytes, start, dur in rows(db,
            "SELECT e.rank, s.value, e.comm_id, e.seq, coalesce(e.peer,-1), coalesce(e.bytes,0), e.start_ns, e.dur_ns "
            "FROM event e JOIN string s ON s.id = e.name_id WHERE e.kind = %d AND e.comm_id IS NOT NULL "
            "AND e.seq IS NOT NULL" % kind):
        st = start + sh.get(rank, 0)
        out.setdefault((comm, seq), []).append(dict(rank=rank, name=name, peer=peer, bytes=nbytes, start=st, end=st + dur))
    return out

def check_spread(db, js):
    pp = dict(rows(db, "SELECT rank, pp_rank FROM rank"))
    parts = {"total": "total_ns", "computing": "computing_ns", "comm_not_overlapped": "comm_not_overlapped_ns",
             "overlapped": "overlapped_ns", "free": "free_ns", "bubble": "bubble_ns"}
    st = {}
    for r in sqlite3.connect(db).execute("SELECT * FROM step_stat").fetchall():
        pass
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    steps = {}
    for r in con.execute("SELECT * FROM step_stat ORDER BY step, rank"):
        steps.setdefault(r["step"], []).append(r)
    got = {(x["step"], x["stage"]): x for x in js["step_spread"]}
    n = 0
    for step, rs in steps.items():
        groups = {None: rs}
        stages = sorted({pp[r["rank"]] for r in rs if pp[r["rank"]] >= 0})
        if len(stages) >= 2:
            for s in stages:
                groups[s] = [r for r in rs if pp[r["rank"]] == s]
        for stage, g in groups.items():
            x = got[(step, stage)]
            assert x["ranks"] == len(g)
            for p, col in parts.items():
                v = [r[col] for r in g]
                med = statistics.median(v)
                want = dict(min_ns=min(v), max_ns=max(v), med_ns=int(med + 0.5),
                            min_rank=min(r["rank"] for r in g if r[col] == min(v)),
                            max_rank=min(r["rank"] for r in g if r[col] == max(v)))
                for k, w in want.items():
                    assert x[p][k] == w, (db, step, stage, p, k, x[p][k], w)
            n += 1
    assert n == len(js["step_spread"]), (n, len(js["step_spread"]))
    return n

def check_coll(db, js):
    size = dict(rows(db, "SELECT comm_id, max(size) FROM comm WHERE comm_id >= 0 GROUP BY comm_id"))
    per, kinds = {}, {}
    for (comm, seq), g in calls(db, 1).items():
        k = kinds.setdefault(g[0]["name"], dict(calls=0, partial=0, unmatched=0, events=0))
        k["events"] += len(g)
        if len(g) < 2:
            k["unmatched"] += len(g)
            continue
        k["calls"] += 1
        k["partial"] += size.get(comm, 0) > len(g)
        last = max(m["start"] for m in g)
        first = min(m["start"] for m in g)
        lastr = min(m["rank"] for m in g if m["start"] == last)
        transit = min(max(0, m["end"] - max(last, m["start"])) for m in g)
        for m in g:
            el = m["end"] - m["start"]
            r = per.setdefault((m["name"], m["rank"]), dict(calls=0, sync_ns=0, wait_ns=0, transit_ns=0, elapse_ns=0,
                                                           last=0, late_ns=0))
            r["calls"] += 1
            r["elapse_ns"] += el
            r["sync_ns"] += max(0, min(last, m["end"]) - m["start"])
            r["wait_ns"] += max(0, el - transit)
            r["transit_ns"] += transit
            r["last"] += m["rank"] == lastr
            r["late_ns"] += m["start"] - first
    got = {(x["name"], x["rank"]): x for x in js["collective_ranks"]}
    assert set(got) == set(per), (db, set(got) ^ set(per))
    for key, w in per.items():
        for f, v in w.items():
            assert got[key][f] == v, (db, key, f, got[key][f], v)
        s, t, wt = w["sync_ns"], w["transit_ns"], w["wait_ns"]
        assert abs(got[key]["sync_ratio"] - (s / (s + t) if s + t else 0)) < 1e-9
        assert abs(got[key]["wait_ratio"] - (wt / (wt + t) if wt + t else 0)) < 1e-9
    gk = {x["name"]: x for x in js["collectives"]}
    for name, w in kinds.items():
        for f, v in w.items():
            assert gk[name][f] == v, (db, name, f, gk[name][f], v)
    return len(per)

def check_matrix(db, js):
    pm = {(c, i): r for c, i, r in rows(db, "SELECT comm_id, rank_in_comm, rank FROM comm")}
    cells = {}
    def add(s, d, b, t, one=False, via="p2p"):
        c = cells.setdefault((via, s, d), dict(transfers=0, bytes=0, time_ns=0, one_sided=0, one_sided_bytes=0, one_sided_ns=0))
        if one:
            c["one_sided"] += 1; c["one_sided_bytes"] += b; c["one_sided_ns"] += t
        else:
            c["transfers"] += 1; c["bytes"] += b; c["time_ns"] += t
    groups = {}
    for (comm, seq), g in calls(db, 2).items():
        for m in g:
            low = m["name"].lower()
            side = "x" if low.startswith("sendrecv") else "r" if "recv" in low else "s"
            peer = pm.get((comm, m["peer"]), m["peer"])
            k = (min(m["rank"], peer), max(m["rank"], peer)) if side == "x" else \
                (peer, m["rank"]) if side == "r" else (m["rank"], peer)
            m["side"] = side
            groups.setdefault((comm, seq) + k, []).append(m)
    for key, g in groups.items():
        s, d = key[2], key[3]
        if len(g) != 2:
            for m in g:
                add(s, d, m["bytes"], m["end"] - m["start"], True)
            continue
        posted = max(m["start"] for m in g)
        if all(m["side"] == "x" for m in g) and g[0]["rank"] != g[1]["rank"]:
            t = max(0, max(m["end"] for m in g) - posted)
            add(g[0]["rank"], g[1]["rank"], g[0]["bytes"], t)
            add(g[1]["rank"], g[0]["rank"], g[1]["bytes"], t)
            continue
        snd = next((m for m in g if m["rank"] == s), g[0])
        rcv = g[1] if snd is g[0] else g[0]
        done = rcv["end"] if s != d and rcv["rank"] == d else max(m["end"] for m in g)
        add(s, d, snd["bytes"], max(0, done - posted))
    # two-member communicators' collectives: an exchange over the call's transit
    size = dict(rows(db, "SELECT comm_id, max(size) FROM comm WHERE comm_id >= 0 GROUP BY comm_id"))
    on_links = 0
    for (comm, seq), g in calls(db, 1).items():
        if len(g) != 2 or size.get(comm) != 2 or g[0]["rank"] == g[1]["rank"]:
            continue
        t = max(0, min(m["end"] for m in g) - max(m["start"] for m in g))
        add(g[0]["rank"], g[1]["rank"], g[0]["bytes"], t, via="collective")
        add(g[1]["rank"], g[0]["rank"], g[1]["bytes"], t, via="collective")
        on_links += 2
    # ring collectives (docs/cluster.md): every member of a 3+ member communicator made the call and each
    # event's argument says "algo": "ring" (the profiler's own files only); each member sends
    # phases * (n - 1) * bytes // n to the next member in the communicator's order over the call's transit
    ring = set()
    if not rows(db, "SELECT 1 FROM meta WHERE key = 'import_source'"):
        for rank, comm, seq, args in rows(db,
                "SELECT e.rank, e.comm_id, e.seq, g.args FROM arg g JOIN event e ON e.rank = g.rank AND "
                "e.start_ns = g.start_ns AND e.tid = g.tid AND e.kind = g.kind AND e.name_id = g.name_id AND "
                "e.dur_ns = g.dur_ns AND e.ord = g.ord WHERE g.kind = 1"):
            if json.loads(args).get("algo") == "ring":
                ring.add((comm, seq, rank))
    idx = {(c, r): i for (c, i), r in pm.items()}
    phases = {"allreduce": 2, "allgather": 1}
    rings = 0
    for (comm, seq), g in calls(db, 1).items():
        n = len(g)
        if n < 3 or size.get(comm) != n or len({m["rank"] for m in g}) != n or g[0]["name"] not in phases:
            continue
        if not all((comm, seq, m["rank"]) in ring for m in g):
            continue
        t = max(0, min(m["end"] for m in g) - max(m["start"] for m in g))
        for m in g:
            nxt = pm[(comm, (idx[(comm, m["rank"])] + 1) % n)]
            add(m["rank"], nxt, phases[m["name"]] * (n - 1) * m["bytes"] // n, t, via="ring")
        on_links += n
        rings += 1
    check_matrix.rings = rings
    got = {(x["via"], x["src"], x["dst"]): x for x in js["matrix"]}
    assert set(got) == set(cells), (db, set(got) ^ set(cells))
    for key, w in cells.items():
        for f, v in w.items():
            assert got[key][f] == v, (db, key, f, got[key][f], v)
        gbs = w["bytes"] / w["time_ns"] if w["time_ns"] else 0
        assert abs(got[key]["gbs"] - gbs) <= 1e-9 * max(1, gbs), (db, key, got[key]["gbs"], gbs)
    host = dict(rows(db, "SELECT rank, host FROM rank"))
    hc = {}
    for (via, s, d), w in cells.items():
        k = (via, host.get(s) or "?", host.get(d) or "?")
        h = hc.setdefault(k, dict(transfers=0, bytes=0, time_ns=0))
        for f in h:
            h[f] += w[f]
    gh = {(x["via"], x["src_host"], x["dst_host"]): x for x in js["host_matrix"]}
    assert set(gh) == set(hc), (set(gh), set(hc))
    for k, w in hc.items():
        for f, v in w.items():
            assert gh[k][f] == v, (db, k, f)
    ncoll = rows(db, "SELECT count(*) FROM event WHERE kind = 1 AND comm_id IS NOT NULL")[0][0]
    m = re.search(r"(\d+) collective event\(s\)", open(db + ".matrix.txt").read())
    assert m and int(m.group(1)) == ncoll - on_links, (db, m and m.group(1), ncoll, on_links)
    return len(cells)

def rule(db):
    a = json.load(open(db + ".advise.json"))
    fs = a.get("findings", a) if isinstance(a, dict) else a
    return {f["rule"]: f for f in fs}, a

for db in ("slow/trace.db", "slowhost/trace.db", "kineto.db"):
    js = json.load(open(db + ".json"))
    ns, nc, nm = check_spread(db, js), check_coll(db, js), check_matrix(db, js)
    # CSV: the per-rank collective rows and the matrix rows, as many as the JSON's
    assert len(list(csv.reader(open(db + ".collective.csv")))) == 1 + len(js["collective_ranks"])
    assert len(list(csv.reader(open(db + ".matrix.csv")))) == 1 + len(js["matrix"])
    print("%s: %d spread rows, %d (collective, rank) rows, %d matrix cells (%d ring calls) match the independent "
          "computation" % (db, ns, nc, nm, check_matrix.rings))

js = json.load(open("slowhost/trace.db.json"))
rc = {(x["src"], x["dst"]): x for x in js["matrix"] if x["via"] == "ring"}
assert set(rc) == {(0, 1), (1, 2), (2, 3), (3, 0)}, ("the dp ring 0 -> 1 -> 2 -> 3 -> 0", sorted(rc))
assert all(x["bytes"] > 0 and x["time_ns"] > 0 for x in rc.values()), rc
assert "ring" in open("slowhost/trace.db.matrix.txt").read()
print("slowhost ring links: " + ", ".join("%d->%d %.3f GB/s over %d calls" % (s, d, x["gbs"], x["transfers"])
                                          for (s, d), x in sorted(rc.items())))

js = json.load(open("slow/trace.db.json"))
assert any(x["transfers"] > 0 for x in js["matrix"]), "the pipeline's sends and receives not matched"
late = {}
for x in js["collective_ranks"]:
    late[x["rank"]] = late.get(x["rank"], 0) + x["last"]
assert max(late, key=late.get) == 3, ("rank 3 is planted slow: it should arrive last most", late)
k = json.load(open("kineto.db.json"))
assert k["collectives"] and all(x["partial"] == x["calls"] for x in k["collectives"]), \
    "two sampled ranks of 128: every matched call has members missing"
assert k["matrix"] == [], "the sampled ranks hold no point-to-point events"
print("planted slow rank 3 arrived last at %d of its collective calls" % late[3])
PY
# the advisor: the slow rank, the slow host (its ranks late at collectives), the slow link rule ran
python3 - <<'PY'
import json
def find(db):
    a = json.load(open(db + ".advise.json"))
    out = {}
    for key in ("findings", "checked", "rules"):
        for f in a.get(key, []) if isinstance(a, dict) else []:
            out.setdefault(f["rule"], f)
    return out, a
f, a = find("slow/trace.db")
assert "rank.slow" in f and "rank 3" in f["rank.slow"]["title"], (f.get("rank.slow"), list(f))
h, a = find("slowhost/trace.db")
assert "host.slow" in h and "nodeB" in h["host.slow"]["title"], (h.get("host.slow"), list(h))
# link.slow judges the dp ring's 4 links against their own median (named or not: no slow link is planted)
ls = h["link.slow"]
assert "4 ring link(s)" in ls.get("note", "") or "ring links per (rank, next rank)" in ls.get("evidence", ""), ls
o, a = find("onehost.db")
assert o["host.slow"].get("state") == "ok", ("one slow rank of a host's two is no slow host", o["host.slow"])
print("advisor:", f["rank.slow"]["title"], "|", h["host.slow"]["title"], "|", o["host.slow"]["note"])
# why: nodeB's ranks' lateness (summed rank start - first member's start over the collectives, / the
# rank's step time; from the report's JSON and step_stat). A slow host's ranks are late alike; one
# slow rank's host-mate is late only by the delay passed on (a few % of its step, more under load:
# the 5-point margin alone let host.slow fire there twice on a loaded machine); the rule asks the
# host's lower median to be >= 0.25 x its latest rank's.
import sqlite3
def shares(db):
    js = json.load(open(db + ".json"))
    span = dict(sqlite3.connect(db).execute("SELECT rank, sum(total_ns) FROM step_stat GROUP BY rank").fetchall())
    late = {}
    for x in js["collective_ranks"]:
        late[x["rank"]] = late.get(x["rank"], 0) + x["late_ns"]
    return sorted(late[r] / span[r] for r in (2, 3))   # nodeB: ranks 2 and 3
lo, hi = shares("slowhost/trace.db")
assert lo >= 0.25 * hi, ("both of nodeB's ranks slowed: late alike", lo, hi)
print("slowhost nodeB: ranks late %.1f%% and %.1f%% of their step time (alike: %.2f >= 0.25)" % (100 * lo, 100 * hi, lo / hi))
import shutil
shutil.copy("slow/trace.db.json", "onehost.db.json")
lo, hi = shares("onehost.db")
assert lo < 0.25 * hi, ("one slowed rank: its host-mate late only by the delay passed on", lo, hi)
print("onehost nodeB: ranks late %.1f%% and %.1f%% (%.2f < 0.25: rank 3's delay passed on)" % (100 * lo, 100 * hi, lo / hi))
PY
# the ranks view's heat map of the matrix (key m; docs/viewer.md): by host pair and by rank pair, on the
# pipeline run placed on two hosts (p2p and two-member collective links of unequal speed) and on the
# ring run; every cell's character from the report's JSON matrix (checked above against the events):
# a pair's links summed, GB/s = bytes / time, the median over the cells with a bandwidth, the
# character of median / its own on the heat strip's scale
for db in onehost.db slowhost/trace.db; do
  "$ASCENT" view "$db" --dump ranks-heat --size 120x30 > "$db.heat-hosts.txt"
  "$ASCENT" view "$db" --dump ranks-heat-ranks --size 120x30 > "$db.heat-ranks.txt"
done
python3 - <<'PY'
import json, sqlite3, statistics, re
AT, CH = [1.02, 1.05, 1.10, 1.20, 1.35, 1.50, 2.00], ".:-=+*#@"
def char(x):
    return CH[sum(1 for a in AT if x >= a)]
def grid(path, n):
    lines = open(path).read().split("\n")
    h = next(i for i, l in enumerate(lines) if re.match(r"^ +0", l) and re.match(r"^ +[0-9]+$", l))
    x0 = lines[h].index("0")
    nd = len(str(n - 1))
    rows = lines[h + nd: h + nd + n]
    return lines, [r[x0:x0 + n].ljust(n) for r in rows]
total = 0
for db in ("onehost.db", "slowhost/trace.db"):
    js = json.load(open(db + ".json"))
    host = dict(sqlite3.connect(db).execute("SELECT rank, coalesce(nullif(host, ''), '?') FROM rank").fetchall())
    for by in ("hosts", "ranks"):
        labels = sorted(set(host.values())) if by == "hosts" else sorted(host)
        at = {k: i for i, k in enumerate(labels)}
        key = (lambda r: at[host[r]]) if by == "hosts" else (lambda r: at[r])
        cells = {}
        for x in js["matrix"]:
            if not x["transfers"]:
                continue
            c = cells.setdefault((key(x["src"]), key(x["dst"])), [0, 0])
            c[0] += x["bytes"]; c[1] += x["time_ns"]
        gbs = {k: (b / t if b > 0 and t > 0 else 0) for k, (b, t) in cells.items()}
        med = statistics.median([g for g in gbs.values() if g > 0])
        lines, rows = grid("%s.heat-%s.txt" % (db, by), len(labels))
        m = re.search(r"median ([0-9.]+) GB/s", "\n".join(lines))
        assert m and abs(float(m.group(1)) - med) <= 0.0005 + 1e-9, (db, by, m and m.group(1), med)
        for i in range(len(labels)):
            for j in range(len(labels)):
                want = " " if (i, j) not in cells else char(med / gbs[(i, j)]) if gbs[(i, j)] > 0 else "?"
                assert rows[i][j] == want, (db, by, labels[i], labels[j], rows[i][j], want, rows)
                total += 1
        print("%s heat map by %s: %d cells, median %.3f GB/s: %s" % (db, by, len(cells), med, " | ".join(rows)))
print("heat map: %d grid positions match the report's matrix" % total)
PY
