#!/usr/bin/env bash
# make deps: install the Debian packages ascent needs, only those that are missing.
# As root it runs apt-get; otherwise through sudo; otherwise it prints the command and fails.
set -euo pipefail
pkgs=(build-essential libsqlite3-dev sqlite3 libopenblas-dev libdnnl-dev libopenmpi-dev openmpi-bin
      libcjson-dev libyajl-dev libncurses-dev libunwind-dev libcriterion-dev zlib1g-dev fortunes tmux iproute2
      python3 python3-mpi4py python3-numpy pkg-config slurm-wlm munge clang libclang-rt-14-dev libomp-dev)
missing=()
for p in "${pkgs[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$st" == "install ok installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
if [[ $(id -u) -eq 0 ]]; then
  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive "${cmd[@]}"
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq || true
  sudo DEBIAN_FRONTEND=noninteractive "${cmd[@]}"
else
  echo "deps: missing packages and no root or sudo; run as root:" >&2
  echo "  apt-get update && ${cmd[*]}" >&2
  exit 1
fi
