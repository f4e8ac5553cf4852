// The dynamic kernels' activation codes as they multiply them, for the tests' float-rounding bounds.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "miniquant/kernels/kernels.h"

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

}  // namespace actcodes
