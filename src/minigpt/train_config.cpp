// TrainConfig JSON round trip, validation and the learning-rate schedule.
#include "minigpt/train_config.h"

#include <cmath>
#include <fstream>
#include <numbers>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"

namespace minigpt {

void validate(const TrainConfig& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw mq::UsageError("train config: " + what);
  };
  need(c.steps > 0, fmt::format("steps must be positive, got {}", c.steps));
  need(c.batch > 0, fmt::format("batch must be positive, got {}", c.batch));
  need(c.lr > 0, fmt::format("lr must be positive, got {}", c.lr));
  need(c.warmup >= 0, fmt::format("warmup must be >= 0, got {}", c.warmup));
  need(c.min_lr >= 0 && c.min_lr <= c.lr, fmt::format("min_lr must be in [0, lr], got {}", c.min_lr));
  need(c.weight_decay >= 0, fmt::format("weight_decay must be >= 0, got {}", c.weight_decay));
  need(c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1, "betas must be in [0, 1)");
  need(c.eps > 0, "eps must be positive");
  need(c.eval_interval >= 0 && c.eval_batches > 0, "eval_interval must be >= 0 and eval_batches > 0");
  need(c.checkpoint_interval >= 0, "checkpoint_interval must be >= 0");
}

nlohmann::json to_json(const TrainConfig& c) {
  return {{"steps", c.steps},
          {"batch", c.batch},
          {"lr", c.lr},
          {"warmup", c.warmup},
          {"min_lr", c.min_lr},
          {"weight_decay", c.weight_decay},
          {"beta1", c.beta1},
          {"beta2", c.beta2},
          {"eps", c.eps},
          {"clip", c.clip},
          {"seed", c.seed},
          {"eval_interval", c.eval_interval},
          {"eval_batches", c.eval_batches},
          {"checkpoint_interval", c.checkpoint_interval},
          {"checkpoint_path", c.checkpoint_path},
          {"resume_from", c.resume_from}};
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw mq::Error("train config: expected a JSON object");
  TrainConfig c;
  const nlohmann::json defaults = to_json(c);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!defaults.contains(it.key())) throw mq::Error(fmt::format("train config: unknown field \"{}\"", it.key()));
    const auto& d = defaults[it.key()];
    const auto& v = it.value();
    const bool ok = d.is_string() ? v.is_string() : d.is_number_integer() ? v.is_number_integer() : v.is_number();
    if (!ok) throw mq::Error(fmt::format("train config: field \"{}\" has the wrong type: {}", it.key(), v.dump()));
  }
  auto get = [&](const char* k, auto& field) {
    if (j.contains(k)) j.at(k).get_to(field);
  };
  get("steps", c.steps);
  get("batch", c.batch);
  get("lr", c.lr);
  get("warmup", c.warmup);
  get("min_lr", c.min_lr);
  get("weight_decay", c.weight_decay);
  get("beta1", c.beta1);
  get("beta2", c.beta2);
  get("eps", c.eps);
  get("clip", c.clip);
  get("seed", c.seed);
  get("eval_interval", c.eval_interval);
  get("eval_batches", c.eval_batches);
  get("checkpoint_interval", c.checkpoint_interval);
  get("checkpoint_path", c.checkpoint_path);
  get("resume_from", c.resume_from);
  validate(c);
  return c;
}

TrainConfig load_train_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw mq::Error(fmt::format("train config: cannot open {}", path));
  try {
    return train_config_from_json(nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw mq::Error(fmt::format("train config: {} is not valid JSON: {}", path, e.what()));
  }
}

double lr_at(const TrainConfig& c, int step) {
  if (step < c.warmup) return c.lr * (step + 1) / c.warmup;
  const int span = c.steps - c.warmup;
  if (span <= 1) return c.lr;
  const double progress = std::min(1.0, static_cast<double>(step - c.warmup) / (span - 1));
  return c.min_lr + 0.5 * (c.lr - c.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace minigpt
