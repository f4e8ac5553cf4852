// libFuzzer target: fp32 and quantized MiniGPT checkpoints from arbitrary bytes (safetensors
// reader, model config, scheme-vs-tensor checks, NaN checks, vocabulary), then one forward pass
// of whatever loads.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "miniquant/error.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/safetensors.h"
#include "minigpt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    minigpt::TensorFile f =
        minigpt::read_safetensors_buffer(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    minigpt::CheckpointMeta meta;
    minigpt::Model m = minigpt::load_any_model_from(std::move(f), "fuzz", "", &meta);
    if (!meta.vocab_json.empty()) (void)minigpt::Tokenizer::from_json(meta.vocab_json);
    const int n = std::min(2, m.config().n_ctx);
    const std::vector<int32_t> tokens(static_cast<size_t>(n), m.config().vocab_size - 1);
    const std::vector<float> logits = m.logits(tokens);
    if (logits.size() != static_cast<size_t>(n) * m.config().vocab_size) __builtin_trap();
  } catch (const mq::Error&) {
  }
  return 0;
}
