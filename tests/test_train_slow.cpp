// The shipped configs at full size: a short training run on a synthetic stream must learn,
// and a save/load round trip of the result must reproduce its logits exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "minigpt/train.h"
#include "temp_dir.h"

using namespace minigpt;

TEST_CASE("shipped config trains: loss falls well below log(vocab) in 60 steps") {
  const std::string dir = std::string(MQ_SOURCE_DIR) + "/data/";
  const ModelConfig mc = load_model_config(dir + "minigpt.json");
  TrainConfig tc = load_train_config(dir + "train.json");
  tc.steps = 60;
  tc.warmup = 10;
  tc.eval_interval = 0;
  tc.eval_batches = 2;
  tc.checkpoint_path.clear();
  // Learnable synthetic stream over the whole vocabulary: a fixed successor with 10% noise.
  std::mt19937_64 rng(42);
  std::vector<int32_t> s(200000);
  for (size_t i = 1; i < s.size(); ++i)
    s[i] = rng() % 10 == 0 ? static_cast<int32_t>(rng() % mc.vocab_size) : (s[i - 1] * 7 + 3) % mc.vocab_size;
  const std::vector<int32_t> val(s.end() - 20000, s.end());
  s.resize(s.size() - 20000);
  Model m(mc);
  std::vector<StepReport> r;
  train(m, s, val, tc, [&](const StepReport& x) {
    r.push_back(x);
    if (x.step % 10 == 0)
      std::printf("step %d loss %.4f lr %.2e grad norm %.3f %.0f tok/s\n", x.step, x.loss, x.lr, x.grad_norm, x.tokens_per_s);
  });
  REQUIRE(r.size() == 60);
  CHECK(r[0].loss == doctest::Approx(std::log(mc.vocab_size)).epsilon(0.05));
  CHECK(r.back().loss < r[0].loss - 2.0);
  CHECK(r.back().has_val);
  CHECK(r.back().val_loss < r[0].loss - 2.0);

  const std::string p = mqtest::temp_path("mq_test", "minigpt_slow.safetensors");
  save_model(p, m, {});
  const Model l = load_model(p);
  const std::vector<int32_t> tok(val.begin(), val.begin() + 64);
  CHECK(l.logits(tok) == m.logits(tok));
}
