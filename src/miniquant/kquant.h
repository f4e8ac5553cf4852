// The K-quant families' generic operations, over a family's description (family.h): the grid a block's
// stored parameters decode to, dequantization, the code of a weight on a grid, quantizing a whole matrix
// (round-to-nearest on searched scales, kquant_search.h), and checking loaded blocks.
//
// Storage in a QTensor: `codes` holds the rows' super-blocks back to back, exactly ggml's bytes
// ((rows, cols / 256 * block_bytes)); `scales` and `zeros` are empty (the blocks hold them).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "miniquant/half.h"
#include "miniquant/kquant/family.h"
#include "miniquant/quantize.h"

namespace mq {

// The family of a K scheme (UsageError for any other scheme).
const KFamily& kfamily_of(const Scheme& s);

// One block's per-sub-block steps and offsets: w = D[b] * (q - zero) - M[b] (family.h).
struct KGrid {
  float D[kMaxSubBlocks];
  float M[kMaxSubBlocks];
};
// Inline: the kernel calls it once per block and row.
inline KGrid kgrid(const KFamily& f, const KParams& p) {
  KGrid g{};
  const float d = f16_to_f32(p.d), dmin = f16_to_f32(p.dmin);
  for (int b = 0; b < f.nsub(); ++b) {
    g.D[b] = d * static_cast<float>(p.sc[b]);
    g.M[b] = f.has_min ? dmin * static_cast<float>(p.m[b]) : 0.0f;
  }
  return g;
}

// The weight code q on sub-block grid (D, M): nearest (round half to even), clamped to [0, qmax]; a
// sub-block with D == 0 decodes to -M whatever its codes, and gets the code `zero`.
inline uint8_t kencode(const KFamily& f, float w, float D, float M) {
  if (D == 0.0f) return static_cast<uint8_t>(f.zero);
  const float q = std::nearbyint((w + M) / D) + static_cast<float>(f.zero);
  return static_cast<uint8_t>(std::clamp(q, 0.0f, static_cast<float>(f.qmax())));
}
// The weight code q decodes to, in ggml's float operations.
inline float kvalue(const KFamily& f, float D, float M, int q) { return D * static_cast<float>(q - f.zero) - M; }

// block: block_bytes;  out: (kSuperBlock) weights.
void kdequantize_block(const KFamily& f, const uint8_t* block, float* out);
// Element (r, c) of a K tensor (decodes its block).
float kvalue_at(const QTensor& q, int64_t r, int64_t c);
// |D| (q + zero) + |M| of element (r, c): the magnitude float rounding errors of a dot product scale with.
double kmagnitude_at(const QTensor& q, int64_t r, int64_t c);

// w: (rows, cols). search = false: plain round-to-nearest (each sub-block's range mapped onto its codes, the
// sub-block scales onto their integers), the baseline; true: the weighted search of kquant_search.h. importance:
// (cols) per input column, or (rows, cols) per weight when per_weight, or null for the plain error weights.
// parallel: rows split over OpenMP threads (the bytes are the same either way: each block is quantized alone). Throws mq::Error naming the tensor for NaN /
// Inf weights or factors beyond fp16, mq::UsageError for a width that is not a multiple of 256.
QTensor kquantize(const float* w, int64_t rows, int64_t cols, const Scheme& s, bool search, const float* importance,
                  bool per_weight, std::string_view name, bool parallel);

// Every block's factors decode to finite floats (a loaded file can hold anything): mq::Error naming `what`,
// the row and the block otherwise.
void kcheck_blocks(const QTensor& q, std::string_view what);

}  // namespace mq
