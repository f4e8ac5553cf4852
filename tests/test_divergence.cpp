// The divergence measures: KL of hand-made distributions, KL >= 0 and exact zeros, the streamed pass
// against a direct double-precision computation on tiny models, top-1 agreement, the perplexity it
// yields against perplexity(), and the paired margin change on hand-made slot margins.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "experiments/divergence.h"
#include "experiments/intervals.h"
#include "miniquant/error.h"
#include "miniquant/random.h"
#include "minigpt/eval.h"
#include "minigpt/params.h"
#include "minigpt/tokenizer.h"

using namespace mqexp;

namespace {

minigpt::ModelConfig tiny(int vocab, int n_ctx) {
  return minigpt::ModelConfig{.vocab_size = vocab, .n_ctx = n_ctx, .d_model = 128, .n_layer = 1, .n_head = 2, .d_ff = 512};
}

minigpt::Model random_model(const minigpt::ModelConfig& c, uint64_t noise_seed, double scale) {
  minigpt::Model m(c, 42);
  minigpt::NormalSampler n(noise_seed);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(scale * n.next());
  return m;
}

std::vector<double> lsm(const std::vector<float>& row) {
  std::vector<double> out(row.size());
  log_softmax(row.data(), static_cast<int>(row.size()), out.data());
  return out;
}

}  // namespace

TEST_CASE("KL of hand-made distributions matches the hand computation") {
  // p = (1/2, 1/2), q = (9/10, 1/10): KL(p || q) = 1/2 ln(5/9) + 1/2 ln 5 = 1/2 ln(25/9).
  const auto lp = lsm({std::log(0.5f), std::log(0.5f)});
  const auto lq = lsm({std::log(0.9f) + 3.0f, std::log(0.1f) + 3.0f});  // a shift of the logits changes nothing
  CHECK(kl_divergence(lp.data(), lq.data(), 2) == doctest::Approx(0.5 * std::log(25.0 / 9.0)).epsilon(1e-6));
  CHECK(kl_divergence(lq.data(), lp.data(), 2) ==
        doctest::Approx(0.9 * std::log(0.9 / 0.5) + 0.1 * std::log(0.1 / 0.5)).epsilon(1e-6));
  // Three outcomes, one of them almost impossible under q: p (0.7, 0.2, 0.1), q (0.5, 0.4999, 1e-4).
  const auto lp3 = lsm({std::log(0.7f), std::log(0.2f), std::log(0.1f)});
  const auto lq3 = lsm({std::log(0.5f), std::log(0.4999f), std::log(1e-4f)});
  const double want = 0.7 * std::log(0.7 / 0.5) + 0.2 * std::log(0.2 / 0.4999) + 0.1 * std::log(0.1 / 1e-4);
  CHECK(kl_divergence(lp3.data(), lq3.data(), 3) == doctest::Approx(want).epsilon(1e-5));
}

