// Weight-only kernels of the integer families (the format table's int8 / int4 / int3 / int2 entries):
// fields decoded in registers by word_kernel.h's decoders, activations stay fp32. int2 decodes straight
// from its words; int3, whose fields do not tile a 32-bit word, from 3-byte pieces of its bit stream
// (DecInt3); group widths the block layout cannot serve fall back to the scalar loop. On AVX-512 BF16
// builds int4 / int3 / int2 run on bf16 dot products instead (DecIntBf16, run_bf16); on AVX-512 int8 fields are
// taken out of their lanes by one byte shuffle (DecInt8Wide).
#include <algorithm>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
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

void gemm_int8(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (!w.scheme.is_integer() || w.scheme.bits != 8)
    throw UsageError("gemm_int8: scheme " + w.scheme.name() + " does not store 8-bit fields");
  if constexpr (kdetail::DecInt8Wide::kAvailable) {
    if (use_isa) return kdetail::run_any<kdetail::DecInt8Fast>(w, x, n, y, threads);
  }
  kdetail::run_any<kdetail::DecInt<8>>(w, x, n, y, threads);
}

namespace {
// True when this build has the bf16 kernels for this field width: AVX-512 BF16, and VBMI for int3.
constexpr bool bf16_built(int bits) {
  using kdetail::Bf16Dot;
  return Bf16Dot::kAvailable && (bits == 4 || bits == 2 || (bits == 3 && Bf16Dot::kInt3));
}

// The bf16 kernels (DecIntBf16) when the build has them for this width (bf16_built) and every activation
// can be split (bf16_safe; `safe`: the caller has checked already); returns false, having done nothing,
// otherwise. Split: activations as two bf16 (weight_only) or one (ActMode::bf16).
template <int Bits, bool Split = true>
bool run_bf16(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa, bool safe = false) {
  using namespace kdetail;
  if constexpr (bf16_built(Bits)) {
    if (!use_isa || !(safe || bf16_safe(x, n * w.cols))) return false;
    if (w.scheme.symmetric) run_any<DecIntBf16<Bits, true, Split>>(w, x, n, y, threads);
    else run_any<DecIntBf16<Bits, false, Split>>(w, x, n, y, threads);
    return true;
  }
  return false;
}
}  // namespace

bool has_bf16_weight_path(int bits) { return bf16_built(bits); }

const char* simd_arch_name() { return xsimd::default_arch::name(); }

void gemm_bf16_act(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_bf16_act")) return;
  const FormatTraits& tr = traits_of(w.scheme);
  if (!bf16_safe(x, n * w.cols)) return tr.kernel(w, x, n, y, threads, use_isa);  // NaN / Inf / huge: x as it is
  if (w.scheme.is_integer()) {
    switch (w.scheme.bits) {
      case 4: if (run_bf16<4, false>(w, x, n, y, threads, use_isa, true)) return; break;
      case 3: if (run_bf16<3, false>(w, x, n, y, threads, use_isa, true)) return; break;
      case 2: if (run_bf16<2, false>(w, x, n, y, threads, use_isa, true)) return; break;
      default: break;
    }
  }
  // No bf16 kernel for this scheme or build: the weight-only kernel on a rounded copy, the same product.
  thread_local std::vector<float> xr;
  xr.resize(static_cast<size_t>(n * w.cols));
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = bf16_round(x[i]);
  tr.kernel(w, xr.data(), n, y, threads, use_isa);
}

void gemm_int4(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (!w.scheme.is_integer() || w.scheme.bits != 4)
    throw UsageError("gemm_int4: scheme " + w.scheme.name() + " does not store 4-bit fields");
  if (run_bf16<4>(w, x, n, y, threads, use_isa)) return;
  if constexpr (kdetail::DecInt4Perm::kAvailable) {
    if (use_isa) return kdetail::run_any<kdetail::DecInt4Fast>(w, x, n, y, threads);
  }
  kdetail::run_any<kdetail::DecInt<4>>(w, x, n, y, threads);
}

void gemm_intn(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  using namespace kdetail;
  if (!w.scheme.is_integer()) throw UsageError("gemm_intn: scheme " + w.scheme.name() + " is not an integer scheme");
  switch (w.scheme.bits) {
    case 8: return run_any<DecInt<8>>(w, x, n, y, threads);
    case 4: return run_any<DecInt<4>>(w, x, n, y, threads);
    case 2:
      if (run_bf16<2>(w, x, n, y, threads, use_isa)) return;
      return run_any<DecInt<2>>(w, x, n, y, threads);
    case 3:
      if (run_bf16<3>(w, x, n, y, threads, use_isa)) return;
      return use_isa ? run_any<DecInt3Fast>(w, x, n, y, threads) : run_any<DecInt3>(w, x, n, y, threads);
    default: return gemm_scalar(w, x, n, y, threads);
  }
}

}  // namespace mq
