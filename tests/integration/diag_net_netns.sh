#!/usr/bin/env bash
# diag net against REAL interfaces: a network namespace with veth pairs of chosen MTU and state.
# Needs root and `ip netns add`; skips (77) with the reason otherwise.
set -u
fail() { echo "FAIL: $*"; cleanup; exit 1; }
NS="ascent-diag-$$"
cleanup() { ip netns del "$NS" 2>/dev/null; }
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root to create a network namespace"; exit 77; }
command -v ip >/dev/null || { echo "skip: no 'ip' command (iproute2)"; exit 77; }
ip netns add "$NS" 2>/dev/null || { echo "skip: 'ip netns add' is not permitted here"; exit 77; }
trap cleanup EXIT
in_ns() { ip netns exec "$NS" "$@"; }
in_ns ip link add tjumbo0 type veth peer name tjumbo1 || fail "cannot create veth"
in_ns ip link add tsmall0 type veth peer name tsmall1 || fail "cannot create veth"
in_ns ip link add tdown0 type veth peer name tdown1 || fail "cannot create veth"
in_ns ip link set tjumbo0 mtu 9000 && in_ns ip link set tjumbo1 mtu 9000
in_ns ip link set tsmall0 mtu 1500 && in_ns ip link set tsmall1 mtu 1500
for i in tjumbo0 tjumbo1 tsmall0 tsmall1; do in_ns ip link set "$i" up; done
in_ns ip link set tdown0 mtu 9000
status() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(c["status"] for c in d["checks"] if c["name"]==sys.argv[2]) or "NONE")' "$1" "$2"; }

env -u NCCL_SOCKET_IFNAME -u HCCL_SOCKET_IFNAME -u ASCENT_IFNAME ip netns exec "$NS" "$ASCENT" diag net --iface tjumbo0 --expect-mtu 9000 --json >a.json; rc=$?
[[ $rc -eq 0 ]] || fail "up, MTU 9000 interface: exit $rc"
[[ $(status a.json net.iface.tjumbo0) == PASS ]] || fail "tjumbo0 not PASS: $(cat a.json)"
python3 -c 'import json,sys; d=json.load(open("a.json")); i={x["name"]:x for x in d["interfaces"]}; assert i["tjumbo0"]["mtu"]==9000 and i["tjumbo0"]["state"]=="up" and i["tsmall0"]["mtu"]==1500 and i["tsmall0"]["roce_mtu"]==1024 and i["tjumbo0"]["roce_mtu"]==4096, i' || fail "interface table wrong"

ip netns exec "$NS" "$ASCENT" diag net --iface tsmall0 --expect-mtu 9000 --json >b.json; rc=$?
[[ $rc -eq 0 ]] || fail "a WARN must not fail the run (exit $rc)"
[[ $(status b.json net.iface.tsmall0) == WARN ]] || fail "MTU 1500 < 9000 not WARN"

ip netns exec "$NS" "$ASCENT" diag net --iface tdown0 --json >c.json; rc=$?
[[ $rc -eq 1 ]] || fail "a down training interface must exit 1 (got $rc)"
[[ $(status c.json net.iface.tdown0) == FAIL ]] || fail "tdown0 not FAIL"

NCCL_SOCKET_IFNAME='=tjumbo0,tsmall' ip netns exec "$NS" "$ASCENT" diag net --expect-mtu 4000 --json >d.json; rc=$?
[[ $(status d.json net.iface.tjumbo0) == PASS ]] || fail "NCCL_SOCKET_IFNAME =tjumbo0"
[[ $(status d.json net.iface.tsmall0) == WARN ]] || fail "NCCL_SOCKET_IFNAME prefix tsmall"
[[ $(status d.json net.iface.tjumbo1) == NONE ]] || fail "=tjumbo0 must not select tjumbo1"

HCCL_SOCKET_IFNAME=eth ip netns exec "$NS" "$ASCENT" diag net >e.txt; rc=$?
[[ $rc -eq 1 ]] || fail "a variable selecting nothing must exit 1 (got $rc)"
grep -q 'FAIL net.select.HCCL_SOCKET_IFNAME' e.txt || fail "$(cat e.txt)"
echo ok
