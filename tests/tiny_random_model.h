// The small random MiniGPT the quantization-recipe tests share: 2 layers of 128 wide, weights perturbed from the
// seed-42 initialisation so no two columns alike; a fixed token row, and 12 calibration windows of 16 tokens.
#pragma once
#include <cstdint>
#include <vector>

#include "minigpt/calibrate.h"
#include "minigpt/model.h"
#include "minigpt/params.h"

namespace mqtest {

inline minigpt::ModelConfig tiny() { return minigpt::ModelConfig{.vocab_size = 23, .n_ctx = 16, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512}; }

inline minigpt::Model random_model() {
  minigpt::Model m(tiny(), 42);
  minigpt::NormalSampler n(7);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.05 * n.next());
  return m;
}

inline const std::vector<int32_t> kTokens = {1, 4, 9, 16, 3, 22, 7, 7, 0, 11};

inline std::vector<std::vector<int32_t>> calibration() {
  std::vector<int32_t> stream(16 * 12);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<int32_t>((i * 7 + i / 5) % 23);
  return minigpt::calibration_windows(stream, 12, 16);
}

}  // namespace mqtest
