#!/usr/bin/env bash
# The main job: install what is missing, build, and run it. Until the seven-scheme sweep exists
# this is the quantizer report on a 4096 x 4096 Gaussian matrix (seed 42).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
./build/release/bin/miniquant --help
./build/release/bin/miniquant quant-report --shape 4096x4096 --seed 42
