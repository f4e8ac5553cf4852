// Calibration: windows from the held-out stream, and Hessians that equal X X^T / n of the inputs
// a Linear really sees (checked for the first block's QKV against LayerNorm computed by hand).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "miniquant/error.h"
#include "minigpt/calibrate.h"
#include "minigpt/fisher.h"
#include "minigpt/graph.h"
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

TEST_CASE("the Fisher diagonal is the sum over windows of each weight's squared loss gradient (checked by finite differences)") {
  Model m(tiny(), 42);
  NormalSampler noise(11);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.1 * noise.next());
  const std::vector<std::vector<int32_t>> windows = {{1, 5, 9, 2, 16, 3}, {4, 4, 0, 7}};
  const auto f = collect_fisher(m, windows);
  REQUIRE(f.size() == 8);
  for (const LinearInfo& li : m.linears()) {
    const std::vector<float>& v = f.at(li.name);
    REQUIRE(v.size() == static_cast<size_t>(li.out) * li.in);
    CHECK(std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x) && x >= 0.0f; }));
    CHECK(*std::max_element(v.begin(), v.end()) > 0.0f);
  }
  // One window: F = (dL/dw)^2, L its mean cross-entropy. The derivative by central differences in double
  // (the double graph), at the three weights of h.1.mlp.c_fc with the largest F.
  const std::vector<int32_t>& w0 = windows[0];
  const auto f0 = collect_fisher(m, {w0});
  const std::vector<float>& fc = f0.at("h.1.mlp.c_fc");
  const size_t off = m.layout().at("h.1.mlp.c_fc.weight").offset;
  std::vector<double> p(m.params(), m.params() + m.num_params());
  TrainGraph<double> g(m.config(), 1, static_cast<int>(w0.size()) - 1);
  std::vector<size_t> idx(fc.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::partial_sort(idx.begin(), idx.begin() + 3, idx.end(), [&](size_t a, size_t b) { return fc[a] > fc[b]; });
  for (int k = 0; k < 3; ++k) {
    const size_t i = off + idx[static_cast<size_t>(k)];
    const double h = 1e-4, keep = p[i];
    p[i] = keep + h;
    const double up = g.forward(p.data(), w0.data(), w0.data() + 1);
    p[i] = keep - h;
    const double down = g.forward(p.data(), w0.data(), w0.data() + 1);
    p[i] = keep;
    const double d = (up - down) / (2 * h);
    CAPTURE(k);
    CHECK(std::sqrt(double(fc[idx[static_cast<size_t>(k)]])) == doctest::Approx(std::fabs(d)).epsilon(1e-3));
  }
  // Sums over windows: the two windows' diagonals add up.
  const auto f1 = collect_fisher(m, {windows[1]});
  for (size_t i = 0; i < fc.size(); i += 97)
    CHECK(f.at("h.1.mlp.c_fc")[i] == doctest::Approx(double(fc[i]) + f1.at("h.1.mlp.c_fc")[i]).epsilon(1e-5));
  CHECK_THROWS_AS(collect_fisher(m, {}), mq::UsageError);
  CHECK_THROWS_AS(collect_fisher(m, {{3}}), mq::UsageError);
  CHECK_THROWS_AS(collect_fisher(m, {std::vector<int32_t>(18, 1)}), mq::UsageError);
}
