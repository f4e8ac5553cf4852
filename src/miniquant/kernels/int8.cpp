// Weight-only kernel for 8-bit fields (int8 per-tensor / per-channel / groups, symmetric or not).
#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

void gemm_int8(const QTensor& w, const float* x, int64_t n, float* y, int threads) {
  if (!w.scheme.is_integer() || w.scheme.bits != 8)
    throw UsageError("gemm_int8: scheme " + w.scheme.name() + " does not store 8-bit fields");
  kdetail::run_any<kdetail::DecInt<8>>(w, x, n, y, threads);
}

}  // namespace mq
