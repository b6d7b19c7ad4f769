#!/usr/bin/env bash
# scripts/cluster.sh — a real multi-host cluster on one machine, for testing ascent across hosts.
#
#   scripts/cluster.sh up N [--mtu M] [--host-mtu I=M]... [--cpus C] [--prolog FILE]
#   scripts/cluster.sh hostfile          print the path of an Open MPI hostfile (node1 ... nodeN)
#   scripts/cluster.sh env               print the exports that point Slurm and Open MPI at the cluster
#   scripts/cluster.sh exec I CMD...     run CMD inside host I (its network, host name and mounts)
#   scripts/cluster.sh status            hosts, addresses, MTUs, daemons
#   scripts/cluster.sh down              remove everything `up` made (also after a failed `up`)
#
# Run as root from anywhere. Each host nodeI is a network namespace with a veth into a bridge and an
# address on a private subnet (10.213.X.0/24, no default route: nothing leaves the machine), its own
# UTS namespace (host name nodeI) and mount namespace (its own /etc/hosts naming every host; bind
# mounts made with `exec I mount ...` are seen by everything on that host, and only there).
# The calling shell's namespace holds the bridge's address (the "head", .254), one munged and a
# slurmctld; every host runs a slurmd. Open MPI reaches the hosts through an rsh agent that enters a
# host's namespaces (`env` prints OMPI_MCA_plm_rsh_agent; the agent is also the default for srun-less
# mpirun when /etc/slurm/slurm.conf is ours, see below).
#
# Instances: ASCENT_CLUSTER=NAME (default "ascent"; up to 10 of [a-z0-9]) names the namespaces
# (NAME-node1...), the bridge (NAME-br), the state directory (/run/ascent-cluster/NAME) and picks the
# subnet and the slurmctld port, so several clusters can exist at once. When /etc/slurm/slurm.conf does
# not exist, `up` links it to this cluster's configuration (so plain `srun`, `sbatch`, `sinfo` work
# from the calling shell) and `down` removes that link; otherwise `eval "$(scripts/cluster.sh env)"`.
set -euo pipefail

NAME=${ASCENT_CLUSTER:-ascent}
[[ $NAME =~ ^[a-z][a-z0-9]{0,9}$ ]] || { echo "cluster: ASCENT_CLUSTER='$NAME': use 1-10 of [a-z0-9], starting with a letter" >&2; exit 2; }
STATE=/run/ascent-cluster/$NAME
BR=$NAME-br
NSPFX=$NAME-node
ETC_CONF=/etc/slurm/slurm.conf

