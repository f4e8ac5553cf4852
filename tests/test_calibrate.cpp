// Calibration: windows from the held-out stream, and Hessians that equal X X^T / n of the inputs
// a Linear really sees (checked for the first block's QKV against LayerNorm computed by hand).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "miniquant/error.h"
#include "minigpt/calibrate.h"
#include "minigpt/ops.h"
#include "minigpt/params.h"

using namespace minigpt;

namespace {
ModelConfig tiny() { return ModelConfig{.vocab_size = 17, .n_ctx = 16, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512}; }
}  // namespace

TEST_CASE("calibration windows are consecutive slices, and too little data is an error") {
  std::vector<int32_t> s(100);
  for (int i = 0; i < 100; ++i) s[i] = i;
  const auto w = calibration_windows(s, 3, 30);
  REQUIRE(w.size() == 3);
  CHECK(w[1].front() == 30);
  CHECK(w[2].back() == 89);
  CHECK_THROWS_WITH_AS(calibration_windows(s, 4, 30), "calibration: 4 windows of 30 tokens need 120 tokens, the split has 100",
                       mq::UsageError);
}

TEST_CASE("the first QKV projection's Hessian is that of LayerNorm(embedding + position)") {
  Model m(tiny(), 42);
  NormalSampler noise(9);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.1 * noise.next());
  std::vector<std::vector<int32_t>> windows = {{1, 5, 9, 2, 16, 3}, {4, 4, 0, 7}};
  auto hs = collect_hessians(m, windows);
  CHECK(hs.size() == 8);
  for (const auto& [name, h] : hs) CHECK(h.samples() == 10);

  const int d = 128;
  Eigen::MatrixXd ref = Eigen::MatrixXd::Zero(d, d);
  const float* wte = m.param("wte");
  const float* wpe = m.param("wpe");
  const float* g = m.param("h.0.ln_1.weight");
  const float* b = m.param("h.0.ln_1.bias");
  for (const auto& w : windows)
    for (size_t p = 0; p < w.size(); ++p) {
      Eigen::VectorXd x(d);
      for (int j = 0; j < d; ++j) x(j) = double(wte[w[p] * d + j]) + wpe[p * d + j];
      const double mean = x.mean();
      const double var = (x.array() - mean).square().mean();
      Eigen::VectorXd y(d);
      for (int j = 0; j < d; ++j) y(j) = (x(j) - mean) / std::sqrt(var + ops::kLayerNormEps) * g[j] + b[j];
      ref += y * y.transpose() / 10.0;
    }
  const Eigen::MatrixXd got = hs.at("h.0.attn.c_attn").matrix();
  CHECK((got - ref).cwiseAbs().maxCoeff() < 1e-5 * ref.cwiseAbs().maxCoeff());
  // The hook is removed afterwards: another pass adds nothing.
  m.logits(windows[0]);
  CHECK(hs.at("h.0.attn.c_attn").samples() == 10);
}
