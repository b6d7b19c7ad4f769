#!/bin/bash
# samples/slurm-prolog.sh — a Slurm prolog that runs `ascent diag all` on the node and drains the node
# when a check FAILs (docs/cluster.md). Install it on every node and set in slurm.conf:
#     Prolog=/etc/slurm/prolog.d/ascent-diag.sh
#     PrologFlags=Alloc
# Slurm runs it as root before a job starts on the node; a non-zero exit drains the node and requeues
# the job. Settings (optional) come from ascent-prolog.conf next to this script, a bash file:
#     ASCENT=/opt/ascent/bin/ascent            # the binary (default: ascent on PATH)
#     DIAG_ARGS=(--expect-mtu 9000 --disk /scratch)   # options of `ascent diag all`
#     TIMEOUT=60                                # seconds before the check itself counts as a failure
ASCENT=ascent
DIAG_ARGS=()
TIMEOUT=60
conf="$(dirname "$0")/ascent-prolog.conf"
# shellcheck source=/dev/null
[[ -f $conf ]] && . "$conf"
node=${SLURMD_NODENAME:-$(hostname -s)}
# one process, this node only: no launcher variables, so diag does not start MPI
out=$(env -u SLURM_NTASKS -u PMIX_SIZE -u PMI_SIZE -u OMPI_COMM_WORLD_SIZE \
	timeout "$TIMEOUT" "$ASCENT" diag all --no-comm "${DIAG_ARGS[@]}" --json 2>/dev/null)
rc=$?
[[ $rc -eq 0 ]] && exit 0
# the failed checks, in one line, as the node's drain reason (sinfo -R shows it)
reason=$(printf '%s' "$out" | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    print("; ".join(c["name"] + ": " + c["message"] for c in d["checks"] if c["status"] == "FAIL"))
except Exception:
    pass' 2>/dev/null)
[[ -n $reason ]] || reason="ascent diag all exited $rc (timeout ${TIMEOUT}s, or it could not run)"
reason=${reason//\"/\'}
scontrol update nodename="$node" state=drain reason="ascent diag: ${reason:0:240}" || true
echo "ascent diag: $node drained: $reason" >&2
exit 1
