#!/usr/bin/env bash
# Installs the Debian packages miniquant needs; silent when everything is already there.
set -euo pipefail

PACKAGES=(
  build-essential cmake git
  libeigen3-dev libxsimd-dev xtl-dev
  doctest-dev nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev libssl-dev
  python3-matplotlib
  clang libclang-rt-14-dev libomp-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
