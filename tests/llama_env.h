// Whether the optional llama.cpp cross-check can run here: the pinned npm packages installed by
// scripts/setup_node.sh and a Node >= 20 to run them (plain Debian 12 ships 18). The tests that need it
// skip with this reason instead of failing.
#pragma once
#include <filesystem>
#include <string>

#include "miniquant/util/sysinfo.h"

inline const std::string kLlamaToolsDir = MQ_SOURCE_DIR "/tools/llama";

// "" when usable, else why not (for the skip message).
inline std::string llama_skip_reason() {
  namespace fs = std::filesystem;
  if (!fs::exists(kLlamaToolsDir + "/node_modules/node-llama-cpp") || !fs::exists(kLlamaToolsDir + "/node_modules/@huggingface/gguf"))
    return "tools/llama/node_modules is missing (scripts/setup_node.sh installs it where Node >= 20 is available)";
  const mq::CommandOutput v = mq::run_command("node -p 'process.versions.node.split(\".\")[0]' 2>/dev/null");
  int major = 0;
  try {
    major = v.code == 0 ? std::stoi(v.out) : 0;
  } catch (const std::exception&) {
  }
  if (major < 20) return "node-llama-cpp needs Node >= 20, and `node` here is " + (major ? std::to_string(major) : std::string("missing"));
  return "";
}
inline bool llama_usable() { return llama_skip_reason().empty(); }
