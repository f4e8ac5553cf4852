// The calibrated recipes on the shipped MiniGPT. AWQ and SmoothQuant: the folded fp32 model computes what the
// original does, and on the test split's first 4096 tokens the paired KLD ratios against the same recipe without
// them sit inside bands measured with this code (deterministic at seed 42): AWQ (scales scored by the block's output,
// then its clip search) below RTN at int2-g64 and int4-g128, and SmoothQuant below plain int8 +a8 and int4-g64 +a8,
// beyond the interval; AWQ on GPTQ above GPTQ at int3-g64 (a goal missed, stated so). The K search weighted by the
// Fisher diagonal (-fisher) against the plain and the importance-weighted search, likewise.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/divergence.h"
#include "experiments/intervals.h"
#include "minigpt/calibrate.h"
#include "minigpt/channel_stats.h"
#include "minigpt/checkpoint.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/lexicon.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/scale_fold.h"
#include "minigpt/tokenizer.h"
#include "minigpt/transform_table.h"
#include "miniquant/kernels/kernels.h"

using namespace minigpt;

namespace {
const std::string kPath = MQ_SOURCE_DIR "/data/minigpt.safetensors";

struct Shipped {
  Model ref;
  Tokenizer tok;
  std::vector<int32_t> val;                  // the val split, encoded
  std::vector<std::vector<int32_t>> calib;  // its first 32 windows
  std::vector<int32_t> test;
};

Shipped load() {
  CheckpointMeta meta;
  Model ref = load_any_model(kPath, "", &meta);
  Tokenizer tok = Tokenizer::from_json(meta.vocab_json);
  CorpusConfig cfg;  // seed 42; val and test only
  cfg.train_tokens = 0;
  const Corpus c = generate_corpus(Lexicon::load(MQ_SOURCE_DIR "/data/lexicon"), cfg);
  std::vector<int32_t> val = encode_split(tok, c.val);
  auto calib = calibration_windows(val, 32, ref.config().n_ctx);
  std::vector<int32_t> test = encode_split(tok, c.test);
  test.resize(4096);
  return {std::move(ref), std::move(tok), std::move(val), std::move(calib), std::move(test)};
}

Model quantized(const std::string& name, const std::vector<std::vector<int32_t>>& calib, int windows = 32) {
  Model m = load_any_model(kPath, "", nullptr);
  QuantPlan p = QuantPlan::uniform(name);
  p.gptq.calibration_windows = windows;
  // Without GPTQ, one calibration pass on the fp32 model (as experiments/29-kquants runs its recipes).
  if (!p.any_gptq()) p.gptq.sequential = false;
  quantize_model(m, p, p.needs_calibration() ? calib : std::vector<std::vector<int32_t>>{});
  return m;
}
// The recipes `names` quantized from the shipped model, their test windows' KL against it in one pass, and the
// paired ratio of one recipe's KLD to another's (printed).
class PairedKld {
 public:
  PairedKld(const Shipped& s, std::vector<std::string> names, const std::vector<std::vector<int32_t>>& calib, int windows)
      : names_(std::move(names)) {
    std::vector<Model> ms;
    for (const auto& n : names_) ms.push_back(quantized(n, calib, windows));
    std::vector<const Model*> ptrs;
    for (const auto& m : ms) ptrs.push_back(&m);
    const int len = s.ref.config().n_ctx;
    passes_ = mqexp::divergence_pass(s.ref, ptrs, s.test, len, len / 2);
  }
  mqexp::MeanInterval ratio(size_t a, size_t b) const {
    const mqexp::MeanInterval r = mqexp::clustered_ratio(passes_[a].window_kl, passes_[b].window_kl);
    MESSAGE(fmt::format("{} / {}: KLD ratio {:.4f} [{:.4f}, {:.4f}]", names_[a], names_[b], r.mean, r.low, r.high));
    return r;
  }

 private:
  std::vector<std::string> names_;
  std::vector<mqexp::DivergencePass> passes_;
};
}  // namespace

TEST_CASE("AWQ's scales folded into the shipped model leave its fp32 logits unchanged to rounding") {
  REQUIRE(std::filesystem::exists(kPath));
  Shipped s = load();
  Model m = load_any_model(kPath, "", nullptr);
  const auto stats = collect_channel_stats(m, s.calib);
  for (const LinearKind kind : {LinearKind::attn_out, LinearKind::qkv, LinearKind::mlp_up})
    for (const LinearInfo& li : m.linears())
      if (li.kind == kind) fold_input_scale(m, li, awq_scales({li, stats.at(li.name), mq::Scheme::integer(3, 64), mq::ActMode::weight_only}).scales);
  const std::vector<int32_t> window(s.test.begin(), s.test.begin() + m.config().n_ctx);
  const std::vector<float> a = s.ref.logits(window), b = m.logits(window);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i]))), scale = std::max(scale, static_cast<double>(std::fabs(a[i])));
  MESSAGE(fmt::format("fold: largest logit change {:.3g} of the largest logit {:.3g}", worst, scale));
  CHECK(worst / scale < 1e-4);
  // The largest input channel against the median, per Linear input: what AWQ and SmoothQuant can buy.
  for (const LinearInfo& li : m.linears())
    if (li.layer == 0) MESSAGE(fmt::format("{}: input max/median {:.1f}", li.name, stats.at(li.name).outlier_ratio()));
}

