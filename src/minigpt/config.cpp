// ModelConfig validation and JSON round trip.
#include "minigpt/config.h"

#include <climits>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"

namespace minigpt {

void validate(const ModelConfig& c, bool relax_widths) {
  auto positive = [](const char* name, int v) {
    if (v <= 0) throw mq::UsageError(fmt::format("model config: {} must be positive, got {}", name, v));
  };
  positive("vocab_size", c.vocab_size);
  positive("n_ctx", c.n_ctx);
  positive("d_model", c.d_model);
  positive("n_layer", c.n_layer);
  positive("n_head", c.n_head);
  positive("d_ff", c.d_ff);
  auto at_most = [](const char* name, int v, int hi) {
    if (v > hi) throw mq::UsageError(fmt::format("model config: {} = {} is above the limit {}", name, v, hi));
  };
  at_most("vocab_size", c.vocab_size, kMaxVocab);
  at_most("n_ctx", c.n_ctx, kMaxCtx);
  at_most("d_model", c.d_model, kMaxWidth);
  at_most("d_ff", c.d_ff, kMaxWidth);
  at_most("n_layer", c.n_layer, kMaxLayers);
  at_most("n_head", c.n_head, c.d_model);
  if (param_count(c) > kMaxParams)
    throw mq::UsageError(fmt::format("model config: {} parameters are above the limit {}", param_count(c), kMaxParams));
  if (c.d_model % c.n_head != 0)
    throw mq::UsageError(fmt::format("model config: d_model {} is not divisible by n_head {}",
                                     c.d_model, c.n_head));
  if (relax_widths) return;
  if (c.d_ff != 4 * c.d_model)
    throw mq::UsageError(fmt::format("model config: d_ff must be 4 * d_model = {}, got {}",
                                     4 * c.d_model, c.d_ff));
  for (auto [name, v] : {std::pair{"d_model", c.d_model}, std::pair{"d_ff", c.d_ff}})
    if (v % kWidthMultiple != 0)
      throw mq::UsageError(fmt::format(
          "model config: {} = {} is a Linear input width and must be a multiple of {} "
          "(so quantization groups of 32/64/128 divide it); try {}",
          name, v, kWidthMultiple, (v / kWidthMultiple + 1) * kWidthMultiple));
}

int64_t param_count(const ModelConfig& c) {
  // Bounded by the per-field limits, so this is exact in int64: at most ~2^52.
  const int64_t d = c.d_model, f = c.d_ff;
  const int64_t per_layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (f * d + f) + (d * f + d);
  return (static_cast<int64_t>(c.vocab_size) + c.n_ctx) * d + c.n_layer * per_layer + 2 * d;
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"n_ctx", c.n_ctx},   {"d_model", c.d_model},
          {"n_layer", c.n_layer},       {"n_head", c.n_head}, {"d_ff", c.d_ff}};
}

ModelConfig model_config_from_json(const nlohmann::json& j, bool relax_widths) {
  if (!j.is_object()) throw mq::Error("model config: expected a JSON object");
  static const std::set<std::string> known = {"vocab_size", "n_ctx",  "d_model",
                                              "n_layer",    "n_head", "d_ff"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key()))
      throw mq::Error(fmt::format("model config: unknown field \"{}\"", mq::clip_text(it.key())));
  auto get = [&](const char* name) {
    if (!j.contains(name)) throw mq::Error(fmt::format("model config: missing field \"{}\"", name));
    // Range-checked: a value outside int must fail, not wrap into a different model. A bad value in a
    // valid config is a usage error (exit 2) whether it is beyond 32 bits or beyond a limit below them.
    try {
      return static_cast<int>(mq::json_int(j.at(name), fmt::format("model config: field \"{}\"", name), INT32_MIN, INT32_MAX));
    } catch (const mq::UsageError&) {
      throw;
    } catch (const mq::Error& e) {
      throw mq::UsageError(e.what());
    }
  };
  ModelConfig c;
  c.vocab_size = get("vocab_size");
  c.n_ctx = get("n_ctx");
  c.d_model = get("d_model");
  c.n_layer = get("n_layer");
  c.n_head = get("n_head");
  c.d_ff = get("d_ff");
  validate(c, relax_widths);
  return c;
}

ModelConfig model_config_from_text(const std::string& text, const std::string& what) {
  return model_config_from_json(mq::parse_json_checked(text, what));
}

ModelConfig load_model_config(const std::string& path) {
  std::string text;
  try {
    text = mq::read_file(path);
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("model config: {}", e.what()));
  }
  try {
    return model_config_from_text(text, fmt::format("model config {}", path));
  } catch (const mq::UsageError& e) {
    throw mq::UsageError(fmt::format("{} (in {})", e.what(), path));
  } catch (const mq::Error& e) {
    const std::string w = e.what();
    throw mq::Error(w.find(path) == std::string::npos ? fmt::format("{} (in {})", w, path) : w);
  }
}


}  // namespace minigpt
