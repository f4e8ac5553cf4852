#!/usr/bin/env bash
# The test command: install what is missing, build the release and the debug (ASan + UBSan)
# presets, and run the whole suite on both (the sanitizer run skips tests labelled `slow`); then a
# short fuzz run of every loader (scripts/fuzz_smoke.sh). The lab course's graders (MQ_LABS) are built
# and run by the release preset only (label `lab`: the reference passes, the starters fail).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
echo "== release: configure and build"
cmake --preset release >/dev/null
cmake --build --preset release -j "${jobs}"
# The sanitizer run skips the tests labelled slow, so it builds only the binary and the tests it runs.
fast=$(ctest --test-dir build/release -N -LE slow 2>/dev/null | grep -o 'test_[a-z0-9_]*' | grep -v '^test_labs' | tr '\n' ' ' || true)
echo "== debug: configure and build miniquant and the tests the sanitizer run runs"
cmake --preset debug >/dev/null
# shellcheck disable=SC2086  # the target list is meant to split
cmake --build --preset debug -j "${jobs}" --target miniquant_cli ${fast}
for preset in debug release; do
  if [ "${preset}" = debug ]; then
    slow=$(ctest --test-dir build/release -N -L slow 2>/dev/null | grep -o 'test_[a-z0-9_]*' | tr '\n' ' ' || true)
    echo "== debug: ctest (ASan + UBSan), skipping the tests labelled slow (the release run has them): ${slow}"
    echo "== debug: the lab graders are not built here (MQ_LABS=OFF in the debug preset); the release run grades them"
  else
    echo "== release: ctest (every test, slow ones and the lab graders (label lab) included)"
  fi
  ctest --preset "${preset}" -j "${jobs}"
done
echo "== fuzz: smoke run of every loader's fuzzer"
bash scripts/fuzz_smoke.sh
