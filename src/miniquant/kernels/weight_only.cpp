// Weight-only kernels of the integer families (int8 / int4 / int3 / int2) as registry rows: fields decoded in
// registers by word_kernel.h's decoders, activations stay fp32. int2 decodes straight from its words; int3, whose
// fields do not tile a 32-bit word, from 3-byte pieces of its bit stream (DecInt3); group widths the block layout
// cannot serve fall back to the scalar loop. On AVX-512 BF16 builds int4 / int3 / int2 have rows on bf16 dot
// products (DecIntBf16, bf16_rows), which also serve +bf16; on AVX-512 int8 fields are taken out of their lanes by
// one byte shuffle (DecInt8Wide). The +bf16 rows for every family (a rounded copy, then the weight-only row) too.
#include <algorithm>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
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

namespace {
using namespace kdetail;

// True when this build has the family's bf16 word kernel: the family has one (int_families.h kWordBf16) and the
// build its bf16 dot products.
template <class Fam>
constexpr bool bf16_built() {
  return Fam::kWordBf16 && bf16_dot_built<Fam>();
}

// A decoder over every group layout (run_any); the families' portable rows.
template <class Dec>
void int_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  run_any<Dec>(w, x, n, y, threads);
}
// A decoder that exists only where the build has its instructions (Avail); elsewhere its row never runs
// (runs_on false) and this falls back to the portable decoder.
template <class Fast, class Portable, bool Avail>
void int_fast_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  if constexpr (Avail) run_any<Fast>(w, x, n, y, threads);
  else run_any<Portable>(w, x, n, y, threads);
}
// The bf16-dot kernels (DecIntBf16): weight-only splits each activation into two bf16, +bf16 rounds it to one.
template <class Fam>
void bf16_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool) {
  if constexpr (bf16_built<Fam>()) {
    const bool split = act == ActMode::weight_only;
    if (w.scheme.symmetric) return split ? run_any<DecIntBf16<Fam, true, true>>(w, x, n, y, threads)
                                         : run_any<DecIntBf16<Fam, true, false>>(w, x, n, y, threads);
    return split ? run_any<DecIntBf16<Fam, false, true>>(w, x, n, y, threads)
                 : run_any<DecIntBf16<Fam, false, false>>(w, x, n, y, threads);
  } else {
    throw Error("bf16_rows: the build has no bf16 kernel for this width (its row's runs_on is false)");
  }
}
template <class Fam>
bool bf16_on(const QTensor&) { return bf16_built<Fam>(); }
bool int8_wide_on(const QTensor&) { return DecInt8Wide::kAvailable; }
bool int4_perm_on(const QTensor&) { return DecInt4Perm::kAvailable; }

// +bf16 where no bf16-dot row serves: the activations rounded to bf16 into a copy, then the weight-only row.
void bf16_copy_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool use_isa) {
  thread_local std::vector<float> xr;
  xr.resize(static_cast<size_t>(n * w.cols));
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = bf16_round(x[i]);
  select_kernel(w, ActMode::weight_only, use_isa, xr.data(), n).rows(w, xr.data(), n, y, threads, ActMode::weight_only, use_isa);
}
// +bf16 on activations that cannot be rounded (NaN, Inf, |x| >= 2^126): the weight-only row on x as it is.
void bf16_raw_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool use_isa) {
  select_kernel(w, ActMode::weight_only, use_isa, nullptr, n).rows(w, x, n, y, threads, ActMode::weight_only, use_isa);
}
}  // namespace

bool has_bf16_weight_path(const Scheme& s) {
  // The family's first row-major weight-only row that runs on bf16 dots (it needs bf16-safe activations) and is
  // built here: the registry answers, so a family is asked by its identity, not its width.
  if (!s.is_integer()) return false;
  QTensor probe;
  probe.scheme = s;
  for (const KernelRow& r : kernel_registry())
    if (r.layout == Layout::row_major && r.isa && r.needs == Acts::bf16_safe && (r.families & family_set(s)) != 0 &&
        (r.acts & act_bit(ActMode::weight_only)) != 0 && (!r.runs_on || r.runs_on(probe)))
      return true;
  return false;
}

const char* simd_arch_name() { return xsimd::default_arch::name(); }

