// Weight-only kernel for 4-bit fields (int4 per-channel / groups, symmetric or not).
#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

void gemm_int4(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (!w.scheme.is_integer() || w.scheme.bits != 4)
    throw UsageError("gemm_int4: scheme " + w.scheme.name() + " does not store 4-bit fields");
  if constexpr (kdetail::DecInt4Perm::kAvailable) {
    if (use_isa) return kdetail::run_any<kdetail::DecInt4Fast>(w, x, n, y, threads);
  }
  kdetail::run_any<kdetail::DecInt<4>>(w, x, n, y, threads);
}

}  // namespace mq
