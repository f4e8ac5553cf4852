// Weight-only kernels for float storage: fp32, fp16, bf16 (16-bit values widened in registers).
#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

void gemm_float(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  using namespace kdetail;
  switch (w.scheme.kind) {
    case Kind::fp32: return run<DecF32, 0>(w, x, n, y, threads);
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
