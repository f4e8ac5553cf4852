// MiniGPT's shape: the handful of integers that fix every tensor, with JSON load/save and checks.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace minigpt {

struct ModelConfig {
  int vocab_size = 0;  // rows of wte, columns of the logits
  int n_ctx = 128;     // rows of wpe: longest sequence the model can see
  int d_model = 256;
  int n_layer = 4;
  int n_head = 4;
  int d_ff = 1024;     // MLP hidden width, 4 * d_model as in GPT-2

  int head_dim() const { return d_model / n_head; }
  bool operator==(const ModelConfig&) const = default;
};

// Every Linear input width must be a multiple of this, so every quantization group size
// (32, 64, 128) divides it.
inline constexpr int kWidthMultiple = 128;

// Upper bounds of every size: far above any model this project runs (GPT-2 small included), far
// below sizes whose products overflow or whose buffers would exhaust the machine. A config from a
// file is checked against them before anything is allocated.
inline constexpr int kMaxVocab = 1 << 20;
inline constexpr int kMaxCtx = 1 << 16;
inline constexpr int kMaxWidth = 1 << 15;  // d_model and d_ff
inline constexpr int kMaxLayers = 1024;
inline constexpr int64_t kMaxParams = int64_t{1} << 31;  // 8 GiB of fp32 parameters

// Number of parameters the config implies (after validate(), this cannot overflow).
int64_t param_count(const ModelConfig& c);

// Throws mq::UsageError naming the offending field. `relax_widths` skips the 128-multiple and
// d_ff == 4 d_model rules: only the finite-difference tests use it, to check gradients on a
// model small enough to perturb every parameter.
void validate(const ModelConfig& c, bool relax_widths = false);

nlohmann::json to_json(const ModelConfig& c);
// Missing fields, wrong types and unknown fields are errors: a typo must not silently
// fall back to a default size.
ModelConfig model_config_from_json(const nlohmann::json& j, bool relax_widths = false);
ModelConfig load_model_config(const std::string& path);
// Parses and checks config JSON text (`what` names its source in messages); what the loaders use.
ModelConfig model_config_from_text(const std::string& text, const std::string& what);

}  // namespace minigpt
