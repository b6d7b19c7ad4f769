#!/usr/bin/env bash
# diag across hosts on a real 3-host cluster (scripts/cluster.sh: network namespaces, a bridge, Slurm
# with munge, Open MPI over TCP between hosts), brought up once and reused:
#   - up with node3's training interface at MTU 1500 (--host-mtu) while the others have 9000:
#     srun diag all FAILs net.mtu.hosts naming node3;
#   - node3 raised to 9000: srun -N 3 --ntasks-per-node 2 diag all passes, names every host, and its
#     pairwise matrix calls links inside a host shm and links between hosts tcp; comm --check passes;
#   - a fixture /usr/local bind-mounted on node3 only: versions.ranks FAILs naming node3;
#   - ASCENT_FAULT=delay on rank 4 (node3): diag comm names rank 4 with its host as the slow rank;
#   - mpirun --hostfile through the cluster's rsh agent reaches every host;
#   - `up` that fails (a slurmd that will not start) and `down` leave nothing behind.
# Needs root, network namespaces and slurm-wlm + munge; skips (77) with the reason otherwise. Cluster
# tests run one at a time (flock), each under its own cluster name, and the cluster goes down on exit.
set -u
source "$ASCENT_ROOT/tests/integration/cluster_common.inc"
source "$ASCENT_ROOT/tests/integration/diag_common.inc"   # healthy_clean
left() {   # what a cluster named $ASCENT_CLUSTER left behind
  ip netns list | grep "^$ASCENT_CLUSTER-"; ip -o link show | grep -o " $ASCENT_CLUSTER-[a-z0-9]*"
  [[ -e /run/ascent-cluster/$ASCENT_CLUSTER ]] && echo "/run/ascent-cluster/$ASCENT_CLUSTER"
  ps -eo pid=,args= | grep "/run/ascent-cluster/$ASCENT_CLUSTER/" | grep -v grep
}
# a failed up (a slurmd that will not start) removes everything it made
mkdir fakebin && printf '#!/bin/sh\necho "slurmd: refusing to start (test)" >&2\nexit 1\n' >fakebin/slurmd && chmod +x fakebin/slurmd
PATH="$PWD/fakebin:$PATH" "$CL" up 2 >failup.log 2>&1 && fail "up with a failing slurmd succeeded"
grep -q "up failed" failup.log || fail "failed up: $(cat failup.log)"
[[ -z $(left) ]] || fail "a failed up left: $(left)"

cluster_up 3 --mtu 9000 --host-mtu 3=1500
CLEAN=(env -u NCCL_SOCKET_IFNAME -u HCCL_SOCKET_IFNAME -u ASCENT_IFNAME -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS
       -u HCCL_EXEC_TIMEOUT -u HCCL_EVENT_TIMEOUT -u HCCL_CONNECT_TIMEOUT)
SRUN=(timeout 120 srun -N 3 --ntasks-per-node 2)
check() {   # FILE NAME -> "STATUS message"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=[x for x in d["checks"] if x["name"]==sys.argv[2]]; print(c[0]["status"], c[0]["message"]) if c else print("NONE")' "$1" "$2"
}

# 1. node3 at MTU 1500, the others at 9000
launch mtu.json mtu.err "${CLEAN[@]}" "${SRUN[@]}" "$ASCENT" diag all --no-comm --json; rc=$?
[[ $rc -eq 1 ]] || fail "an MTU mismatch must exit 1 (got $rc): $(tail -20 mtu.err)"
r=$(check mtu.json net.mtu.hosts)
[[ $r == FAIL* && $r == *"node3 (eth0) has MTU 1500"* && $r == *"2 host(s) have 9000 (node1, node2)"* ]] || fail "net.mtu.hosts: $r"
"$CL" exec 3 ip link set eth0 mtu 9000 || fail "cannot raise node3's MTU"

