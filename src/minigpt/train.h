// Training MiniGPT: AdamW, warm-up + cosine schedule, global-norm clipping, validation, and
// bit-exact save/resume of the whole training state.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "minigpt/checkpoint.h"
#include "minigpt/graph.h"
#include "minigpt/model.h"
#include "minigpt/train_config.h"

namespace minigpt {

struct StepReport {
  int step = 0;               // steps completed, 1-based
  int steps = 0;              // total planned
  double loss = 0;            // mean training cross-entropy of this step's batch (nats/token)
  double lr = 0;              // learning rate used for this step
  double grad_norm = 0;       // global norm before clipping
  double tokens_per_s = 0;    // this step's batch tokens / its wall time
  double elapsed_s = 0;       // since train() started
  bool has_val = false;       // val_loss is set on eval steps
  double val_loss = 0;
  bool saved_checkpoint = false;
};
using TrainCallback = std::function<void(const StepReport&)>;

// Reads a training checkpoint and checks the state it resumes from (step number, sampler state), so a
// bad --resume fails before the corpus is generated: mq::Error naming the file. Trainer::load checks
// the same and the rest.
void check_resume_checkpoint(const std::string& path);

class Trainer {
 public:
  // Keeps a reference to `model`, which it updates in place.
  Trainer(Model& model, const TrainConfig& cfg);

  // One AdamW step on a batch of windows sampled from `stream`.
  StepReport step(const std::vector<int32_t>& stream);
  // Mean loss over eval_batches batches of fixed, non-overlapping windows from the start of
  // `stream`; consumes no randomness, so evaluating never changes the training trajectory.
  double evaluate(const std::vector<int32_t>& stream);
  int step_count() const { return step_; }

  // Model + AdamW moments + step + sampler state + train config, one safetensors file.
  void save(const std::string& path, const CheckpointMeta& meta = {}) const;
  // Restores all of it; the checkpoint's model config must equal the model's.
  void load(const std::string& path);

 private:
  void sample_batch(const std::vector<int32_t>& stream);

  Model& m_;
  TrainConfig cfg_;
  TrainGraph<float> graph_;
  AlignedVector<float> grad_;         // (num_params)
  AlignedVector<float> m1_, m2_;      // (num_params) AdamW first and second moments
  std::vector<int32_t> in_, tgt_;    // (batch, n_ctx)
  std::mt19937_64 rng_;              // window sampler
  int step_ = 0;
};

// Trains for cfg.steps (or from cfg.resume_from's step to cfg.steps), reporting every step to
// `callback`; validation every eval_interval steps and at the end; training checkpoints to
// cfg.checkpoint_path every checkpoint_interval steps and at the end. `meta` (vocabulary and
// its hash) goes into every checkpoint.
void train(Model& model, const std::vector<int32_t>& train_stream, const std::vector<int32_t>& val_stream,
           const TrainConfig& cfg, const TrainCallback& callback = {}, const CheckpointMeta& meta = {});

}  // namespace minigpt
