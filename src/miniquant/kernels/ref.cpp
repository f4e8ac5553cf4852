// Scalar reference kernels: no SIMD, no threads, one element at a time.
#include "miniquant/kernels/ref.h"

#include <vector>

#include "miniquant/kquant.h"

namespace mq {

float dot_row_ref(const QTensor& w, int64_t r, const float* x) {
  const Scheme& s = w.scheme;
  float acc = 0.0f;
  if (s.is_kquant()) {  // the row's dequantized weights (its blocks decoded once each), then the plain dot
    const KFamily& f = kfamily_of(s);
    std::vector<float> v(static_cast<size_t>(w.cols));
    for (int64_t b = 0; b < w.cols / kSuperBlock; ++b)
      kdequantize_block(f, w.row_codes(r) + b * f.block_bytes, v.data() + b * kSuperBlock);
    for (int64_t c = 0; c < w.cols; ++c) acc += v[static_cast<size_t>(c)] * x[c];
    return acc;
  }
  if (!s.is_integer()) {
    for (int64_t c = 0; c < w.cols; ++c) acc += w.value_at(r, c) * x[c];
    return acc;
  }
  const int64_t gw = s.group_width(w.cols);
  for (int64_t c0 = 0; c0 < w.cols; c0 += gw) {
    const int z = w.zero_at(r, c0);
    float part = 0.0f;
    for (int64_t c = c0; c < c0 + gw; ++c) part += static_cast<float>(w.field_at(r, c) - z) * x[c];
    acc += w.scale_at(r, c0) * part;
  }
  return acc;
}

void gemv_ref(const QTensor& w, const float* x, float* y) {
  for (int64_t r = 0; r < w.rows; ++r) y[r] = dot_row_ref(w, r, x);
}

void gemm_ref(const QTensor& w, const float* x, int64_t n, float* y) {
  for (int64_t t = 0; t < n; ++t) gemv_ref(w, x + t * w.cols, y + t * w.rows);
}

void gemm_bf16_ref(const QTensor& w, const float* x, int64_t n, float* y) {
  std::vector<float> xs(static_cast<size_t>(n * w.cols));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = bf16_pair_value(x[i]);
  gemm_ref(w, xs.data(), n, y);
}

}  // namespace mq
