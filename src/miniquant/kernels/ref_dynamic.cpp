// Scalar reference of the dynamic int8-activation path: exact integer group sums, double scaling.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"

namespace mq {

float quantize_activations(const float* x, int64_t cols, int8_t* a) {
  float absmax = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < cols; ++i) {
    finite = finite && std::isfinite(x[i]);
    absmax = std::fmax(absmax, std::fabs(x[i]));
  }
  if (!finite) {  // a NaN / Inf token: NaN scale, so its outputs are NaN as in fp32 (and no UB cast)
    std::fill(a, a + cols, int8_t{0});
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float s = absmax / 127.0f;
  for (int64_t i = 0; i < cols; ++i)
    a[i] = s == 0.0f ? int8_t{0} : static_cast<int8_t>(std::nearbyint(x[i] / s));  // |x/s| <= 127(+ulp) rounds into range
  return s;
}

void gemm_dynamic_ref(const QTensor& w, const float* x, int64_t n, float* y) {
  const int64_t gw = w.scheme.group_width(w.cols);
  std::vector<int8_t> a(static_cast<size_t>(w.cols));
  for (int64_t t = 0; t < n; ++t) {
    const double sx = quantize_activations(x + t * w.cols, w.cols, a.data());
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = 0.0;
      for (int64_t c0 = 0; c0 < w.cols; c0 += gw) {
        const int64_t z = w.zero_at(r, c0);
        int64_t dot = 0;
        for (int64_t c = c0; c < c0 + gw; ++c) dot += (w.field_at(r, c) - z) * int64_t{a[c]};
        acc += static_cast<double>(w.scale_at(r, c0)) * static_cast<double>(dot);
      }
      y[t * w.rows + r] = static_cast<float>(acc * sx);
    }
  }
}

}  // namespace mq
