// Scalar reference kernels: no SIMD, no threads, one element at a time.
#include "miniquant/kernels/ref.h"

namespace mq {

void gemv_ref(const QTensor& w, const float* x, float* y) {
  const Scheme& s = w.scheme;
  for (int64_t r = 0; r < w.rows; ++r) {
    if (!s.is_integer()) {
      float acc = 0.0f;
      for (int64_t c = 0; c < w.cols; ++c) acc += w.value_at(r, c) * x[c];
      y[r] = acc;
      continue;
    }
    const int64_t gw = s.group_width(w.cols);
    float acc = 0.0f;
    for (int64_t c0 = 0; c0 < w.cols; c0 += gw) {
      const int z = w.zero_at(r, c0);
      float part = 0.0f;
      for (int64_t c = c0; c < c0 + gw; ++c) part += static_cast<float>(w.field_at(r, c) - z) * x[c];
      acc += w.scale_at(r, c0) * part;
    }
    y[r] = acc;
  }
}

void gemm_ref(const QTensor& w, const float* x, int64_t n, float* y) {
  for (int64_t t = 0; t < n; ++t) gemv_ref(w, x + t * w.cols, y + t * w.rows);
}

}  // namespace mq