TEST_CASE("log-softmax survives huge logits and KL is >= 0 up to rounding, 0 for identical rows") {
  mq::Rng rng(42);
  const int V = 1963;
  std::vector<float> a(V), b(V);
  for (int trial = 0; trial < 200; ++trial) {
    const float offset = trial % 2 ? 1e4f : -50.0f;  // exp(1e4) overflows without the max subtraction
    const float spread = trial % 3 == 0 ? 30.0f : 2.0f;
    for (int j = 0; j < V; ++j) {
      a[static_cast<size_t>(j)] = offset + spread * static_cast<float>(rng.normal());
      // b: a near copy (the quantized case: KL ~ 1e-6) or an independent row (KL ~ 1)
      b[static_cast<size_t>(j)] = trial % 4 == 0 ? offset + spread * static_cast<float>(rng.normal())
                                                 : a[static_cast<size_t>(j)] + 1e-3f * static_cast<float>(rng.normal());
    }
    const auto la = lsm(a), lb = lsm(b);
    double total = 0;
    for (double v : la) {
      CHECK(std::isfinite(v));
      total += std::exp(v);
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
    const double kl = kl_divergence(la.data(), lb.data(), V);
    CHECK(std::isfinite(kl));
    CHECK(kl >= -1e-12);
    CHECK(kl_divergence(la.data(), la.data(), V) == 0.0);
  }
}

TEST_CASE("the pass against a direct double-precision computation on tiny models") {
  const int V = 23, n_ctx = 16;
  const minigpt::ModelConfig c = tiny(V, n_ctx);
  const minigpt::Model ref = random_model(c, 3, 0.05);
  const minigpt::Model same = random_model(c, 3, 0.05);      // another object with the same weights
  const minigpt::Model other = random_model(c, 3, 0.05);
  minigpt::Model perturbed = random_model(c, 3, 0.05);
  {
    minigpt::NormalSampler n(9);
    for (size_t i = 0; i < perturbed.num_params(); ++i) perturbed.params()[i] += static_cast<float>(0.01 * n.next());
  }
  (void)other;
  mq::Rng rng(5);
  std::vector<int32_t> stream(101);
  for (auto& t : stream) t = static_cast<int32_t>(rng.below(V));
  const int window = 16, stride = 8;
  const auto passes = divergence_pass(ref, {&ref, &same, &perturbed}, stream, window, stride);
  REQUIRE(passes.size() == 3);

  // A model against itself: KL exactly 0 everywhere, every argmax agrees, ΔPPL exactly 0.
  for (int k : {0, 1}) {
    const DivergencePass& p = passes[static_cast<size_t>(k)];
    CHECK(p.kl.size() == stream.size());
    CHECK(std::all_of(p.kl.begin(), p.kl.end(), [](double v) { return v == 0.0; }));
    CHECK(p.top1_agree == static_cast<long long>(stream.size()));
    const Divergence d = summarize_divergence(p, "ref");
    CHECK(d.kl_mean == 0.0);
    CHECK(d.kl_max == 0.0);
    CHECK(d.top1 == 1.0);
    CHECK(d.dppl == 0.0);
    CHECK(d.dnll_low == 0.0);
  }

  // The perplexity the pass yields is perplexity()'s, bit for bit.
  const minigpt::PerplexityResult pr = minigpt::perplexity(perturbed, stream, window, stride);
  const minigpt::PerplexityResult pr_ref = minigpt::perplexity(ref, stream, window, stride);
  const DivergencePass& p = passes[2];
  const double n = static_cast<double>(stream.size());
  CHECK(-p.logp_model / n == pr.nats_per_token);
  CHECK(-p.logp_reference / n == pr_ref.nats_per_token);

  // Direct: every target t of s = <sep> + stream from the window that scores it, KL in long double
  // from the whole-sequence logits of both models (Model::logits, not the pass's cache).
  std::vector<int32_t> s{minigpt::Tokenizer::kSepId};
  s.insert(s.end(), stream.begin(), stream.end());
  long double kl_sum = 0;
  long long agree = 0, scored = 0;
  std::vector<double> kl_tok(stream.size(), -1.0);
  for (const auto& w : minigpt::score_windows(static_cast<int64_t>(s.size()), window, stride)) {
    const std::vector<int32_t> prefix(s.begin() + w.begin, s.begin() + w.end - 1);
    // Inside an active parallel region, as in the pass: nested regions then run on one thread and the
    // kernels split their sums the same way (a two-thread GEMM rounds differently, ~1e-7 of a logit).
    std::vector<float> a, b;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
      a = ref.logits(prefix);
      b = perturbed.logits(prefix);
    }
    for (int64_t t = w.first; t < w.end; ++t) {
      const size_t r = static_cast<size_t>(t - 1 - w.begin) * V;
      long double za = 0, zb = 0;
      for (int j = 0; j < V; ++j) {
        za += std::exp(static_cast<long double>(a[r + j]));
        zb += std::exp(static_cast<long double>(b[r + j]));
      }
      long double kl = 0;
      for (int j = 0; j < V; ++j) {
        const long double pa = std::exp(static_cast<long double>(a[r + j])) / za;
        const long double pb = std::exp(static_cast<long double>(b[r + j])) / zb;
        kl += pa * std::log(pa / pb);
      }
      kl_tok[static_cast<size_t>(t - 1)] = static_cast<double>(kl);
      kl_sum += kl;
      agree += std::max_element(a.begin() + r, a.begin() + r + V) - (a.begin() + r) ==
               std::max_element(b.begin() + r, b.begin() + r + V) - (b.begin() + r);
      ++scored;
    }
  }
  REQUIRE(scored == static_cast<long long>(stream.size()));
  for (size_t i = 0; i < kl_tok.size(); ++i) {
    CAPTURE(i);
    CHECK(p.kl[i] > 0.0);
    CHECK(p.kl[i] == doctest::Approx(kl_tok[i]).epsilon(1e-9));
  }
  const Divergence d = summarize_divergence(p, "ref");
  CHECK(d.kl_mean == doctest::Approx(static_cast<double>(kl_sum / scored)).epsilon(1e-9));
  CHECK(d.kl_mean > 0);
  CHECK(d.kl_low < d.kl_mean);
  CHECK(d.kl_high > d.kl_mean);
  CHECK(d.kl_median <= d.kl_p99);
  CHECK(d.kl_p99 <= d.kl_max);
  CHECK(d.kl_max == doctest::Approx(*std::max_element(kl_tok.begin(), kl_tok.end())).epsilon(1e-9));
  CHECK(d.top1 == doctest::Approx(static_cast<double>(agree) / static_cast<double>(scored)));
  CHECK(d.top1 < 1.0);  // the perturbation flips some argmaxes of this near-uniform tiny model
  CHECK(d.tokens == scored);
  CHECK(d.dppl == doctest::Approx(pr.ppl - pr_ref.ppl).epsilon(1e-12));
  CHECK(d.dppl_low <= d.dppl);
  CHECK(d.dppl_high >= d.dppl);
  CHECK_THROWS_AS(divergence_pass(ref, {&ref}, stream, 18, 8), mq::UsageError);
}

TEST_CASE("paired margin change and flips on hand-made slot margins") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // ref:   2.0  1.0  -0.5  3.0  NaN  0.5
  // model: 1.5 -0.2   0.3  3.0  1.0  NaN     -> paired diffs -0.5 -1.2 0.8 0.0 (4 slots)
  Divergence d;
  add_margin_change(d, {2.0, 1.0, -0.5, 3.0, nan, 0.5}, {1.5, -0.2, 0.3, 3.0, 1.0, nan});
  CHECK(d.margin_slots == 4);
  CHECK(d.dmargin_mean == doctest::Approx(-0.225));
  // sample sd of (-0.5, -1.2, 0.8, 0): mean -0.225, squares 0.075625 + 0.950625 + 1.050625 + 0.050625 = 2.1275
  const double se = std::sqrt(2.1275 / 3.0 / 4.0);
  CHECK(d.dmargin_low == doctest::Approx(-0.225 - kZ95 * se));
  CHECK(d.dmargin_high == doctest::Approx(-0.225 + kZ95 * se));
  CHECK(d.flipped_to_wrong == 1);  // slot 1
  CHECK(d.flipped_to_right == 1);  // slot 2
  CHECK_THROWS_AS(add_margin_change(d, {1.0}, {1.0, 2.0}), mq::UsageError);
}
