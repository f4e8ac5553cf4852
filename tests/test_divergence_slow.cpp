// The divergence measures on the shipped model: int3-g64 round-to-nearest against int3-g64 GPTQ, both
// against fp32 on the test split's first 4096 tokens. GPTQ must come out lower in KLD and each number
// inside a band measured with this code (the computation is deterministic at seed 42).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/divergence.h"
#include "minigpt/calibrate.h"
#include "minigpt/checkpoint.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/lexicon.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/tokenizer.h"

using namespace minigpt;

TEST_CASE("int3-g64: GPTQ's KL divergence from fp32 is below round-to-nearest's, inside measured bands") {
  const std::string path = MQ_SOURCE_DIR "/data/minigpt.safetensors";
  REQUIRE(std::filesystem::exists(path));
  CheckpointMeta meta;
  const Model ref = load_any_model(path, "", &meta);
  const Tokenizer tok = Tokenizer::from_json(meta.vocab_json);
  // val and test come before train from their own seed streams (see test_gptq_minigpt_slow.cpp).
  CorpusConfig cfg;  // seed 42
  cfg.train_tokens = 0;
  const Corpus c = generate_corpus(Lexicon::load(MQ_SOURCE_DIR "/data/lexicon"), cfg);
  const int len = ref.config().n_ctx;
  // 32 calibration windows (the sweep uses 128): enough for GPTQ's gain, a quarter of the time.
  const auto calib = calibration_windows(encode_split(tok, c.val), 32, len);
  std::vector<int32_t> test = encode_split(tok, c.test);
  REQUIRE(test.size() > 4096);
  test.resize(4096);

  Model rtn = load_any_model(path, "", nullptr), gptq = load_any_model(path, "", nullptr);
  quantize_model(rtn, QuantPlan::uniform("int3-g64"));
  QuantPlan gp = QuantPlan::uniform("int3-g64-gptq");
  gp.gptq.calibration_windows = 32;
  quantize_model(gptq, gp, calib);

  const auto passes = mqexp::divergence_pass(ref, {&rtn, &gptq}, test, len, len / 2);
  const mqexp::Divergence r = mqexp::summarize_divergence(passes[0], "fp32");
  const mqexp::Divergence g = mqexp::summarize_divergence(passes[1], "fp32");
  MESSAGE(fmt::format("int3-g64 RTN: KLD {:.6g} [{:.6g}, {:.6g}] p99 {:.4g} top-1 {:.5f} dPPL {:+.5f}", r.kl_mean, r.kl_low,
                      r.kl_high, r.kl_p99, r.top1, r.dppl));
  MESSAGE(fmt::format("int3-g64 GPTQ: KLD {:.6g} [{:.6g}, {:.6g}] p99 {:.4g} top-1 {:.5f} dPPL {:+.5f}", g.kl_mean, g.kl_low,
                      g.kl_high, g.kl_p99, g.top1, g.dppl));
  CHECK(r.tokens == 4096);
  // GPTQ below RTN, and by more than the noise: the intervals do not overlap.
  CHECK(g.kl_mean < r.kl_mean);
  CHECK(g.kl_high < r.kl_low);
  CHECK(g.top1 >= r.top1);
  // Measured with this code on the retrained checkpoint (grammar with the hard verb-tense set; gcc 12,
  // -O3 -march=native, AVX2 Zen 3, 2 threads), 4096 tokens, 32 windows:
  //   RTN  KLD 0.008870 [0.008074, 0.009667], p99 0.0528, top-1 0.7886, dPPL +0.1344
  //   GPTQ KLD 0.000373 [0.000339, 0.000407], p99 0.00328, top-1 0.9456, dPPL +0.0009
  // (the previous checkpoint gave 0.004075 and 0.000295: RTN's KLD depends on the weights' outliers,
  // which a retrain moves). Bands: measured x [0.7, 1.4]: the pass is deterministic, float rounding
  // of another SIMD width moves KLD far less; what they catch is a quantizer or a KL formula off by a
  // factor (e.g. KL(q || p), or the log in base 2: x 1.44).
  CHECK(r.kl_mean > 0.7 * 0.008870);
  CHECK(r.kl_mean < 1.4 * 0.008870);
  CHECK(g.kl_mean > 0.7 * 0.000373);
  CHECK(g.kl_mean < 1.4 * 0.000373);
  // top-1 agreement: many next tokens are near ties in this grammar, so a small KLD flips argmaxes.
  // Bands keep the previous checkpoint's distances from the measurement: RTN measured 0.7886 in
  // [-0.05, +0.05], GPTQ measured 0.9456 in [-0.036, +0.034] (0.9619 in [0.93, 0.99] before).
  CHECK(r.top1 > 0.74);
  CHECK(r.top1 < 0.84);
  CHECK(g.top1 > 0.91);
  CHECK(g.top1 < 0.98);
  CHECK(r.dppl > 0.0);
}
