// libFuzzer target: training config JSON from arbitrary text.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "miniquant/error.h"
#include "minigpt/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const minigpt::TrainConfig c =
        minigpt::train_config_from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (!std::isfinite(c.lr) || !std::isfinite(minigpt::lr_at(c, 0)) || c.steps <= 0) __builtin_trap();
  } catch (const mq::Error&) {
  }
  return 0;
}
