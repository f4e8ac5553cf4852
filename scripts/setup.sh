#!/usr/bin/env bash
# Installs what miniquant needs: the Debian packages (silent when everything is already there; munge and
# the Slurm daemons for the single-node Slurm test, tests/slurm/, and GNU parallel for scripts/slurm/), then
# Node (from Debian when missing) and the pinned npm packages of the llama.cpp cross-check
# (scripts/setup_node.sh). With --aarch64 also the aarch64 cross toolchain and qemu-user of the test
# command's aarch64 stage (scripts/test_aarch64.sh), in the same apt-get call.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build git
  libeigen3-dev libxsimd-dev xtl-dev
  doctest-dev nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev libssl-dev libhwloc-dev pkg-config
  python3-matplotlib
  clang libclang-rt-14-dev libomp-dev
  munge slurmctld slurmd slurm-client parallel
)
case "${1:-}" in
  "") ;;
  --aarch64) PACKAGES+=(g++-aarch64-linux-gnu qemu-user) ;;  # the gcc 12 cross compiler with its libgomp; qemu-aarch64
  *) echo "setup: unknown argument '$1' (usage: setup.sh [--aarch64])" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  # A fresh machine often runs unattended upgrades at boot, holding dpkg's lock: apt waits for it
  # (at most LOCK_WAIT seconds) instead of failing at once.
  wait_s=${LOCK_WAIT:-600}
  if ! $SUDO apt-get -o DPkg::Lock::Timeout=0 check >/dev/null 2>&1; then
    echo "setup: another package manager holds the dpkg lock; waiting up to ${wait_s} s for it"
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout="${wait_s}" update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout="${wait_s}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
bash scripts/setup_node.sh
