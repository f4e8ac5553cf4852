// TrainConfig JSON round trip, validation and the learning-rate schedule.
#include "minigpt/train_config.h"

#include <climits>
#include <cmath>
#include <numbers>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"

namespace minigpt {

void validate(const TrainConfig& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw mq::UsageError("train config: " + what);
  };
  need(c.steps > 0, fmt::format("steps must be positive, got {}", c.steps));
  need(c.batch > 0, fmt::format("batch must be positive, got {}", c.batch));
  // Activations scale with batch: refuse sizes that could only exhaust memory.
  need(c.batch <= 65536, fmt::format("batch {} is above the limit 65536", c.batch));
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
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!defaults.contains(it.key())) throw mq::Error(fmt::format("train config: unknown field \"{}\"", mq::clip_text(it.key())));
  // Typed, range-checked reads: an out-of-range integer fails naming its key instead of wrapping.
  auto what = [](const char* k) { return fmt::format("train config: field \"{}\"", k); };
  // A bad value in a valid config is a usage error (exit 2), as validate()'s limits are: a step count
  // beyond 32 bits and one beyond a limit below them are the same mistake.
  const auto value = [](auto read) {
    try {
      return read();
    } catch (const mq::UsageError&) {
      throw;
    } catch (const mq::Error& e) {
      throw mq::UsageError(e.what());
    }
  };
  auto get_int = [&](const char* k, int& field) {
    if (j.contains(k)) field = value([&] { return static_cast<int>(mq::json_int(j.at(k), what(k), INT32_MIN, INT32_MAX)); });
  };
  auto get_double = [&](const char* k, double& field) {
    if (j.contains(k)) field = value([&] { return mq::json_finite(j.at(k), what(k)); });
  };
  auto get_string = [&](const char* k, std::string& field) {
    if (j.contains(k)) field = value([&] { return mq::json_string(j.at(k), what(k)); });
  };
  get_int("steps", c.steps);
  get_int("batch", c.batch);
  get_double("lr", c.lr);
  get_int("warmup", c.warmup);
  get_double("min_lr", c.min_lr);
  get_double("weight_decay", c.weight_decay);
  get_double("beta1", c.beta1);
  get_double("beta2", c.beta2);
  get_double("eps", c.eps);
  get_double("clip", c.clip);
  if (j.contains("seed")) c.seed = value([&] { return mq::json_uint64(j.at("seed"), what("seed")); });
  get_int("eval_interval", c.eval_interval);
  get_int("eval_batches", c.eval_batches);
  get_int("checkpoint_interval", c.checkpoint_interval);
  get_string("checkpoint_path", c.checkpoint_path);
  get_string("resume_from", c.resume_from);
  validate(c);
  return c;
}

TrainConfig train_config_from_text(const std::string& text, const std::string& what) {
  return train_config_from_json(mq::parse_json_checked(text, what));
}

TrainConfig load_train_config(const std::string& path) {
  std::string text;
  try {
    text = mq::read_file(path);
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("train config: {}", e.what()));
  }
  try {
    return train_config_from_text(text, fmt::format("train config {}", path));
  } catch (const mq::UsageError& e) {
    throw mq::UsageError(fmt::format("{} (in {})", e.what(), path));
  } catch (const mq::Error& e) {
    const std::string w = e.what();
    throw mq::Error(w.find(path) == std::string::npos ? fmt::format("{} (in {})", w, path) : w);
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
