#!/usr/bin/env bash
# The main job: install what is missing, build, measure this machine's ceilings
# (experiments/01-roofline) and run the quantization sweep on the shipped MiniGPT
# (experiments/26-quant-curve), then energy per token by phase (experiments/28-energy), then write the lab
# solutions from those results (solutions/), so every file a test compares with them is regenerated too and
# the test command passes after this in any order. Seed 42 throughout; extra arguments go to `miniquant sweep`
# (e.g. --schemes lab02). Each part's duration is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
parts=()
part() {
  local name=$1 t
  shift
  t=$(date +%s)
  "$@"
  parts+=("${name}: $(( $(date +%s) - t )) s")
}
part "setup" bash scripts/setup.sh
part "build" bash -c "bash scripts/configure.sh release && cmake --build --preset release -j $(nproc) --target miniquant_cli"
part "roofline" ./build/release/bin/miniquant roofline
part "sweep" ./build/release/bin/miniquant sweep "$@"
part "energy" ./build/release/bin/miniquant energy
part "lab solutions" ./build/release/bin/miniquant lab solutions
echo "== main job durations"
for p in "${parts[@]}"; do echo "  ${p}"; done
echo "  total: $(( $(date +%s) - t0 )) s"
