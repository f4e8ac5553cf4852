// Weight-only kernels for float storage: fp32, fp16, bf16 (16-bit values widened in registers).
// fp32 with many tokens is a plain SGEMM: Eigen's packed, cache- and register-blocked GEMM does it
// better than a decode-style kernel (2x at 64 tokens), so that path is Eigen on each thread's rows.
#include <omp.h>

#include <algorithm>

#include <Eigen/Core>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

namespace {

// From this many tokens on, fp32 runs Eigen's GEMM (measured: at 8 tokens the streaming kernel is
// still ahead, at 64 Eigen is 2x faster; bench/README.md).
constexpr int64_t kEigenMinTokens = 16;

// Y[:, r0:r1] = X W[r0:r1, :]^T per thread. Inside the parallel region Eigen runs single-threaded
// (it does not nest), so `threads` is what runs.  x: (n, cols);  y: (n, rows).
void gemm_fp32_eigen(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const float* wf = reinterpret_cast<const float*>(w.codes.data());
  const Eigen::Map<const RowMajor> xm(x, n, w.cols);
#pragma omp parallel num_threads(threads)
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t per = (w.rows + nt - 1) / nt;
    const int64_t r0 = std::min(w.rows, tid * per), r1 = std::min(w.rows, r0 + per);
    if (r1 > r0) {
      const Eigen::Map<const RowMajor> wm(wf + r0 * w.cols, r1 - r0, w.cols);
      Eigen::Map<RowMajor, 0, Eigen::OuterStride<>> ym(y + r0, n, r1 - r0, Eigen::OuterStride<>(w.rows));
      ym.noalias() = xm * wm.transpose();
    }
  }
}

}  // namespace

void gemm_float(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  using namespace kdetail;
  switch (w.scheme.kind) {
    case Kind::fp32:
      if (n >= kEigenMinTokens) return gemm_fp32_eigen(w, x, n, y, threads);
      return run<DecF32, 0>(w, x, n, y, threads);
    case Kind::fp16:
      if constexpr (DecF16Wide::kAvailable) {
        if (use_isa) return run<DecF16Fast, 0>(w, x, n, y, threads);
      }
      return run<DecF16, 0>(w, x, n, y, threads);
    case Kind::bf16: return run<DecBF16, 0>(w, x, n, y, threads);
    case Kind::integer: break;
  }
  throw UsageError("gemm_float: scheme " + w.scheme.name() + " is not a float scheme");
}

}  // namespace mq
