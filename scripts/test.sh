#!/usr/bin/env bash
# The test command: install what is missing, build the release preset and run every test on it (the slow
# ones and the lab graders included); build the sanitizer preset (clang, ASan + UBSan, coverage-instrumented,
# so the same build also links the libFuzzer targets) and run the tests not labelled slow on it; a short fuzz
# run of every loader from that build; the aarch64 cross-build's kernel tests under qemu-user. Each stage's
# duration is printed at the end (also when a stage fails).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
stages=()
t_all=$(date +%s)
report() {
  local rc=$?
  echo "== stage durations"
  for s in "${stages[@]}"; do echo "  ${s}"; done
  echo "  total: $(( $(date +%s) - t_all )) s (exit ${rc})"
}
trap report EXIT
# stage NAME COMMAND...: runs it and records how long it took.
stage() {
  local name=$1 t0
  shift
  echo "== ${name}"
  t0=$(date +%s)
  "$@"
  stages+=("${name}: $(( $(date +%s) - t0 )) s")
}

stage "setup (packages)" bash scripts/setup.sh --aarch64
stage "release: configure and build" bash -c "bash scripts/configure.sh release && cmake --build --preset release -j ${jobs}"
# Every test, slow ones and the lab graders (label lab) included.
stage "release: ctest" ctest --preset release -j "${jobs}"
# The sanitizer build compiles only what its run needs: the binary, the tests not labelled slow (their names
# from the release build's list), and the fuzz targets.
fast=$(ctest --test-dir build/release -N -LE 'slow|lab' 2>/dev/null | grep -o 'test_[a-z0-9_]*' | tr '\n' ' ' || true)
# shellcheck disable=SC2086  # the target list is meant to split
stage "sanitize: configure and build (clang, ASan + UBSan, fuzz targets)" \
  bash -c "bash scripts/configure.sh sanitize && cmake --build --preset sanitize -j ${jobs} --target miniquant_cli fuzz_all ${fast}"
stage "sanitize: ctest (skips the tests labelled slow or isa; the release run has them)" ctest --preset sanitize -j "${jobs}"
stage "fuzz: smoke run of every loader's fuzzer" env FUZZ_PRESET=sanitize bash scripts/fuzz_smoke.sh
# --- aarch64 stage: the ops and their kernel tests cross-built for a Raspberry Pi's Cortex-A72, run under qemu-user
# (scripts/test_aarch64.sh; "skipped: ..." where the cross toolchain cannot be installed, never on CI)
stage "aarch64: cross-build the kernel tests (Cortex-A72) and run them under qemu-user" bash scripts/test_aarch64.sh
# --- end of the aarch64 stage
