#!/usr/bin/env bash
# `ascent diag all` as a Slurm prolog (samples/slurm-prolog.sh) on a real 2-host cluster: node2's
# checkpoint disk is full (an 8 MiB tmpfs there, below the 1 GiB minimum), so a job on both hosts is
# refused, node2 is drained with the failed check as its reason, node1 stays up and a job on node1
# alone runs. Needs root, network namespaces and slurm-wlm + munge; skips (77) otherwise.
set -u
source "$ASCENT_ROOT/tests/integration/cluster_common.inc"
mkdir prolog scratch
cp "$ASCENT_ROOT/samples/slurm-prolog.sh" prolog/ascent-diag.sh
printf 'ASCENT=%q\nDIAG_ARGS=(--disk %q)\nTIMEOUT=60\n' "$ASCENT" "$PWD/scratch" >prolog/ascent-prolog.conf
cluster_up 2 --prolog prolog/ascent-diag.sh
"$CL" exec 2 mount -t tmpfs -o size=8m tmpfs "$PWD/scratch" || fail "tmpfs on node2"

timeout 120 srun -N 2 hostname >both.out 2>both.err && fail "a job on a node that fails the prolog ran: $(cat both.out)"
# node1 ran its part of the refused job's prolog: it is "comp" (completing) until slurmd has cleaned
# up, which on a loaded host takes seconds; wait for it to settle (60 s at most) before judging
for _ in $(seq 120); do
  state=$(sinfo -h -N -o '%N|%t|%E' | sort)
  grep -q '^node1|comp' <<<"$state" || break
  sleep 0.5
done
grep -q '^node2|drain|ascent diag: env.disk: ' <<<"$state" || fail "node2 not drained by the prolog: $state $(cat both.err)"
grep -q "^node1|idle|" <<<"$state" || fail "node1 must stay up: $state"
[[ $(timeout 120 srun -N 1 -w node1 hostname 2>node1.err) == node1 ]] || fail "a job on node1: $(cat node1.err)"
# the fix, then resume: node2 takes jobs again
"$CL" exec 2 umount "$PWD/scratch"
scontrol update nodename=node2 state=resume || fail "resume node2"
[[ $(timeout 120 srun -N 1 -w node2 hostname 2>node2.err) == node2 ]] || fail "node2 after the fix: $(cat node2.err)"
echo ok