std::vector<KernelRow> kernel_rows_int() {
  const ActSet wo = act_bit(ActMode::weight_only), bf = act_bit(ActMode::bf16);
  const Layout rm = Layout::row_major;
  constexpr std::string_view kBf16Kernel =
      "`run_any<DecIntBf16>`: a 32-entry word table (`vpermw`) into bf16, `vdpbf16ps` (`weight_only.cpp`, `word_decoders.h`)";
  constexpr std::string_view kBf16Twin = "`gemm_bf16_ref` (weight-only), `gemm_ref` on bf16(x) (`+bf16`)";
  return {
      {families_of({"int8"}), wo, rm, Acts::any, true, int8_wide_on, int_fast_rows<DecInt8Fast, DecInt<8>, DecInt8Wide::kAvailable>,
       nullptr, "AVX-512", "`run_any<DecInt8Fast>`: one byte shuffle (`weight_only.cpp`)", "`gemm_ref`", "`test_kernels`"},
      {families_of({"int8"}), wo, rm, Acts::any, false, nullptr, int_rows<DecInt<8>>, nullptr, "any", "`run_any<DecInt<8>>`",
       "`gemm_ref`", "`test_kernels`"},
      {families_of({Int4Family::kName}), wo | bf, rm, Acts::bf16_safe, true, bf16_on<Int4Family>, bf16_rows<Int4Family>, nullptr, "AVX-512 BF16", kBf16Kernel,
       kBf16Twin, "`test_kernels`"},
      {families_of({Int2Family::kName}), wo | bf, rm, Acts::bf16_safe, true, bf16_on<Int2Family>, bf16_rows<Int2Family>, nullptr, "AVX-512 BF16", kBf16Kernel,
       kBf16Twin, "`test_kernels`"},
      {families_of({Int3Family::kName}), wo | bf, rm, Acts::bf16_safe, true, bf16_on<Int3Family>, bf16_rows<Int3Family>, nullptr, "AVX-512 BF16 + VBMI",
       "`run_any<DecIntBf16<Int3Family>>`: 3-byte pieces spread by `vpermi2b`", kBf16Twin, "`test_kernels`"},
      {families_of({"int4"}), wo, rm, Acts::any, true, int4_perm_on, int_fast_rows<DecInt4Fast, DecInt<4>, DecInt4Perm::kAvailable>,
       nullptr, "AVX2, AVX-512", "`run_any<DecInt4Fast>`: a 16-entry `vpermps` table", "`gemm_ref`", "`test_kernels`"},
      {families_of({"int4"}), wo, rm, Acts::any, false, nullptr, int_rows<DecInt<4>>, nullptr, "any", "`run_any<DecInt<4>>`",
       "`gemm_ref`", "`test_kernels`"},
      {families_of({"int3"}), wo, rm, Acts::any, true, nullptr, int_rows<DecInt3Fast>, nullptr, "any (one `vpshufb` on AVX2)",
       "`run_any<DecInt3Fast>`: 3-byte pieces over 32-bit lanes", "`gemm_ref`", "`test_kernels`"},
      {families_of({"int3"}), wo, rm, Acts::any, false, nullptr, int_rows<DecInt3>, nullptr, "any", "`run_any<DecInt3>`",
       "`gemm_ref`", "`test_kernels`"},
      {families_of({"int2"}), wo, rm, Acts::any, false, nullptr, int_rows<DecInt<2>>, nullptr, "any",
       "`run_any<DecInt<2>>`: fields shifted out of 32-bit words", "`gemm_ref`", "`test_kernels`"},
  };
}

std::vector<KernelRow> kernel_rows_bf16_act() {
  const ActSet bf = act_bit(ActMode::bf16);
  const FamilySet all = ~FamilySet{0};
  return {
      {all, bf, Layout::row_major, Acts::bf16_safe, false, nullptr, bf16_copy_rows, nullptr, "any",
       "`bf16_copy_rows`: x rounded to bf16 into a copy, then the weight-only row (`weight_only.cpp`)", "`gemm_ref` on bf16(x)",
       "`test_kernels`"},
      {all, bf, Layout::row_major, Acts::bf16_unsafe, false, nullptr, bf16_raw_rows, nullptr, "any",
       "`bf16_raw_rows`: the weight-only row on x as it is", "`gemm_ref`", "`test_kernels`"},
  };
}

}  // namespace mq
