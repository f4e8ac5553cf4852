// The format traits table: one entry per storage family (fp32, fp16, bf16, int8, int4, int3, int2, and the
// K-quant families q2_k .. q6_k), in the spirit of ggml's type_traits: its name, kind, field width, how its
// fields decode, and for the K families their block layout. A family's position in the table is its identity
// in the kernel registry (kernels/registry.h), which says which kernel runs it under each activation mode and
// build. The schemes themselves (grouping, symmetry, bytes) are format.h's Scheme.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "miniquant/quantize.h"

namespace mq {

struct KFamily;

struct FormatTraits {
  std::string_view family;  // "fp32", "fp16", "bf16", "int8", "int4", "int3", "int2", "q2_k" .. "q6_k"
  Kind kind = Kind::fp32;
  int bits = 32;            // bits per stored value (code field width for integers)
  // Stored bytes of one value, for the float families (integers: fields packed per row, see pack.h).
  int value_bytes = 0;
  std::string_view decoder;  // how the kernels turn stored bits into floats (kernels/registry.h runs them)
  // K-quant families: the block layout and ranges (kquant/family.h), through which the generic K code
  // (kquant.h: grids, dequantization, search, GPTQ, kernels, GGUF) reaches the family; null otherwise.
  const KFamily* kquant = nullptr;
  // Integer families: the GGUF tensor type (ggml.h numbering) that stores a symmetric / asymmetric scheme of the
  // family exactly, re-blocked into 32-element blocks (gguf/convert.h), or 0 when none does. K families carry
  // theirs in `kquant`; float families map to F32 / F16 / BF16 by kind.
  uint32_t gguf_symmetric = 0, gguf_asymmetric = 0;
  // Every family is quantized by mq::quantize / quantize_ref and dequantized by mq::dequantize
  // (quantize.h): their bytes and values are defined per Scheme, so the table does not repeat them.
};

// All families, in the order above.
const std::vector<FormatTraits>& format_table();
// The family of a scheme (every valid Scheme has one).
const FormatTraits& traits_of(const Scheme& s);
// The row of the family named `name` (a Scheme's `family`), or format_table().size() when no family has that name.
size_t family_row(std::string_view name);

}  // namespace mq
