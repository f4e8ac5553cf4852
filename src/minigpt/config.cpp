// ModelConfig validation and JSON round trip.
#include "minigpt/config.h"

#include <fstream>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"

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
      throw mq::Error(fmt::format("model config: unknown field \"{}\"", it.key()));
  auto get = [&](const char* name) {
    if (!j.contains(name)) throw mq::Error(fmt::format("model config: missing field \"{}\"", name));
    const auto& v = j.at(name);
    if (!v.is_number_integer())
      throw mq::Error(fmt::format("model config: field \"{}\" must be an integer, got {}", name, v.dump()));
    return v.get<int>();
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

ModelConfig load_model_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw mq::Error(fmt::format("model config: cannot open {}", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw mq::Error(fmt::format("model config: {} is not valid JSON: {}", path, e.what()));
  }
  return model_config_from_json(j);
}


}  // namespace minigpt
