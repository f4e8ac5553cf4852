// The format traits table's entries.
#include "miniquant/format_table.h"

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kquant/family.h"

namespace mq {
namespace {

constexpr std::string_view kKDecoder =
    "per super-block: the family's decoder (kernels/kquant_decode.h) reads its sub-block steps D, offsets M and 256 "
    "codes in place; for a few tokens D sum(q x) - (D zero + M) sum(x) per sub-block, from 8 (AVX-512) or 16 tokens "
    "blocks dequantized to D (q - zero) - M and multiplied by a register tile (AVX-512) or Eigen's GEMM on panels "
    "(plain loops the compiler vectorises)";

// GGML_TYPE_Q8_0, Q4_0 and Q4_1 (ggml.h numbering, also the GGUF tensor type).
constexpr uint32_t kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ8_0 = 8;

}  // namespace

const std::vector<FormatTraits>& format_table() {
  static const std::vector<FormatTraits> t = {
      {"fp32", Kind::fp32, 32, 4, "plain loads"},
      {"fp16", Kind::fp16, 16, 2, "F16C widening (vcvtph2ps)"},
      {"bf16", Kind::bf16, 16, 2, "16-bit shift into the fp32 high half"},
      {"int8", Kind::integer, 8, 0, "byte fields minus the zero-point, scaled per group", nullptr, kGgmlQ8_0},
      {"int4", Kind::integer, 4, 0, "AVX-512 BF16: a 32-entry word table (vpermw) into bf16, vdpbf16ps on activations split into two bf16; "
       "else nibbles through a 16-entry permute table (vpermps) where the ISA has it", nullptr, kGgmlQ4_0, kGgmlQ4_1},
      {"int3", Kind::integer, 3, 0, "3-byte pieces of the bit stream spread over 32-bit lanes (one vpshufb on AVX2)"},
      {"int2", Kind::integer, 2, 0, "AVX-512 BF16: the int4 path's word table (vpermw) and vdpbf16ps; else 2-bit fields shifted out of 32-bit words"},
      // K-quant super-blocks (ggml's layouts): one kernel for all five over a decoder per family.
      {"q2_k", Kind::kquant, 2, 0, kKDecoder, &q2_k_family()},
      {"q3_k", Kind::kquant, 3, 0, kKDecoder, &q3_k_family()},
      {"q4_k", Kind::kquant, 4, 0, kKDecoder, &q4_k_family()},
      {"q5_k", Kind::kquant, 5, 0, kKDecoder, &q5_k_family()},
      {"q6_k", Kind::kquant, 6, 0, kKDecoder, &q6_k_family()},
  };
  return t;
}

const FormatTraits& traits_of(const Scheme& s) {
  const std::vector<FormatTraits>& t = format_table();
  if (s.family < t.size() && t[s.family].kind == s.kind && t[s.family].bits == s.bits) return t[s.family];
  throw UsageError(fmt::format("scheme (kind {}, bits {}) does not match its family's row {} of the format table",
                               static_cast<int>(s.kind), s.bits, s.family));
}

size_t family_row(std::string_view name) {
  const std::vector<FormatTraits>& t = format_table();
  size_t i = 0;
  while (i < t.size() && t[i].family != name) ++i;
  return i;
}

}  // namespace mq
