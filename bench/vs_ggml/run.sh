#!/usr/bin/env bash
# The kernel table against ggml in one command: builds vs_ggml (preset `bench`), runs it, stores the results as this
# CPU family's run (bench/vs_ggml/runs/VENDOR-FAMILY-MODEL.json, replacing that family's earlier one) and writes the
# tables of every stored family's run into bench/README.md, newest first. Arguments go to vs_ggml (--rounds,
# --shapes, ...; not --out). VSGGML_OUT=file writes the results there and prints the table instead of touching the
# stored runs or the README (smoke and partial runs). Run it on a quiet machine: it times.
# One line and exit 0 where the npm package is absent (bash scripts/setup_node.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
modules=${MQ_LLAMA_NODE_MODULES:-tools/llama/node_modules}
if [ ! -f "${modules}/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so" ]; then
  echo "vs_ggml: skipped: no node-llama-cpp package at ${modules} (bash scripts/setup_node.sh installs it)"
  exit 0
fi
# This CPU family's file: the vendor, family and model numbers /proc/cpuinfo gives (the manifest records the rest).
family=$(awk -F': *' '/^vendor_id/ {v = $2} /^cpu family/ {f = $2} /^model[ \t]*:/ {m = $2} END {if (v != "" && f != "" && m != "") print v "-" f "-" m}' /proc/cpuinfo)
if [ -z "${VSGGML_OUT:-}" ] && [ -z "${family}" ]; then
  echo "vs_ggml: /proc/cpuinfo gives no vendor, family and model to name this CPU's run; set VSGGML_OUT=file" >&2
  exit 2
fi
out=${VSGGML_OUT:-bench/vs_ggml/runs/${family}.json}
bash scripts/configure.sh bench  # also picks up a package installed since the last configure
# Another package folder than the default one: the build (headers, compiled-in library path) follows it.
if [ -n "${MQ_LLAMA_NODE_MODULES:-}" ]; then cmake -DMQ_LLAMA_NODE_MODULES="$(realpath "${modules}")" build/bench >/dev/null; fi
cmake --build build/bench -j 1 --target vs_ggml
# Our OpenMP workers stop spinning about half a millisecond after a batch (libgomp's default spins for milliseconds,
# through the start of ggml's batch); between the calls of one batch the gap is far shorter, so they never sleep there.
GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000} ./build/bench/bench/vs_ggml --out "${out}" "$@"
if [ -n "${VSGGML_OUT:-}" ]; then
  python3 bench/vs_ggml/table.py "${out}"
else
  python3 bench/vs_ggml/table.py bench/vs_ggml/runs/*.json --readme bench/README.md
fi
