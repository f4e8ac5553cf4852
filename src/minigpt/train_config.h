// Training hyper-parameters with JSON load/save and checks.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace minigpt {

struct TrainConfig {
  int steps = 1000;
  int batch = 16;              // sequences of n_ctx tokens per step
  double lr = 1e-3;            // peak learning rate, reached after warmup
  int warmup = 100;            // linear warm-up steps
  double min_lr = 1e-4;        // cosine decays from lr to min_lr at the last step
  double weight_decay = 0.1;   // decoupled, Linear weights only (see Trainer)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double clip = 1.0;           // max global gradient norm; <= 0 disables clipping
  uint64_t seed = 42;          // window sampling
  int eval_interval = 100;     // steps between validation losses; 0 = only at the end
  int eval_batches = 8;        // validation batches (fixed windows from the start of the val stream)
  int checkpoint_interval = 0; // steps between training checkpoints; 0 = only at the end
  std::string checkpoint_path; // empty: no checkpoints
  std::string resume_from;     // training checkpoint to continue from; empty: fresh start
};

void validate(const TrainConfig& c);
nlohmann::json to_json(const TrainConfig& c);
// Unknown fields are errors (a typo must not silently keep the default); missing fields keep it.
TrainConfig train_config_from_json(const nlohmann::json& j);
TrainConfig load_train_config(const std::string& path);
// Parses and checks config JSON text (`what` names its source in messages).
TrainConfig train_config_from_text(const std::string& text, const std::string& what);

// Learning rate of 0-based step s: linear warm-up to lr over `warmup` steps, then cosine to min_lr.
double lr_at(const TrainConfig& c, int step);

}  // namespace minigpt
