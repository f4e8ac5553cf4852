// GPTQ: equals round-to-nearest when H = I, matches an independent sequential (OBS) solver,
// sits between the brute-force optimum and RTN, beats RTN inside a band on correlated inputs,
// and survives dead columns, rank-deficient and indefinite Hessians.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "miniquant/error.h"
#include "miniquant/gptq.h"
#include "miniquant/grid_search.h"
#include "miniquant/hessian.h"
#include "miniquant/quantize_detail.h"
#include "miniquant/random.h"

using namespace mq;

namespace {

// n samples of width `in` with correlated features of uneven scale, as Linear inputs are.
std::vector<float> correlated_inputs(int64_t n, int64_t in, uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd mix(in, in);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j < in; ++j) mix(i, j) = rng.normal() / std::sqrt(static_cast<double>(in));
  mix += Eigen::MatrixXd::Identity(in, in);
  std::vector<double> scale(static_cast<size_t>(in));
  for (auto& s : scale) s = std::exp(rng.normal());
  std::vector<float> x(static_cast<size_t>(n * in));
  Eigen::VectorXd z(in);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < in; ++j) z(j) = rng.normal();
    const Eigen::VectorXd v = mix * z;
    for (int64_t j = 0; j < in; ++j) x[static_cast<size_t>(t * in + j)] = static_cast<float>(v(j) * scale[static_cast<size_t>(j)]);
  }
  return x;
}

Eigen::MatrixXd hessian_of(const std::vector<float>& x, int64_t n, int64_t in) {
  Hessian h(in);
  h.add(x.data(), n / 2);  // two batches: accumulation must not depend on batching
  h.add(x.data() + (n / 2) * in, n - n / 2);
  return h.matrix();
}

void check_same_codes(const QTensor& a, const QTensor& b) {
  CHECK(a.codes == b.codes);
  CHECK(a.scales == b.scales);
  CHECK(a.zeros == b.zeros);
}

}  // namespace

TEST_CASE("Hessian accumulation equals X^T X / n") {
  const int64_t n = 37, in = 8;
  const std::vector<float> x = correlated_inputs(n, in, 1);
  const Eigen::MatrixXd h = hessian_of(x, n, in);
  Eigen::MatrixXd ref = Eigen::MatrixXd::Zero(in, in);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < in; ++j) ref(i, j) += double(x[t * in + i]) * x[t * in + j] / n;
  CHECK((h - ref).cwiseAbs().maxCoeff() < 1e-12 * ref.cwiseAbs().maxCoeff());
  const HessianStats st = hessian_stats(h, n);
  CHECK(st.trace == doctest::Approx(ref.trace()));
  CHECK(st.dead_columns.empty());
  CHECK(st.condition > 1.0);
  CHECK(st.offdiag_fraction > 0.0);
  CHECK(st.offdiag_fraction < 1.0);
  CHECK_THROWS_AS(Hessian(4).matrix(), Error);
}

TEST_CASE("with H = I GPTQ is round-to-nearest, byte for byte") {
  const int64_t rows = 24, cols = 256;
  const std::vector<float> w = gaussian_matrix(rows, cols, 42);
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(cols, cols);
  // std::string, not const char*: doctest prints a const char* variable as a pointer.
  for (const std::string name : {"int4-g64", "int4-g128-asym", "int8-per-channel", "int3-g64", "int4-per-tensor", "int2-g64-asym"}) {
    CAPTURE(name);
    const Scheme s = Scheme::parse(name);
    for (bool act_order : {false, true}) {
      GptqOptions o;
      o.act_order = act_order;
      check_same_codes(gptq_quantize(w.data(), rows, cols, I, s, o).q, quantize_ref(w.data(), rows, cols, s));
    }
  }
}

TEST_CASE("GPTQ runs a grid chooser on its groups: search_grid given as one is the -search grid, byte for byte") {
  const int64_t rows = 16, cols = 128, n = 512;
  const std::vector<float> w = gaussian_matrix(rows, cols, 7);
  const std::vector<float> x = correlated_inputs(n, cols, 8);
  const Eigen::MatrixXd h = hessian_of(x, n, cols);
  for (const std::string name : {"int4-g32", "int3-g64-asym", "int4-per-channel"}) {
    CAPTURE(name);
    const Scheme s = Scheme::parse(name);
    for (bool act_order : {false, true}) {
      GptqOptions searched;
      searched.act_order = act_order;
      searched.search = Search::plain;
      GptqOptions chosen = searched;
      chosen.search = Search::none;
      chosen.grid = &search_grid;
      check_same_codes(gptq_quantize(w.data(), rows, cols, h, s, chosen).q, gptq_quantize(w.data(), rows, cols, h, s, searched).q);
    }
  }
  GptqOptions k;
  k.grid = &search_grid;
  CHECK_THROWS_AS(gptq_quantize(w.data(), rows, cols, h, Scheme::parse("q4_k"), k), UsageError);
}

