#!/usr/bin/env bash
# Installs what the llama.cpp cross-check needs (tests/test_gguf_llama_slow.cpp): Node and npm from
# Debian, then the pinned npm packages of tools/llama (node-llama-cpp with its prebuilt linux-x64
# llama.cpp, @huggingface/gguf) at package-lock.json's versions. Silent when already installed.
set -euo pipefail
cd "$(dirname "$0")/../tools/llama"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup_node: need root or sudo to install nodejs npm" >&2; exit 1; }
    SUDO="sudo"
  fi
  echo "setup_node: installing nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

# node-llama-cpp needs Node >= 20 (its package.json "engines").
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "setup_node: node $(node --version) is too old for node-llama-cpp (needs >= 20)" >&2
  exit 1
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
NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --omit=optional --ignore-scripts --no-save --no-audit --no-fund --loglevel=error >/dev/null 2>&1 \
  || { echo "setup_node: npm install failed in tools/llama (run it there to see why)" >&2; exit 1; }
echo "$want" > "$stamp"
