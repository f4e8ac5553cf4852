// Weight-only kernels for the other widths: int2 decoded straight from its words; every other width
// (int3 ...) through the bit stream, unpacked one row at a time into bytes and run as 8-bit fields;
// and the scalar fallback for group widths the block layout cannot serve.
#include <algorithm>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

namespace kdetail {

void gemm_scalar(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  const int nt = effective_threads(threads, w.rows * w.cols * n);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t r = 0; r < w.rows; ++r) {
    for (int64_t t = 0; t < n; ++t) y[t * w.rows + r] = dot_row_ref(w, r, x + t * w.cols);
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
