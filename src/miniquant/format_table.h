// The format traits table: one entry per storage family (fp32, fp16, bf16, int8, int4, int3, int2, and the
// K-quant families q2_k .. q6_k), in the spirit of ggml's type_traits. It is the one place that says, for a family, which fast kernel
// runs it, which scalar reference that kernel is tested against, how its fields are decoded, and whether
// it has the int8-activation (VNNI block) path, and whether QuantizedLinear keeps it in the 16-row block
// layout (runs_blocked). gemm() and QuantizedLinear dispatch through it; tests and benchmarks loop over it.
// The schemes themselves (grouping, symmetry, bytes) are format.h's Scheme; docs/ARCHITECTURE.md's kernel
// map lists every (family, activation mode, ISA) and the kernel, twin and test behind it.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"

namespace mq {

struct KFamily;

// Y = X W^T.  W: (rows, cols) stored;  x: (n, cols);  y: (n, rows).  use_isa = false: the portable path.
using GemmKernel = void (*)(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool use_isa);

struct FormatTraits {
  std::string_view family;  // "fp32", "fp16", "bf16", "int8", "int4", "int3", "int2", "q2_k" .. "q6_k"
  Kind kind = Kind::fp32;
  int bits = 32;            // bits per stored value (code field width for integers)
  // Stored bytes of one value, for the float families (integers: fields packed per row, see pack.h).
  int value_bytes = 0;
  std::string_view decoder;  // how the weight-only kernel turns stored bits into floats
  GemmKernel kernel;         // the fast weight-only kernel (activations stay fp32)
  GemmKernel reference;      // its scalar twin: the obvious loops (kernels/ref.h)
  // Has the +a8 / +a16 paths: activations quantized per token, integer dots (int8 / int4: VNNI on the 16-row
  // block layout; K families: row-major on ggml's super-blocks, kernels/kquant_dynamic.cpp).
  bool dynamic_int8 = false;
  // Weight-only and +bf16 run on the 16-row block layout (gemm_blocked_bf16) in QuantizedLinear, where the
  // build has the family's AVX-512 BF16 tile (blocked_tile_built): there it is faster than the row-major
  // kernel (bench/HISTORY.md, the block-layout entries of 2026-11-26). gemm() on a QTensor keeps the row-major kernel either way.
  bool blocked_bf16 = false;
  // K-quant families: the block layout and ranges (kquant/family.h), through which the generic K code
  // (kquant/kquant.h: grids, dequantization, search, GPTQ, kernels, GGUF) reaches the family; null otherwise.
  const KFamily* kquant = nullptr;
  // Every family is quantized by mq::quantize / quantize_ref and dequantized by mq::dequantize
  // (quantize.h): their bytes and values are defined per Scheme, so the table does not repeat them.
};

// All families, in the order above.
const std::vector<FormatTraits>& format_table();
// The family of a scheme (every valid Scheme has one).
const FormatTraits& traits_of(const Scheme& s);

// True when QuantizedLinear keeps w in the 16-row block layout for act, read from the table: the dynamic
// modes where the family has them (dynamic_int8), weight-only and +bf16 where it has blocked_bf16 and the
// build has the tile; either way only where the tensor has a layout (blockable).
bool runs_blocked(const QTensor& w, ActMode act);

}  // namespace mq