die() { echo "cluster: $*" >&2; exit 1; }
usage() { sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

need_root() { [[ $(id -u) -eq 0 ]] || die "run as root (network namespaces, bridges and slurmd need it)"; }

# The subnet's third octet and the slurmctld port come from the instance name (checked free in up).
name_hash() { printf '%s' "$NAME" | cksum | cut -d' ' -f1; }
octet() { echo $(( $(name_hash) % 200 + 20 )); }
ctld_port() { echo $(( 17000 + $(name_hash) % 1000 )); }
addr_of() { echo "10.213.$(octet).$1"; }   # host I (1..N); the head is .254

nhosts() { cat "$STATE/nhosts" 2>/dev/null || echo 0; }

# Every process of host I descends from its anchor (a `sleep` holding the host's namespaces).
anchor_pid() {
	local p
	p=$(cat "$STATE/anchor-$1.pid" 2>/dev/null) || return 1
	[[ -d /proc/$p ]] || return 1
	echo "$p"
}

host_exec() {
	local i=$1; shift
	local p
	p=$(anchor_pid "$i") || die "host node$i is not up (no anchor process); run 'scripts/cluster.sh up N' first"
	exec nsenter -t "$p" --net --uts --mount --wd="$PWD" -- "$@"
}

in_host() { ( host_exec "$@" ); }   # I CMD...: host_exec without replacing this shell

write_slurm_conf() {
	local n=$1 cpus=$2 prolog=$3 head
	head=$(hostname -s)
	cat >"$STATE/slurm.conf" <<EOF
# written by scripts/cluster.sh up for the test cluster '$NAME'
ClusterName=$NAME
SlurmctldHost=$head($(addr_of 254))
SlurmctldPort=$(ctld_port)
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/local/munge.sock
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/local/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MailProg=/bin/true
MpiDefault=pmix
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=30
MessageTimeout=20
EOF
	if [[ -n $prolog ]]; then   # runs on every host of a job when the allocation is made
		printf 'Prolog=%s\nPrologFlags=Alloc\n' "$prolog" >>"$STATE/slurm.conf"
	fi
	local i
	for ((i = 1; i <= n; i++)); do   # explicit addresses: the head does not resolve the host names
		echo "NodeName=node$i NodeAddr=$(addr_of "$i") CPUs=$cpus State=UNKNOWN"
	done >>"$STATE/slurm.conf"
	echo "PartitionName=hosts Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP" >>"$STATE/slurm.conf"
	echo "PMIxCliTmpDirBase=$STATE/local/pmix" >"$STATE/mpi.conf"
}

write_agent() {
	# Open MPI's rsh agent: "AGENT [opts] HOST CMD..." → CMD through a shell inside HOST.
	cat >"$STATE/bin/rsh" <<EOF
#!/usr/bin/env bash
# Open MPI rsh agent for the test cluster '$NAME': enters host nodeI's namespaces and runs the command
# line through a shell there, the way ssh would.
while [[ \$# -gt 0 && \$1 == -* ]]; do shift; done
host=\${1:?usage: rsh HOST CMD...}; shift
i=\${host#node}
[[ \$i =~ ^[0-9]+\$ ]] || { echo "rsh: '\$host' is not a host of the test cluster '$NAME' (node1...)" >&2; exit 255; }
p=\$(cat "$STATE/anchor-\$i.pid" 2>/dev/null) && [[ -d /proc/\$p ]] || { echo "rsh: host \$host is not up" >&2; exit 255; }
exec nsenter -t "\$p" --net --uts --mount --wd="\$PWD" -- /bin/sh -c "\$*"
EOF
	chmod 755 "$STATE/bin/rsh"
}

cmd_env() {
	[[ -f $STATE/slurm.conf ]] || die "cluster '$NAME' is not up"
	echo "export SLURM_CONF=$STATE/slurm.conf"
	echo "export OMPI_MCA_plm_rsh_agent=$STATE/bin/rsh"
	echo "export OMPI_MCA_orte_keep_fqdn_hostnames=1"
}

cmd_down() {
	need_root
	local i p ns
	# processes: everything in a host's network namespace (slurmd, steps, tasks, orted, anchors)
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NSPFX[0-9]+$" || true); do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
	done
	for f in "$STATE"/slurmctld.pid "$STATE"/local/munged.pid; do
		p=$(cat "$f" 2>/dev/null) || continue
		[[ $p =~ ^[0-9]+$ ]] && kill -TERM "$p" 2>/dev/null || true
	done
	for ((k = 0; k < 20; k++)); do
		local left=0
		for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NSPFX[0-9]+$" || true); do
			[[ -n $(ip netns pids "$ns" 2>/dev/null) ]] && left=1
		done
		for f in "$STATE"/slurmctld.pid "$STATE"/local/munged.pid; do
			p=$(cat "$f" 2>/dev/null) || continue
			[[ $p =~ ^[0-9]+$ && -d /proc/$p ]] && left=1
		done
		[[ $left -eq 0 ]] && break
		sleep 0.25
	done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NSPFX[0-9]+$" || true); do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
	done
	for f in "$STATE"/slurmctld.pid "$STATE"/local/munged.pid; do
		p=$(cat "$f" 2>/dev/null) || continue
		[[ $p =~ ^[0-9]+$ && -d /proc/$p ]] && kill -KILL "$p" 2>/dev/null || true
	done
	# network
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NSPFX[0-9]+$" || true); do
		ip netns del "$ns" 2>/dev/null || true
		rm -rf "/etc/netns/$ns"
	done
	for i in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$NAME-v[0-9]+$" || true); do
		ip link del "$i" 2>/dev/null || true
	done
	ip link del "$BR" 2>/dev/null || true
	rmdir /etc/netns 2>/dev/null || true
	# the /etc/slurm/slurm.conf link, when it is ours
	if [[ -L $ETC_CONF && $(readlink "$ETC_CONF") == "$STATE/slurm.conf" ]]; then rm -f "$ETC_CONF"; fi
	rm -rf "$STATE"
	rmdir /run/ascent-cluster 2>/dev/null || true
	return 0
}

# A failed up shows the daemons' last log lines, then removes everything it made.
up_failed() {
	local f
	for f in "$STATE"/log/*.log; do
		[[ -s $f ]] && { echo "--- $f" >&2; tail -5 "$f" >&2; }
	done
	echo "cluster: up failed (exit $1); removing what was made" >&2
	cmd_down
}

cmd_up() {
	need_root
	local n=${1:-}
	[[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 64 ]] || die "up N: N hosts, 1..64 (got '${n}')"
	shift
	local mtu=9000 cpus=4 prolog=""
	declare -A hmtu=()
	while [[ $# -gt 0 ]]; do
		case $1 in
		--mtu) [[ ${2:-} =~ ^[0-9]+$ && $2 -ge 1280 && $2 -le 65535 ]] || die "--mtu M: 1280..65535 (got '${2:-}')"
		       mtu=$2; shift 2 ;;
		--host-mtu) [[ ${2:-} =~ ^([0-9]+)=([0-9]+)$ ]] || die "--host-mtu I=M (got '${2:-}')"
		       local hi=${BASH_REMATCH[1]} hm=${BASH_REMATCH[2]}
		       [[ $hi -ge 1 && $hi -le $n ]] || die "--host-mtu $2: host $hi is not in 1..$n"
		       [[ $hm -ge 1280 && $hm -le 65535 ]] || die "--host-mtu $2: MTU 1280..65535"
		       hmtu[$hi]=$hm; shift 2 ;;
		--cpus) [[ ${2:-} =~ ^[0-9]+$ && $2 -ge 1 ]] || die "--cpus C: CPUs Slurm gives each host (got '${2:-}')"
		       cpus=$2; shift 2 ;;
		--prolog) [[ -n ${2:-} && -x $2 ]] || die "--prolog FILE: an executable Slurm prolog (got '${2:-}')"
		       prolog=$(realpath "$2"); shift 2 ;;
		*) die "up: unknown option '$1' (up N [--mtu M] [--host-mtu I=M]... [--cpus C] [--prolog FILE])" ;;
		esac
	done
	for c in ip nsenter unshare munged slurmctld slurmd srun sinfo; do
		command -v "$c" >/dev/null || die "'$c' is missing: run 'make deps' (iproute2, util-linux, munge, slurm-wlm)"
	done
	[[ -e $STATE ]] && die "cluster '$NAME' is already up ($STATE exists): 'scripts/cluster.sh down' first"
	local oct port
	oct=$(octet); port=$(ctld_port)
	if ip -o -4 addr show 2>/dev/null | grep -q " 10\.213\.$oct\."; then
		die "subnet 10.213.$oct.0/24 is in use on this machine: pick another ASCENT_CLUSTER name"
	fi
	if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
		die "port $port (slurmctld of '$NAME') is in use: pick another ASCENT_CLUSTER name"
	fi
	# from here on, a failure removes whatever was made
	UP_DONE=0
	trap 'rc=$?; if [[ $UP_DONE != 1 ]]; then up_failed $rc; fi' EXIT
	local t0=$SECONDS
	mkdir -p "$STATE"/{bin,log,local,hosts,slurmctld}
	echo "$n" >"$STATE/nhosts"
	chmod 700 "$STATE/local" "$STATE/hosts"

	# bridge on the head, no forwarding, no default route anywhere: traffic stays among these hosts
	ip link add "$BR" type bridge
	ip link set "$BR" mtu "$mtu"
	ip addr add "$(addr_of 254)/24" dev "$BR"
	ip link set "$BR" up

	mkdir -p /etc/netns
	local i ns hosts
	hosts=$(printf '127.0.0.1 localhost\n%s %s\n' "$(addr_of 254)" "$(hostname -s)")
	for ((i = 1; i <= n; i++)); do hosts+=$(printf '\n%s node%d' "$(addr_of "$i")" "$i"); done
	for ((i = 1; i <= n; i++)); do
		ns=$NSPFX$i
		ip netns add "$ns"
		mkdir -p "/etc/netns/$ns"
		printf '%s\n' "$hosts" >"/etc/netns/$ns/hosts"
		echo "node$i" >"/etc/netns/$ns/hostname"
		ip link add "$NAME-v$i" type veth peer name eth0 netns "$ns"
		ip link set "$NAME-v$i" mtu "$mtu" master "$BR" up
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 mtu "${hmtu[$i]:-$mtu}"
		ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
		ip -n "$ns" link set eth0 up
		# the anchor: its mount namespace (ip netns exec's: this host's /sys and /etc/hosts) and a new UTS
		# namespace with the host name; everything on the host is entered from it. Its mounts: slurmd's
		# cgroup probe finds an empty private hierarchy (proctrack/linuxproc uses none), and
		# $STATE/local is this host's own directory (hosts/nodeI): its munged's socket (a munged per
		# host, as on real hosts: one munged rejects a second host's decode of a credential as a replay),
		# slurmd's spool and the PMIx client directories (named by job step only).
		mkdir -p "$STATE/hosts/node$i/slurmd" "$STATE/hosts/node$i/pmix"
		chmod 700 "$STATE/hosts/node$i"
		setsid ip netns exec "$ns" unshare --uts -- sh -c "hostname node$i &&
			mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd &&
			mount -t cgroup -o none,name=$NAME-slurm cgroup /sys/fs/cgroup/systemd &&
			mount --bind $STATE/hosts/node$i $STATE/local && exec sleep infinity" </dev/null >/dev/null 2>&1 &
		echo $! >"$STATE/anchor-$i.pid"
	done
	for ((i = 1; i <= n; i++)); do
		local k
		for ((k = 0; k < 100; k++)); do
			[[ $(cat "/proc/$(cat "$STATE/anchor-$i.pid")/comm" 2>/dev/null) == sleep ]] && break
			sleep 0.05
		done
		[[ $(nsenter -t "$(cat "$STATE/anchor-$i.pid")" --uts hostname) == "node$i" ]] || die "host node$i did not start"
	done

	# munge (own key and socket) and Slurm
	mungekey -c -k "$STATE/munge.key" 2>/dev/null || dd if=/dev/urandom of="$STATE/munge.key" bs=1024 count=1 status=none
	chmod 400 "$STATE/munge.key"
	start_munged() {   # HOST-LABEL [in_host I]: $STATE/local is the host's own directory there
		local label=$1; shift
		"$@" munged -f --socket="$STATE/local/munge.sock" --key-file="$STATE/munge.key" \
			--pid-file="$STATE/local/munged.pid" --log-file="$STATE/log/munged-$label.log" \
			--seed-file="$STATE/local/munge.seed" || die "munged on $label did not start (see $STATE/log/munged-$label.log)"
	}
	start_munged head
	for ((i = 1; i <= n; i++)); do start_munged "node$i" in_host "$i"; done
	write_slurm_conf "$n" "$cpus" "$prolog"
	write_agent
	awk -v c="$cpus" '/^NodeName=/{sub(/NodeName=/,""); print $1 " slots=" c}' "$STATE/slurm.conf" >"$STATE/hostfile"
	slurmctld -f "$STATE/slurm.conf" -i || die "slurmctld did not start (see $STATE/log/slurmctld.log)"
	for ((i = 1; i <= n; i++)); do
		in_host "$i" slurmd -f "$STATE/slurm.conf" -N "node$i" || die "slurmd on node$i did not start (see $STATE/log/slurmd-node$i.log)"
	done
	if [[ ! -e $ETC_CONF && ! -L $ETC_CONF && -d /etc/slurm ]]; then
		ln -s "$STATE/slurm.conf" "$ETC_CONF"
	fi
	# ready when every host is idle
	local idle=0
	while ((SECONDS - t0 < 30)); do
		idle=$(SLURM_CONF=$STATE/slurm.conf sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$' || true)
		[[ $idle -eq $n ]] && break
		sleep 0.3
	done
	[[ $idle -eq $n ]] || die "only $idle of $n slurmd registered idle within 30 s (see $STATE/log/)"
	UP_DONE=1
	echo "cluster '$NAME': $n hosts node1..node$n on 10.213.$oct.0/24 (head $(addr_of 254)), slurmctld port $port, up in $((SECONDS - t0)) s"
	if [[ -L $ETC_CONF && $(readlink "$ETC_CONF") == "$STATE/slurm.conf" ]]; then
		echo "  srun/sbatch/sinfo use it ($ETC_CONF links to $STATE/slurm.conf)"
	else
		echo "  $ETC_CONF is someone else's: eval \"\$(scripts/cluster.sh env)\" to use this cluster"
	fi
	echo "  mpirun: OMPI_MCA_plm_rsh_agent=$STATE/bin/rsh mpirun --hostfile $STATE/hostfile ..."
}

cmd_status() {
	[[ -d $STATE ]] || die "cluster '$NAME' is not up"
	local n i
	n=$(nhosts)
	for ((i = 1; i <= n; i++)); do
		local p
		p=$(anchor_pid "$i") || { echo "node$i: DOWN (no anchor)"; continue; }
		echo "node$i: $(nsenter -t "$p" --net ip -o -4 addr show dev eth0 | awk '{print $4}')" \
			"$(nsenter -t "$p" --net ip -o link show dev eth0 | grep -o 'mtu [0-9]*\|state [A-Z]*' | tr '\n' ' ')"
	done
	SLURM_CONF=$STATE/slurm.conf sinfo -N
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
hostfile) [[ -f $STATE/hostfile ]] || die "cluster '$NAME' is not up"; echo "$STATE/hostfile" ;;
env) cmd_env ;;
exec) shift; [[ ${1:-} =~ ^[0-9]+$ && $# -ge 2 ]] || die "exec I CMD...: a host number and a command"
      host_exec "$@" ;;
status) cmd_status ;;
*) usage ;;
esac
