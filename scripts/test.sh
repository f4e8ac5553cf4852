#!/usr/bin/env bash
# The test command: install what is missing, build the release and the debug (ASan + UBSan)
# presets, and run the whole suite on both (the sanitizer run skips tests labelled `slow`); then a
# short fuzz run of every loader (scripts/fuzz_smoke.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
for preset in release debug; do
  echo "== ${preset}: configure and build"
  cmake --preset "${preset}" >/dev/null
  cmake --build --preset "${preset}" -j "${jobs}"
done
for preset in debug release; do
  echo "== ${preset}: ctest"
  ctest --preset "${preset}" -j "${jobs}"
done
echo "== fuzz: smoke run of every loader's fuzzer"
bash scripts/fuzz_smoke.sh
