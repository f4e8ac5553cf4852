#!/usr/bin/env bash
# The test command's aarch64 stage: cross-builds the ops library and its kernel, quantizer, packing and format
# tests for a Raspberry Pi 4's core, Cortex-A72 (preset `aarch64`: Debian's g++-aarch64-linux-gnu at -O2, the
# xsimd kernels on its NEON backend; cmake/aarch64-linux-gnu.cmake, cmake/kernels_only.cmake), runs them under
# qemu-user emulating that core, and prints which instruction path each kernel family ran. Installs the cross
# toolchain and qemu-user when missing (scripts/setup.sh --aarch64). Where they cannot be installed it prints
# one "skipped: ..." line and exits 0, except on CI (CI set), where the stage must run.
set -euo pipefail
cd "$(dirname "$0")/.."

have_tools() { command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64 >/dev/null; }
if ! have_tools; then
  if ! bash scripts/setup.sh --aarch64 || ! have_tools; then
    if [ -n "${CI:-}" ]; then
      echo "aarch64: g++-aarch64-linux-gnu and qemu-user could not be installed, and CI must run this stage" >&2
      exit 1
    fi
    echo "skipped: aarch64 kernel tests (g++-aarch64-linux-gnu and qemu-user could not be installed here; scripts/setup.sh --aarch64 says why)"
    exit 0
  fi
fi

jobs=$(nproc)
start=$(date +%s)
echo "== aarch64: configure and build the ops library and its kernel tests (Cortex-A72, -O2)"
bash scripts/configure.sh aarch64
cmake --build --preset aarch64 -j "${jobs}"
built=$(date +%s)
echo "== aarch64: ctest under qemu-user (shape sweeps reduced: MQ_TEST_REDUCED, tests/reduced_sizes.h)"
ctest --preset aarch64 -j "${jobs}"
done_at=$(date +%s)
# The kernel-paths test case's line, run the way ctest runs it (the same emulator and core).
cpu=$(sed -n 's/^MQ_AARCH64_CPU:STRING=//p' build/aarch64/CMakeCache.txt)
paths=$(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "${cpu}" build/aarch64/bin/test_kernels --no-intro=true \
        "--test-case=kernel paths*" 2>&1 | grep -o 'kernel paths: .*' || true)
echo "aarch64 (${cpu} under qemu-user): ${paths:-kernel paths: not reported}"
echo "aarch64: build $((built - start)) s, tests $((done_at - built)) s"
