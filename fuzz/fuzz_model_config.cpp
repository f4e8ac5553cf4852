// libFuzzer target: MiniGPT model config JSON from arbitrary text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "miniquant/error.h"
#include "minigpt/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const minigpt::ModelConfig c =
        minigpt::model_config_from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    // Accepted configs respect the limits the loaders rely on.
    if (minigpt::param_count(c) > minigpt::kMaxParams || c.n_ctx > minigpt::kMaxCtx) __builtin_trap();
  } catch (const mq::Error&) {
  }
  return 0;
}
