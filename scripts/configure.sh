#!/usr/bin/env bash
# Configures one CMake preset: `bash scripts/configure.sh release`. The presets build with Ninja, whose
# build graph lets a test's objects compile while the libraries below it still compile (Make waits for
# each whole target, leaving one of the two cores idle for minutes). A build folder a Makefile
# configuration made, on a clone from before the switch, has its cache removed first: CMake refuses to
# reuse it with another generator.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:?usage: configure.sh PRESET}
cache=build/${preset}/CMakeCache.txt
if [ -f "${cache}" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "${cache}"; then
  echo "configure: build/${preset} was made by another generator ($(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "${cache}")): its cache is removed and it is rebuilt with Ninja"
  rm -rf "build/${preset}/CMakeCache.txt" "build/${preset}/CMakeFiles"
fi
cmake --preset "${preset}" >/dev/null
