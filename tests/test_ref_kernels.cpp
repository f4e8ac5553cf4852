// The reference GEMV/GEMM against fp64 dot products, with tolerances derived from the scales.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "miniquant/kernels/ref.h"
#include "miniquant/random.h"

using namespace mq;

namespace {

// Bound on float accumulation error of an n-term dot product: gamma_n = n u / (1 - n u), u = 2^-24.
double gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u);
}

}  // namespace

TEST_CASE("quantized dot products agree with fp64 within the quantization bound") {
  for (const Scheme& s : scheme_table()) {
    for (int64_t cols : {int64_t{128}, int64_t{256}, int64_t{384}, int64_t{512}}) {
      if (s.is_kquant() && cols % kSuperBlock != 0) continue;
      const int64_t rows = 17;
      CAPTURE(s.name());
      CAPTURE(cols);
      const std::vector<float> w = gaussian_matrix(rows, cols, 42 + static_cast<uint64_t>(cols));
      const std::vector<float> x = gaussian_matrix(1, cols, 7);
      const QTensor q = quantize(w.data(), rows, cols, s);
      std::vector<float> y(static_cast<size_t>(rows));
      gemv_ref(q, x.data(), y.data());
      double worst = 0.0;  // error / bound, reported so a near miss is visible
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0.0, dq = 0.0, quant_bound = 0.0, mag = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          exact += double(w[r * cols + c]) * x[c];
          dq += double(q.value_at(r, c)) * x[c];
          mag += std::fabs(double(q.value_at(r, c)) * x[c]);
          // Each weight is off by at most half its step (float schemes: half an ulp, relative).
          const double half_step = s.is_integer() ? 0.5 * q.scale_at(r, c)
                                   : s.kind == Kind::fp16 ? std::fabs(w[r * cols + c]) * std::ldexp(1.0, -11) + std::ldexp(1.0, -25)
                                   : s.kind == Kind::bf16 ? std::fabs(w[r * cols + c]) * std::ldexp(1.0, -8)
                                                           : 0.0;
          quant_bound += half_step * std::fabs(x[c]);
        }
        // Two-level float sums (per group, then across groups), plus one rounding per scale product.
        const double float_bound = gamma(cols + 2) * mag * 1.01 + 1e-30;
        REQUIRE(std::fabs(y[r] - dq) <= float_bound);  // the kernel computes the dequantized dot
        worst = std::max(worst, std::fabs(y[r] - exact) / (quant_bound + float_bound));
      }
      // K grids come from a search that may clip a weight to lower the block's error: no per-weight bound
      // holds for them (test_kquant checks their error in distribution); the dot above is still exact.
      if (!s.is_kquant()) CHECK(worst <= 1.0);
    }
  }
}

TEST_CASE("gemm_ref is gemv_ref per token") {
  const int64_t rows = 9, cols = 128, n = 5;
  const std::vector<float> w = gaussian_matrix(rows, cols, 1);
  const std::vector<float> x = gaussian_matrix(n, cols, 2);
  const QTensor q = quantize(w.data(), rows, cols, Scheme::integer(4, 64));
  std::vector<float> y(static_cast<size_t>(n * rows)), yv(static_cast<size_t>(rows));
  gemm_ref(q, x.data(), n, y.data());
  for (int64_t t = 0; t < n; ++t) {
    gemv_ref(q, x.data() + t * cols, yv.data());
    for (int64_t r = 0; r < rows; ++r) REQUIRE(y[t * rows + r] == yv[r]);
  }
}
