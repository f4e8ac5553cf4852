// GPTQ on real MiniGPT Hessians: the shipped checkpoint, calibrated on 32 windows of the val split,
// for the first and the last Linear of the network. Random correlated inputs (test_gptq.cpp) do not
// show whether the solver helps on the activations it will really see; this does, and checks that
// the gain holds on a Hessian from 32 other windows (not an artefact of fitting the calibration set).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "miniquant/gptq.h"
#include "miniquant/quantize.h"
#include "minigpt/calibrate.h"
#include "minigpt/checkpoint.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/lexicon.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/tokenizer.h"

using namespace minigpt;

TEST_CASE("GPTQ beats round-to-nearest on the shipped model's Hessians, inside a band") {
  const std::string path = MQ_SOURCE_DIR "/data/minigpt.safetensors";
  REQUIRE(std::filesystem::exists(path));
  CheckpointMeta meta;
  Model m = load_any_model(path, "", &meta);
  const Tokenizer tok = Tokenizer::from_json(meta.vocab_json);
  REQUIRE(tok.size() == m.config().vocab_size);

  // The val split is drawn before train, from its own seed stream (generate_corpus), so skipping
  // the 5 M training tokens gives the val stories `miniquant quantize` calibrates on, in a fraction
  // of the time. The checkpoint's vocabulary stands in for the one built from train.
  CorpusConfig cfg;  // seed 42
  cfg.train_tokens = 0;
  const Corpus c = generate_corpus(Lexicon::load(MQ_SOURCE_DIR "/data/lexicon"), cfg);
  const std::vector<int32_t> val = encode_split(tok, c.val);
  // Were the vocabulary and the corpus to drift apart, the windows would fill with <unk>.
  CHECK(std::count(val.begin(), val.end(), Tokenizer::kUnkId) == 0);
  const int len = m.config().n_ctx;  // 128
  const auto windows = calibration_windows(val, 64, len);
  const std::vector<std::vector<int32_t>> calib(windows.begin(), windows.begin() + 32);  // 4096 samples
  const std::vector<std::vector<int32_t>> held(windows.begin() + 32, windows.end());     // 4096 others

  // Ratios tr((W-Q) H (W-Q)^T) GPTQ / RTN measured with this code at seed 42 on the retrained
  // checkpoint (gcc 12, -O3 -march=native, AVX2 Zen 3), plain / act-order:
  //   h.0.attn.c_attn (768x256):  int4-g64 0.2980 / 0.1925, int4-g128 0.2961 / 0.1885,
  //                               int4-per-channel 0.2849 / 0.1859, int3-g128 0.3083 / 0.1905
  //   h.3.mlp.c_proj (256x1024):  int4-g64 0.0668 / 0.0298, int4-g128 0.0726 / 0.0285,
  //                               int4-per-channel 0.0475 / 0.0240, int3-g128 0.0570 / 0.0209
  // (the previous checkpoint: 0.27-0.29 / 0.21-0.22 and 0.035-0.051 / 0.015-0.023).
  // Far below the ~0.65 of test_gptq.cpp's random inputs: these activations are strongly
  // correlated (H's eigenvalues run from ~1e-6 to 7.5 for c_attn and to 218 for mlp.c_proj), so
  // most of a column's rounding error can be cancelled by the columns after it. On the 32 held-out
  // windows the ratios are 1.05-1.12x these (act-order 1.09-1.25x): the gain is not fitted noise.
  //
  // Band: measured +-10%. The computation is deterministic; calibrating on the other 32 windows
  // instead moves every ratio by at most 4.4%, and a change of summation order (another SIMD width
  // in Eigen) moves it far less. What the band catches, measured by breaking gptq.cpp on purpose
  // (on the previous checkpoint, whose ratios were of the same size):
  // no error propagation gives 1.0; no lazy update across blocks 0.55-0.60 (c_attn) and 0.31-0.72
  // (mlp.c_proj); no propagation inside a block 0.63-0.73 and 0.15-0.44; errors not divided by
  // U_jj 10-250; act-order without permuting H 0.96-1.56. (Choosing groups' scales up front
  // without act-order stays inside: 0.2778 for 0.2781, a design choice, not a regression.)
  // The held-out check fails with damping 1e-6 instead of 1% (act-order mlp.c_proj: 1.37x; the
  // retrained checkpoint's largest held-out ratio with 1% is 1.25x).
  struct Band {
    const char* linear;
    const char* scheme;
    double plain, act_order;  // measured ratios
  };
  const Band bands[] = {
      {"h.0.attn.c_attn", "int4-g64", 0.2980, 0.1925},  {"h.0.attn.c_attn", "int4-g128", 0.2961, 0.1885},
      {"h.0.attn.c_attn", "int4-per-channel", 0.2849, 0.1859}, {"h.0.attn.c_attn", "int3-g128", 0.3083, 0.1905},
      {"h.3.mlp.c_proj", "int4-g64", 0.0668, 0.0298},   {"h.3.mlp.c_proj", "int4-g128", 0.0726, 0.0285},
      {"h.3.mlp.c_proj", "int4-per-channel", 0.0475, 0.0240}, {"h.3.mlp.c_proj", "int3-g128", 0.0570, 0.0209},
  };

  const std::vector<std::string> names = {"h.0.attn.c_attn", "h.3.mlp.c_proj"};
  const auto hs = collect_hessians(m, calib, names);
  const auto hh = collect_hessians(m, held, names);
  REQUIRE(hs.size() == names.size());
  const std::vector<LinearInfo> linears = m.linears();
  for (const Band& b : bands) {
    const auto it = std::find_if(linears.begin(), linears.end(), [&](const LinearInfo& l) { return l.name == b.linear; });
    REQUIRE(it != linears.end());
    const LinearInfo& li = *it;
    REQUIRE(hs.at(b.linear).samples() == 32 * len);
    const Eigen::MatrixXd h = hs.at(b.linear).matrix(), h_held = hh.at(b.linear).matrix();  // (in, in)
    const mq::Scheme s = mq::Scheme::parse(b.scheme);
    const mq::QTensor rtn = mq::quantize(li.weight, li.out, li.in, s, b.linear);
    for (bool act_order : {false, true}) {
      mq::GptqOptions o;
      o.act_order = act_order;
      const mq::GptqResult g = mq::gptq_quantize(li.weight, li.out, li.in, h, s, o, b.linear);
      const double ratio = mq::output_error(li.weight, g.q, h) / mq::output_error(li.weight, rtn, h);
      const double ratio_held = mq::output_error(li.weight, g.q, h_held) / mq::output_error(li.weight, rtn, h_held);
      const double expect = act_order ? b.act_order : b.plain;
      // A std::string: doctest prints a const char* as a pointer.
      const std::string label = std::string(b.linear) + " " + b.scheme + (act_order ? " act-order" : "");
      INFO(label << ": GPTQ / RTN output error " << ratio << " (held-out " << ratio_held << "), expected " << expect);
      CHECK(g.damp_retries == 0);  // 1% damping suffices on real activations
      CHECK(g.dead_columns.empty());
      CHECK(ratio > 0.9 * expect);
      CHECK(ratio < 1.1 * expect);
      // Generalisation: measured at most 1.25x the in-sample ratio on the retrained checkpoint (1.20x before).
      CHECK(ratio_held < 1.3 * ratio);
    }
  }
}
