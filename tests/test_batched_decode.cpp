// Batched decode of B sequences with their own KV caches equals B single-token forwards, for the
// fp32 path and a quantized dynamic-int8 path, and refuses full caches and bad tokens.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "miniquant/error.h"
#include "miniquant/random.h"
#include "minigpt/batched_decode.h"
#include "minigpt/quantize_model.h"

using namespace minigpt;

namespace {

const ModelConfig kTiny{.vocab_size = 61, .n_ctx = 32, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512};

// Prefills three sequences of different lengths, then decodes `steps` tokens both ways and returns
// the largest |batched - single| over all logits, relative to the largest |logit|.
double batched_vs_single(const Model& m, int steps) {
  const std::vector<int> lens = {3, 9, 5};
  mq::Rng rng(42);
  std::vector<KVCache> single, batched;
  std::vector<std::vector<int32_t>> next(lens.size());
  for (size_t b = 0; b < lens.size(); ++b) {
    std::vector<int32_t> prompt(static_cast<size_t>(lens[b]));
    for (auto& t : prompt) t = static_cast<int32_t>(rng.below(kTiny.vocab_size));
    single.push_back(m.make_cache());
    batched.push_back(make_cache(m, lens[b] + steps));  // just enough room
    m.forward(single.back(), prompt.data(), lens[b], nullptr);
    m.forward(batched.back(), prompt.data(), lens[b], nullptr);
    for (int s = 0; s < steps; ++s) next[b].push_back(static_cast<int32_t>(rng.below(kTiny.vocab_size)));
  }
  std::vector<KVCache*> ptrs;
  for (auto& c : batched) ptrs.push_back(&c);
  const int B = static_cast<int>(lens.size()), V = kTiny.vocab_size;
  double worst = 0, scale = 0;
  std::vector<float> lb(static_cast<size_t>(B) * V), ls(static_cast<size_t>(V));
  for (int s = 0; s < steps; ++s) {
    std::vector<int32_t> toks;
    for (int b = 0; b < B; ++b) toks.push_back(next[b][s]);
    decode_batch(m, ptrs, toks.data(), lb.data());
    for (int b = 0; b < B; ++b) {
      m.forward(single[b], &toks[b], 1, ls.data());
      CHECK(batched[b].length == single[b].length);
      for (int v = 0; v < V; ++v) {
        worst = std::max(worst, static_cast<double>(std::abs(lb[static_cast<size_t>(b) * V + v] - ls[v])));
        scale = std::max(scale, static_cast<double>(std::abs(ls[v])));
      }
    }
  }
  REQUIRE(scale > 0);
  return worst / scale;
}

}  // namespace

TEST_CASE("batched decode equals B single decodes: fp32") {
  const Model m(kTiny, 42);
  const double rel = batched_vs_single(m, 6);
  CHECK(rel < 1e-5);
}

TEST_CASE("batched decode equals B single decodes: int8 weights, dynamic int8 activations") {
  Model m(kTiny, 42);
  quantize_model(m, QuantPlan::uniform("int8-per-channel+a8"));
  // Per-token activation scales: each row quantizes alone, so batching changes only summation order.
  const double rel = batched_vs_single(m, 4);
  CHECK(rel < 1e-4);
}

TEST_CASE("batched decode refuses a full cache, a bad token, a mismatched cache") {
  const Model m(kTiny, 42);
  KVCache c = make_cache(m, 2);
  std::vector<KVCache*> ptrs = {&c};
  std::vector<float> logits(kTiny.vocab_size);
  int32_t t = 5;
  decode_batch(m, ptrs, &t, logits.data());
  decode_batch(m, ptrs, &t, logits.data());
  CHECK(c.length == 2);
  CHECK_THROWS_WITH_AS(decode_batch(m, ptrs, &t, logits.data()), doctest::Contains("no room for one more"), mq::UsageError);
  KVCache d = make_cache(m, 4);
  ptrs = {&d};
  t = kTiny.vocab_size;
  CHECK_THROWS_WITH_AS(decode_batch(m, ptrs, &t, logits.data()), doctest::Contains("outside [0, 61)"), mq::UsageError);
  KVCache e;
  ptrs = {&e};
  t = 1;
  CHECK_THROWS_AS(decode_batch(m, ptrs, &t, logits.data()), mq::UsageError);
  CHECK_THROWS_AS(decode_batch(m, {}, &t, logits.data()), mq::UsageError);
  CHECK_THROWS_AS(make_cache(m, 0), mq::UsageError);
  CHECK_THROWS_AS(make_cache(m, kTiny.n_ctx + 1), mq::UsageError);
}