TEST_CASE("GPTQ matches an independent sequential optimal-brain-quantizer update") {
  // The textbook form: quantize column j, spread its error with H^-1, then drop j from H^-1 by a
  // Schur complement. GPTQ's Cholesky form must give the same codes.
  const int64_t rows = 5, cols = 12, n = 64;
  const std::vector<float> x = correlated_inputs(n, cols, 3);
  const Eigen::MatrixXd h = hessian_of(x, n, cols);
  const std::vector<float> w = gaussian_matrix(rows, cols, 4);
  for (const std::string name : {"int4-per-channel", "int3-per-channel-asym"}) {
    CAPTURE(name);
    const Scheme s = Scheme::parse(name);
    GptqOptions o;
    o.block = 5;  // several lazy blocks, one of them partial
    const QTensor q = gptq_quantize(w.data(), rows, cols, h, s, o).q;

    Eigen::MatrixXd hd = h;
    hd.diagonal().array() += o.percdamp * h.diagonal().mean();
    for (int64_t r = 0; r < rows; ++r) {
      const Grid grid = detail::grid_for(w.data() + r * cols, cols, s, "w", r);
      Eigen::VectorXd wr(cols);
      for (int64_t j = 0; j < cols; ++j) wr(j) = w[r * cols + j];
      Eigen::MatrixXd hinv = hd.inverse();
      for (int64_t j = 0; j < cols; ++j) {
        const uint8_t u = encode(static_cast<float>(wr(j)), grid, s);
        REQUIRE(int(u) == q.field_at(r, j));
        const double deq = grid.scale * static_cast<float>(u - grid.zero);
        const double e = (wr(j) - deq) / hinv(j, j);
        for (int64_t k = j + 1; k < cols; ++k) wr(k) -= e * hinv(j, k);
        hinv -= hinv.col(j) * hinv.row(j) / hinv(j, j);
      }
    }
  }
}

TEST_CASE("on a tiny problem GPTQ lies between the brute-force optimum and round-to-nearest") {
  // One row, 7 columns, int2 per-channel: codes in {-1, 0, 1} on a fixed grid, 3^7 combinations.
  const int64_t cols = 7, n = 40;
  const std::vector<float> x = correlated_inputs(n, cols, 11);
  const Eigen::MatrixXd h = hessian_of(x, n, cols);
  const std::vector<float> w = gaussian_matrix(1, cols, 12);
  const Scheme s = Scheme::parse("int2-per-channel");
  const QTensor rtn = quantize_ref(w.data(), 1, cols, s);
  const QTensor gq = gptq_quantize(w.data(), 1, cols, h, s).q;
  const double step = rtn.scale_at(0, 0);
  double best = std::numeric_limits<double>::infinity();
  for (int code = 0; code < 2187; ++code) {
    Eigen::VectorXd e(cols);
    for (int64_t j = 0, c = code; j < cols; ++j, c /= 3) e(j) = w[j] - step * static_cast<double>(c % 3 - 1);
    best = std::min(best, e.dot(h * e));
  }
  const double e_gptq = output_error(w.data(), gq, h), e_rtn = output_error(w.data(), rtn, h);
  INFO("optimum " << best << ", GPTQ " << e_gptq << ", RTN " << e_rtn);
  CHECK(best <= e_gptq * (1 + 1e-12));
  CHECK(e_gptq < e_rtn);
}