# 2. healthy: diag all with the comm benchmark across 3 hosts x 2 ranks
launch all.json all.err "${CLEAN[@]}" "${SRUN[@]}" "$ASCENT" diag all --json; rc=$?
[[ $rc -eq 0 ]] || fail "healthy cluster: diag all exited $rc: $(tail -20 all.err) $(python3 -c 'import json; print([c for c in json.load(open("all.json"))["checks"] if c["status"]=="FAIL"])' 2>&1)"
python3 - <<'PY' || exit 1
import json
d = json.load(open("all.json"))
c = {x["name"]: x for x in d["checks"]}
assert d["verdict"] != "FAIL", d["verdict"]
assert c["net.mtu.hosts"]["status"] == "PASS" and "3 hosts" in c["net.mtu.hosts"]["message"], c["net.mtu.hosts"]
assert c["versions.ranks"]["status"] == "PASS", c["versions.ranks"]
assert c["env.ranks"]["status"] == "PASS", c["env.ranks"]
assert "on node1" in c["env.launcher"]["message"], c["env.launcher"]
hosts = [r["host"] for r in d["matrix"]["ranks"]]
assert hosts == ["node1", "node1", "node2", "node2", "node3", "node3"], hosts
link = d["matrix"]["link"]
for i in range(6):
    for j in range(6):
        want = "self" if i == j else ("shm" if hosts[i] == hosts[j] else "tcp")
        assert link[i][j] == want, (i, j, link[i][j], want)
for n, x in c.items():
    if n.startswith("comm.") and n.endswith(".wrong"):
        assert x["status"] == "PASS", x
assert c["comm.connectivity"]["status"] == "PASS", c["comm.connectivity"]
PY
# the rank count per host comes from the host names when the launcher does not say (srun + PMIx)
python3 -c 'import json; d=json.load(open("all.json")); m=[c["message"] for c in d["checks"] if c["name"]=="env.threads"][0]; assert "x 2 ranks on this host" in m, m' \
  || fail "env.threads does not count 2 ranks per host"

# 3. a different CUDA toolkit on node3 only (a fixture tree over its /usr/local)
"$CL" exec 3 mount --bind "$ASCENT_ROOT/tests/fixtures/cluster/node3-usr-local" /usr/local || fail "bind mount on node3"
launch ver.json ver.err "${CLEAN[@]}" "${SRUN[@]}" "$ASCENT" diag all --no-comm --json; rc=$?
"$CL" exec 3 umount /usr/local
[[ $rc -eq 1 ]] || fail "a version differing on one host must exit 1 (got $rc): $(tail -20 ver.err)"
r=$(check ver.json versions.ranks)
[[ $r == FAIL* && $r == *"cuda: "* && $r == *"(node3) has 12.2.140"* ]] || fail "versions.ranks: $r"
[[ $r != *"(node1)"* && $r != *"(node2)"* ]] || fail "versions.ranks names healthy hosts: $r"

# 4. diag comm --check across hosts, rank 4 (on node3) delayed by 20 ms per send
ARGS=(--ops allreduce,allgather -b 8 -e 4K -f 8 --iters 2 --warmup 1 --matrix-bytes 64K --matrix-iters 10 --check --json)
# (measured again, at most 4 times, while the healthy ranks themselves were disturbed by the host's
# load: rank 5 shares node3 with rank 4, so its network links are its only evidence)
for try in 1 2 3 4; do
  launch slow.json slow.err "${CLEAN[@]}" ASCENT_FAULT=delay:rank=4,ms=20 "${SRUN[@]}" "$ASCENT" diag comm "${ARGS[@]}"; rc=$?
  [[ $rc -eq 0 ]] || fail "diag comm --check with a slow rank exited $rc: $(tail -20 slow.err)"
  healthy_clean --ranks slow.json 4 && break
  echo "slow.json: measurement $try of 4 disturbed"
done
r=$(check slow.json comm.slow_rank)
[[ $r == WARN* && $r == *"1 slow rank(s): rank 4 (node3)"* ]] || fail "comm.slow_rank: $r"
r=$(check slow.json comm.allreduce.wrong)
[[ $r == PASS* ]] || fail "comm.allreduce.wrong: $r"

# 5. mpirun --hostfile through the rsh agent: one rank per host, each on its own host
hf=$("$CL" hostfile)
timeout 60 mpirun --hostfile "$hf" -np 3 --map-by ppr:1:node sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' \
  2>mpirun.err | sort >mpirun.out || fail "mpirun --hostfile: $(cat mpirun.err)"
[[ $(cat mpirun.out | tr '\n' ' ') == "0 node1 1 node2 2 node3 " ]] || fail "mpirun ranks: $(cat mpirun.out)"
"$CL" down >down.log 2>&1 || fail "cluster down: $(cat down.log)"
[[ -z $(left) ]] || fail "down left: $(left)"
echo ok
