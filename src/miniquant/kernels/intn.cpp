// Weight-only kernels for the other widths: int2 decoded straight from its words; every other width
// (int3 ...) through the bit stream, unpacked one row at a time into bytes and run as 8-bit fields;
// and the scalar fallback for group widths the block layout cannot serve.
#include <algorithm>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

namespace kdetail {

void gemm_scalar(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  const int64_t gw = w.scheme.group_width(w.cols);
  const int nt = effective_threads(threads, w.rows * w.cols * n);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t r = 0; r < w.rows; ++r) {
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      float acc = 0.0f;
      for (int64_t c0 = 0; c0 < w.cols; c0 += gw) {
        const int z = w.zero_at(r, c0);
        float part = 0.0f;
        for (int64_t c = c0; c < c0 + gw; ++c) part += static_cast<float>(w.field_at(r, c) - z) * xt[c];
        acc += w.scale_at(r, c0) * part;
      }
      y[t * w.rows + r] = acc;
    }
  }
}

}  // namespace kdetail

void gemm_intn(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  using namespace kdetail;
  if (!w.scheme.is_integer()) throw UsageError("gemm_intn: scheme " + w.scheme.name() + " is not an integer scheme");
  switch (w.scheme.bits) {
    case 8: return run_any<DecInt<8>>(w, x, n, y, threads);
    case 4: return run_any<DecInt<4>>(w, x, n, y, threads);
    case 2: return run_any<DecInt<2>>(w, x, n, y, threads);
    case 3: return run_any<DecInt<8>, 3>(w, x, n, y, threads);
    default: return gemm_scalar(w, x, n, y, threads);
  }
}

}  // namespace mq
