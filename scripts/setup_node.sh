#!/usr/bin/env bash
# Installs what the optional llama.cpp cross-check needs (tests/test_gguf_llama_slow.cpp,
# tests/test_vs_llama_slow.cpp, `miniquant vs-llama`): the pinned npm packages of tools/llama
# (node-llama-cpp with its prebuilt linux-x64 llama.cpp, @huggingface/gguf) at package-lock.json's
# versions. node-llama-cpp needs Node >= 20; plain Debian 12 ships 18. Without a usable Node this prints
# one line saying what is skipped and how to enable it, and exits 0: Node never stops the main job or
# the tests. Silent when already installed.
set -euo pipefail
cd "$(dirname "$0")/../tools/llama"

skip() {
  echo "setup_node: $1: the llama.cpp cross-check is skipped (install Node >= 20 with npm, then rerun scripts/setup_node.sh)"
  exit 0
}

command -v node >/dev/null 2>&1 || skip "no node on PATH"
command -v npm >/dev/null 2>&1 || skip "no npm on PATH"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
case "$major" in ''|*[!0-9]*) major=0 ;; esac
if [ "$major" -lt 20 ]; then
  skip "node $(node --version 2>/dev/null || echo '(unknown version)') is older than 20"
fi

stamp=node_modules/.miniquant-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d node_modules/node-llama-cpp ]; then
  exit 0
fi
echo "setup_node: installing tools/llama npm packages (package-lock.json)"
# Optional dependencies are node-llama-cpp's other prebuilt binaries (CUDA, Vulkan, other OSes):
# package.json names the linux-x64 CPU one directly. Its postinstall would try to download or
# build llama.cpp when no prebuilt binary fits; the prebuilt one fits, so skip it.
if ! NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --omit=optional --ignore-scripts --no-save --no-audit --no-fund --loglevel=error >/dev/null 2>&1; then
  skip "npm install failed in tools/llama (run it there to see why)"
fi
echo "$want" > "$stamp"
