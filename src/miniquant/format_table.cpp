// The format traits table's entries.
#include "miniquant/format_table.h"

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"

namespace mq {
namespace {

void reference(const QTensor& w, const float* x, int64_t n, float* y, int, bool) { gemm_ref(w, x, n, y); }
void int8_kernel(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  gemm_int8(w, x, n, y, threads, use_isa);
}
void intn_kernel(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  gemm_intn(w, x, n, y, threads, use_isa);
}

}  // namespace

const std::vector<FormatTraits>& format_table() {
  static const std::vector<FormatTraits> t = {
      {"fp32", Kind::fp32, 32, 4, "plain loads", gemm_float, reference, false},
      {"fp16", Kind::fp16, 16, 2, "F16C widening (vcvtph2ps)", gemm_float, reference, false},
      {"bf16", Kind::bf16, 16, 2, "16-bit shift into the fp32 high half", gemm_float, reference, false},
      {"int8", Kind::integer, 8, 0, "byte fields minus the zero-point, scaled per group", int8_kernel, reference, true, true},
      {"int4", Kind::integer, 4, 0, "AVX-512 BF16: a 32-entry word table (vpermw) into bf16, vdpbf16ps on activations split into two bf16; "
       "else nibbles through a 16-entry permute table (vpermps) where the ISA has it", gemm_int4,
       reference, true, true},
      {"int3", Kind::integer, 3, 0, "3-byte pieces of the bit stream spread over 32-bit lanes (one vpshufb on AVX2)", intn_kernel,
       reference, false, true},
      {"int2", Kind::integer, 2, 0, "AVX-512 BF16: the int4 path's word table (vpermw) and vdpbf16ps; else 2-bit fields shifted out of 32-bit words", intn_kernel, reference, false, true},
  };
  return t;
}

const FormatTraits& traits_of(const Scheme& s) {
  for (const FormatTraits& f : format_table())
    if (f.kind == s.kind && (s.kind != Kind::integer || f.bits == s.bits)) return f;
  throw UsageError(fmt::format("no storage family for scheme {} (bits {})", s.name(), s.bits));
}

bool runs_blocked(const QTensor& w, ActMode act) {
  const FormatTraits& t = traits_of(w.scheme);
  if (is_dynamic(act)) return t.dynamic_int8 && blockable(w);
  return t.blocked_bf16 && blocked_tile_built(w.scheme.bits) && blockable(w);
}

}  // namespace mq
