// The training loop: batch sampling, AdamW with decoupled decay, clipping, save/resume.
#include "minigpt/train.h"
#include "miniquant/util/timer.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "minigpt/tensor_checks.h"

namespace minigpt {

namespace {
constexpr const char* kMetaStep = "train_step";
constexpr const char* kMetaRng = "train_rng";
constexpr const char* kMetaTrainConfig = "train_config";
}  // namespace

Trainer::Trainer(Model& model, const TrainConfig& cfg)
    : m_(model),
      cfg_(cfg),
      graph_(model.config(), cfg.batch, model.config().n_ctx),
      grad_(model.num_params()),
      m1_(model.num_params()),
      m2_(model.num_params()),
      in_(static_cast<size_t>(cfg.batch) * model.config().n_ctx),
      tgt_(in_.size()),
      rng_(cfg.seed) {
  validate(cfg);
}

void Trainer::sample_batch(const std::vector<int32_t>& stream) {
  const int T = m_.config().n_ctx;
  if (stream.size() < static_cast<size_t>(T) + 1)
    throw mq::UsageError(fmt::format("training stream has {} tokens, fewer than one window of n_ctx + 1 = {}",
                                     stream.size(), T + 1));
  const uint64_t starts = stream.size() - T;  // window start in [0, size - T - 1]
  for (int b = 0; b < cfg_.batch; ++b) {
    // Plain modulo instead of std::uniform_int_distribution, whose algorithm differs across
    // standard libraries; the bias (starts / 2^64) is negligible.
    const size_t s = static_cast<size_t>(rng_() % starts);
    std::memcpy(&in_[static_cast<size_t>(b) * T], &stream[s], T * sizeof(int32_t));
    std::memcpy(&tgt_[static_cast<size_t>(b) * T], &stream[s + 1], T * sizeof(int32_t));
  }
}

StepReport Trainer::step(const std::vector<int32_t>& stream) {
  const auto t0 = std::chrono::steady_clock::now();
  sample_batch(stream);
  StepReport r;
  r.loss = graph_.forward(m_.params(), in_.data(), tgt_.data());
  std::fill(grad_.begin(), grad_.end(), 0.0f);
  graph_.backward(m_.params(), grad_.data());

  // Global norm in double, serial: a fixed summation order keeps it bit-reproducible.
  double sq = 0;
  for (float g : grad_) sq += static_cast<double>(g) * g;
  r.grad_norm = std::sqrt(sq);
  if (!std::isfinite(r.grad_norm) || !std::isfinite(r.loss))
    throw mq::Error(fmt::format("training diverged at step {}: loss {}, gradient norm {}; lower lr or clip",
                                step_ + 1, r.loss, r.grad_norm));
  const double clip_scale = (cfg_.clip > 0 && r.grad_norm > cfg_.clip) ? cfg_.clip / r.grad_norm : 1.0;

  r.lr = lr_at(cfg_, step_);
  const int t = step_ + 1;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, t), bc2 = 1.0 - std::pow(cfg_.beta2, t);
  const double b1 = cfg_.beta1, b2 = cfg_.beta2, eps = cfg_.eps, lr = r.lr;
  float* p = m_.params();
  for (const auto& tensor : m_.layout().tensors()) {
    // Decay only the Linear weights: biases, LayerNorm gains and the (tied) embedding are
    // left alone, as in most GPT-2 recipes, so decay does not fight the embedding's norm.
    const double wd = tensor.kind == ParamKind::LinearWeight ? cfg_.weight_decay : 0.0;
    const long begin = static_cast<long>(tensor.offset), end = begin + static_cast<long>(tensor.size);
#pragma omp parallel for schedule(static) if (end - begin >= (1L << 15))
    for (long i = begin; i < end; ++i) {
      const double g = grad_[i] * clip_scale;
      const double m = b1 * m1_[i] + (1 - b1) * g;
      const double v = b2 * m2_[i] + (1 - b2) * g * g;
      m1_[i] = static_cast<float>(m);
      m2_[i] = static_cast<float>(v);
      const double update = (m / bc1) / (std::sqrt(v / bc2) + eps) + wd * p[i];
      p[i] = static_cast<float>(p[i] - lr * update);
    }
  }
  ++step_;
  r.step = step_;
  r.steps = cfg_.steps;
  r.tokens_per_s = static_cast<double>(in_.size()) / mq::seconds_since(t0);
  return r;
}

double Trainer::evaluate(const std::vector<int32_t>& stream) {
  const int T = m_.config().n_ctx, B = cfg_.batch;
  const size_t windows = stream.size() > static_cast<size_t>(T) ? (stream.size() - 1) / T : 0;
  const int batches = std::min<int>(cfg_.eval_batches, static_cast<int>(windows / B));
  if (batches == 0)
    throw mq::UsageError(fmt::format("validation stream has {} tokens, fewer than one batch of {} windows of {} + 1",
                                     stream.size(), B, T));
  double total = 0;
  for (int k = 0; k < batches; ++k) {
    for (int b = 0; b < B; ++b) {
      const size_t s = (static_cast<size_t>(k) * B + b) * T;
      std::memcpy(&in_[static_cast<size_t>(b) * T], &stream[s], T * sizeof(int32_t));
      std::memcpy(&tgt_[static_cast<size_t>(b) * T], &stream[s + 1], T * sizeof(int32_t));
    }
    total += graph_.forward(m_.params(), in_.data(), tgt_.data());
  }
  return total / batches;
}