TEST_CASE("GPTQ beats round-to-nearest on correlated inputs, inside a band") {
  // Measured at seed 42: int4-g64 0.652 / 0.345 (act-order), int4-g128 0.656 / 0.347, int4
  // per-channel 0.635 / 0.343, int3-g64 0.838 / 0.356, int4-g64-asym 0.673 / 0.349. The inputs'
  // scales vary by e^N(0,1), which is why act-order gains so much here. Each band is the measured
  // value +-25%: a ratio near 1 means the error propagation stopped working; one far below means
  // the objective or its measurement changed and needs a look.
  const int64_t rows = 64, cols = 256, n = 2048;
  const std::vector<float> x = correlated_inputs(n, cols, 42);
  const Eigen::MatrixXd h = hessian_of(x, n, cols);
  const std::vector<float> w = gaussian_matrix(rows, cols, 43);
  struct Band {
    const char* scheme;
    double plain, act_order;  // measured ratios
  };
  for (const Band& b : {Band{"int4-g64", 0.652, 0.345}, Band{"int4-g128", 0.656, 0.347},
                        Band{"int4-per-channel", 0.635, 0.343}, Band{"int3-g64", 0.838, 0.356},
                        Band{"int4-g64-asym", 0.673, 0.349}}) {
    const Scheme s = Scheme::parse(b.scheme);
    for (bool act_order : {false, true}) {
      GptqOptions o;
      o.act_order = act_order;
      const double ratio = output_error(w.data(), gptq_quantize(w.data(), rows, cols, h, s, o).q, h) /
                           output_error(w.data(), quantize_ref(w.data(), rows, cols, s), h);
      const double expect = act_order ? b.act_order : b.plain;
      const std::string label = std::string(b.scheme) + (act_order ? " act-order" : "");  // not a const char*: see above
      INFO(label << ": GPTQ / RTN output error = " << ratio);
      CHECK(ratio > 0.75 * expect);
      CHECK(ratio < std::min(1.0, 1.25 * expect));
    }
  }
}

TEST_CASE("dead columns, rank-deficient and indefinite Hessians: no NaN, a clear account") {
  const int64_t rows = 8, cols = 64;
  const std::vector<float> w = gaussian_matrix(rows, cols, 5);
  const Scheme s = Scheme::parse("int4-g32");

  // Rank-deficient: fewer samples than inputs; and input 3 never fires (a dead column).
  std::vector<float> x = correlated_inputs(16, cols, 6);
  for (int64_t t = 0; t < 16; ++t) x[t * cols + 3] = 0.0f;
  const Eigen::MatrixXd h = hessian_of(x, 16, cols);
  const GptqResult r = gptq_quantize(w.data(), rows, cols, h, s);
  CHECK(r.dead_columns == std::vector<int64_t>{3});
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] == "1 dead input column(s) (diag(H) = 0): their weights are set to 0");
  for (int64_t i = 0; i < rows; ++i) CHECK(r.q.value_at(i, 3) == 0.0f);
  CHECK(std::isfinite(output_error(w.data(), r.q, h)));
  CHECK(std::isfinite(r.proxy_loss));

  // Indefinite (a negative eigenvalue, as rounding can produce): 1% damping is not enough.
  Eigen::VectorXd v = Eigen::VectorXd::Ones(cols) / std::sqrt(double(cols));
  const Eigen::MatrixXd bad = Eigen::MatrixXd::Identity(cols, cols) - 1.05 * v * v.transpose();
  const GptqResult d = gptq_quantize(w.data(), rows, cols, bad, s);
  CHECK(d.damp_retries == 1);
  CHECK(d.percdamp_used == doctest::Approx(0.1));
  REQUIRE(!d.notes.empty());
  CHECK(d.notes[0] == "Cholesky failed with damping 0.01; retrying with 0.1");
  CHECK(std::isfinite(output_error(w.data(), d.q, bad)));

  // All-zero rows stay zero.
  std::vector<float> wz = w;
  std::fill(wz.begin() + 2 * cols, wz.begin() + 3 * cols, 0.0f);
  const QTensor qz = gptq_quantize(wz.data(), rows, cols, h, s).q;
  for (int64_t c = 0; c < cols; ++c) CHECK(qz.value_at(2, c) == 0.0f);
}

TEST_CASE("bad GPTQ inputs are named") {
  const std::vector<float> w = gaussian_matrix(4, 64, 1);
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(64, 64);
  CHECK_THROWS_WITH_AS(gptq_quantize(w.data(), 4, 64, I, Scheme::fp16(), {}, "h.0.mlp.c_fc"),
                       "GPTQ on 'h.0.mlp.c_fc': scheme fp16 stores floats; GPTQ needs an integer grid", UsageError);
  CHECK_THROWS_WITH_AS(gptq_quantize(w.data(), 4, 64, Eigen::MatrixXd::Identity(32, 32), Scheme::parse("int4-g32"), {}, "x"),
                       "GPTQ on 'x': Hessian is 32x32 but the weight has 64 input columns", UsageError);
  Eigen::MatrixXd nan = I;
  nan(1, 2) = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(gptq_quantize(w.data(), 4, 64, nan, Scheme::parse("int4-g32"), {}, "x"),
                       "GPTQ on 'x': the Hessian holds NaN or Inf", Error);
  CHECK_THROWS_AS(gptq_quantize(w.data(), 4, 64, I, Scheme::parse("int4-g128"), {}, "x"), UsageError);
}
