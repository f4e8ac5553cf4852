// The dynamic kernels' activation codes as they multiply them, for the tests' float-rounding bounds.
#pragma once
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"

namespace actcodes {

// Quantizes one token x (cols) as `act` does and returns s_x; mag (cols) gets each code's magnitude as
// the integer dots see it: |a_i| for int8 codes, 256 |h_i| + |l_i| for 16-bit codes (the two int8
// halves of split_act16, each scaled on its own), so sum_i |w_i| mag_i s_x scales the rounding error.
inline double quantize_magnitudes(const float* x, int64_t cols, mq::ActMode act, std::vector<double>& mag) {
  mag.assign(static_cast<size_t>(cols), 0.0);
  if (act == mq::ActMode::dynamic_int16) {
    std::vector<int16_t> a(static_cast<size_t>(cols));
    const double sx = mq::quantize_activations16(x, cols, a.data());
    for (int64_t k = 0; k < cols; ++k) {
      int8_t h = 0, l = 0;
      mq::split_act16(a[k], h, l);
      mag[k] = 256.0 * std::abs(h) + std::abs(l);
    }
    return sx;
  }
  std::vector<int8_t> a(static_cast<size_t>(cols));
  const double sx = mq::quantize_activations(x, cols, a.data());
  for (int64_t k = 0; k < cols; ++k) mag[k] = std::abs(a[k]);
  return sx;
}

// gamma_k = k u / (1 - k u), u = 2^-24: the classic bound on k float roundings.
inline double gamma(int64_t k) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(k) * u / (1.0 - static_cast<double>(k) * u);
}

// The dynamic kernels' bound against gemm_dynamic_ref per output, (n, q.rows): the exact int32 group dot meets
// one int -> float rounding, one fma per group and the token scale: gamma(2 gpr + 2) of
// sum_i s |u_i - z| |a_i| * s_x. 16-bit: each half (h with scale 256 s_x, l with s_x) meets that, then their sum
// one more rounding: gamma(2 gpr + 3) of sum_i s |u_i - z| (256 |h_i| + |l_i|) * s_x. x: (n, q.cols).
inline std::vector<double> dynamic_bounds(const mq::QTensor& q, const float* x, int64_t n, mq::ActMode act) {
  const int64_t rows = q.rows, cols = q.cols, gpr = q.scheme.groups_per_row(cols);
  const bool wide = act == mq::ActMode::dynamic_int16;
  std::vector<double> bound(static_cast<size_t>(n * rows)), mag;
  for (int64_t t = 0; t < n; ++t) {
    const double sx = quantize_magnitudes(x + t * cols, cols, act, mag);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0.0;
      for (int64_t k = 0; k < cols; ++k) m += q.scale_at(r, k) * std::abs(q.field_at(r, k) - q.zero_at(r, k)) * mag[k];
      bound[static_cast<size_t>(t * rows + r)] = gamma(2 * gpr + (wide ? 3 : 2)) * sx * m + 1e-30;
    }
  }
  return bound;
}

}  // namespace actcodes