void Trainer::save(const std::string& path, const CheckpointMeta& meta) const {
  CheckpointMeta mm = meta;
  if (mm.train_info.empty()) mm.train_info = nlohmann::json{{"step", step_}, {"config", to_json(cfg_)}}.dump();
  TensorFile f = model_to_tensor_file(m_, mm);
  for (const auto& t : m_.layout().tensors()) {
    const std::vector<int64_t> shape(t.shape.begin(), t.shape.end());
    f.add_f32("adam.m." + t.name, shape, m1_.data() + t.offset);
    f.add_f32("adam.v." + t.name, shape, m2_.data() + t.offset);
  }
  // The standard fixes mt19937_64's text form, so it round-trips exactly across libraries.
  std::ostringstream rng;
  rng << rng_;
  f.metadata[kMetaStep] = std::to_string(step_);
  f.metadata[kMetaRng] = rng.str();
  f.metadata[kMetaTrainConfig] = to_json(cfg_).dump();
  write_safetensors(path, f);
}

namespace {

struct ResumeState {
  int step = 0;
  std::mt19937_64 rng;
};

// The step and sampler state a training checkpoint resumes from, checked.
ResumeState resume_state(const TensorFile& f, const std::string& path) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("training checkpoint {}: {}", path, what)); };
  auto meta = [&](const char* k) {
    auto it = f.metadata.find(k);
    if (it == f.metadata.end())
      throw fail(fmt::format("no \"{}\" metadata: a model-only checkpoint cannot resume training", k));
    return it->second;
  };
  ResumeState s;
  // Exactly a decimal number in [0, INT_MAX]: stoi read "12abc" as 12, and a negative step is no state of ours.
  const std::string text = meta(kMetaStep);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), s.step);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || s.step < 0)
    throw fail(fmt::format("train_step metadata \"{}\" is not a step number (a non-negative integer); the checkpoint is corrupt",
                           mq::clip_text(text)));
  std::istringstream rs(meta(kMetaRng));
  rs >> s.rng;
  if (!rs) throw fail("train_rng metadata is not a valid generator state");
  return s;
}

}  // namespace

void check_resume_checkpoint(const std::string& path) { (void)resume_state(read_safetensors(path), path); }

void Trainer::load(const std::string& path) {
  const TensorFile f = read_safetensors(path);
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("training checkpoint {}: {}", path, what)); };
  Model loaded = model_from_tensor_file(f, path);
  if (!(loaded.config() == m_.config()))
    throw fail(fmt::format("model config {} differs from the model being trained {}", to_json(loaded.config()).dump(),
                           to_json(m_.config()).dump()));
  const ResumeState state = resume_state(f, path);
  const int step = state.step;
  const std::mt19937_64 rng = state.rng;
  AlignedVector<float> m1(m1_.size()), m2(m2_.size());
  for (const auto& t : m_.layout().tensors()) {
    for (auto [prefix, dst] : {std::pair{"adam.m.", &m1}, std::pair{"adam.v.", &m2}}) {
      const NamedTensor* nt = f.find(prefix + t.name);
      if (!nt || nt->dtype != DType::F32 || nt->bytes.size() != t.size * sizeof(float))
        throw fail(fmt::format("optimizer tensor \"{}{}\" is missing or has the wrong size", prefix, t.name));
      check_finite(*nt, path);  // a NaN moment would turn every later update into NaN
      std::memcpy(dst->data() + t.offset, nt->bytes.data(), nt->bytes.size());
    }
  }
  std::memcpy(m_.params(), loaded.params(), m_.num_params() * sizeof(float));
  note_if_unverified(path, f.checksums);
  m1_ = std::move(m1);
  m2_ = std::move(m2);
  rng_ = rng;
  step_ = step;
}

void train(Model& model, const std::vector<int32_t>& train_stream, const std::vector<int32_t>& val_stream,
           const TrainConfig& cfg, const TrainCallback& callback, const CheckpointMeta& meta) {
  // Fail before the first step, not after an hour of training.
  const size_t window = static_cast<size_t>(model.config().n_ctx) + 1;
  if (train_stream.size() < window)
    throw mq::UsageError(fmt::format("training stream has {} tokens, fewer than one window of n_ctx + 1 = {}",
                                     train_stream.size(), window));
  if (!val_stream.empty() && val_stream.size() < static_cast<size_t>(cfg.batch) * (window - 1) + 1)
    throw mq::UsageError(fmt::format("validation stream has {} tokens, fewer than one batch of {} windows of {} + 1",
                                     val_stream.size(), cfg.batch, window - 1));
  Trainer tr(model, cfg);
  if (!cfg.resume_from.empty()) tr.load(cfg.resume_from);
  const auto t0 = std::chrono::steady_clock::now();
  while (tr.step_count() < cfg.steps) {
    StepReport r = tr.step(train_stream);
    const bool last = r.step == cfg.steps;
    if (!cfg.checkpoint_path.empty() && (last || (cfg.checkpoint_interval > 0 && r.step % cfg.checkpoint_interval == 0))) {
      CheckpointMeta mm = meta;
      mm.train_info = nlohmann::json{{"step", r.step}, {"loss", r.loss}, {"config", to_json(cfg)}}.dump();
      tr.save(cfg.checkpoint_path, mm);
      r.saved_checkpoint = true;
    }
    if (!val_stream.empty() && (last || (cfg.eval_interval > 0 && r.step % cfg.eval_interval == 0))) {
      r.val_loss = tr.evaluate(val_stream);
      r.has_val = true;
    }
    r.elapsed_s = mq::seconds_since(t0);
    if (callback) callback(r);
  }
}

}  // namespace minigpt