TEST_CASE("AWQ against RTN and GPTQ, SmoothQuant against plain +a8: paired KLD ratios inside measured bands") {
  const Shipped s = load();
  const PairedKld k(s, {"int2-g64", "int2-g64-awq", "int4-g128", "int4-g128-awq", "int3-g64-gptq", "int3-g64-awq-gptq",
                        "int8-per-channel+a8", "int8-per-channel-smooth+a8", "int4-g64+a8", "int4-g64-smooth+a8"}, s.calib, 32);
  const mqexp::MeanInterval awq2 = k.ratio(1, 0), awq4 = k.ratio(3, 2), awq_gptq = k.ratio(5, 4), smooth = k.ratio(7, 6),
                            smooth4 = k.ratio(9, 8);
  // The goals where they are met: AWQ below RTN at 2 and 4 bits, SmoothQuant below plain +a8, beyond the interval;
  // SmoothQuant on int4-g64 +a8 not above plain beyond the interval (its strength searched per Linear, s = 1 a candidate).
  CHECK(awq2.high < 1.0);
  CHECK(awq4.high < 1.0);
  CHECK(smooth.high < 1.0);
  CHECK(smooth4.low <= 1.0);
  // AWQ then GPTQ not above GPTQ beyond the interval: its scales searched layer by layer on the partly quantized
  // model, as sequential GPTQ calibrates (quantize_model.cpp). Searched on the fp32 model first, it was 1.26x here.
  CHECK(awq_gptq.low <= 1.0);
  // Measured with this code (gcc 12, AMD EPYC Zen 4; these four repeat across CPUs), bands +-4%. Scored by
  // mlp_up's own output error instead of its block's, and without the clip search, AWQ was 1.24x RTN at int4-g128
  // here.
  CHECK(awq2.mean == doctest::Approx(0.5827).epsilon(0.04));
  CHECK(awq4.mean == doctest::Approx(0.8856).epsilon(0.04));
  // AWQ then GPTQ is not the same number on every build: its sequential calibration runs the partly quantized model,
  // whose int3 weight-only kernel differs per instruction set in its last bits (bf16 dot products within 2^-16, or
  // fp32 FMAs in 16- or 8-wide order), and each layer's grid search turns such a difference into other scales. The
  // three paths, each measured on this code (2026-12-02, the same Zen 5 running each build): 1.0180 on AVX-512 BF16
  // (Zen 4 and 5), 1.1309 on AVX-512 without BF16 (-march=skylake-avx512 and icelake-server alike), 1.1517 on AVX2
  // (-march=znver3); every one inside the others' intervals (about +-0.2), so the goal above reads the same on each.
  // A band is held per path; on another one (no AVX2) only the goal is.
  const double awq_gptq_pin = mq::has_bf16_weight_path(mq::Scheme::integer(3, 64)) ? 1.0180
#if defined(__AVX512F__)
                                                                                  : 1.1309;
#elif defined(__AVX2__)
                                                                                  : 1.1517;
#else
                                                                                  : std::nan("");
#endif
  if (!std::isnan(awq_gptq_pin)) CHECK(awq_gptq.mean == doctest::Approx(awq_gptq_pin).epsilon(0.04));
  CHECK(smooth.mean == doctest::Approx(0.8327).epsilon(0.04));
  CHECK(smooth4.mean == doctest::Approx(0.8732).epsilon(0.04));
}

TEST_CASE("the K search weighted by the Fisher diagonal against the plain and the importance-weighted search: paired KLD ratios") {
  const Shipped s = load();
  // 128 windows, the plans' default: the Fisher diagonal sums one squared gradient per window, so it needs more
  // windows than the Hessian's diagonal, which sums one outer product per token (with 32: fisher / imatrix 1.06).
  const PairedKld k(s, {"q4_k", "q4_k-imatrix", "q4_k-fisher"}, calibration_windows(s.val, 128, s.ref.config().n_ctx), 128);
  const mqexp::MeanInterval plain = k.ratio(2, 0), imp = k.ratio(2, 1);
  // Below the plain search beyond the interval; on these 4096 tokens a tie with the importance-weighted search
  // (experiments/29-kquants measures both on the whole test split). Bands +-4%, measured with this code.
  CHECK(plain.high < 1.0);
  CHECK(plain.mean == doctest::Approx(0.5084).epsilon(0.04));
  CHECK(imp.mean == doctest::Approx(1.0084).epsilon(0.04));
}
