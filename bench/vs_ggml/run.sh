#!/usr/bin/env bash
# The kernel table against ggml in one command: builds vs_ggml (preset `bench`), runs it, and writes its table into
# bench/README.md. Arguments go to vs_ggml (--rounds, --shapes, ...; not --out). VSGGML_OUT=file writes the results
# there and prints the table instead of touching the README (smoke runs). Run it on a quiet machine: it times.
# One line and exit 0 where the npm package is absent (bash scripts/setup_node.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
modules=${MQ_LLAMA_NODE_MODULES:-tools/llama/node_modules}
if [ ! -f "${modules}/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so" ]; then
  echo "vs_ggml: skipped: no node-llama-cpp package at ${modules} (bash scripts/setup_node.sh installs it)"
  exit 0
fi
bash scripts/configure.sh bench  # also picks up a package installed since the last configure
# Another package folder than the default one: the build (headers, compiled-in library path) follows it.
if [ -n "${MQ_LLAMA_NODE_MODULES:-}" ]; then cmake -DMQ_LLAMA_NODE_MODULES="$(realpath "${modules}")" build/bench >/dev/null; fi
cmake --build build/bench -j 1 --target vs_ggml
out=${VSGGML_OUT:-bench/vs_ggml/results.json}
# Our OpenMP workers stop spinning about half a millisecond after a batch (libgomp's default spins for milliseconds,
# through the start of ggml's batch); between the calls of one batch the gap is far shorter, so they never sleep there.
GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000} ./build/bench/bench/vs_ggml --out "${out}" "$@"
if [ -n "${VSGGML_OUT:-}" ]; then
  python3 bench/vs_ggml/table.py "${out}"
else
  python3 bench/vs_ggml/table.py "${out}" --readme bench/README.md
fi
