#!/usr/bin/env bash
# The main job: install what is missing, build, measure this machine's ceilings
# (experiments/01-roofline) and run the seven-scheme sweep on the shipped MiniGPT
# (experiments/26-quant-curve), then energy per token by phase (experiments/28-energy).
# Seed 42 throughout; extra arguments go to `miniquant sweep`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target miniquant_cli  # the tests build with scripts/test.sh
./build/release/bin/miniquant roofline
./build/release/bin/miniquant sweep "$@"
./build/release/bin/miniquant energy
