// Quantizers and dequantizers for every scheme of the format table: a scalar reference and an
// optimized (xsimd + OpenMP) version that must produce identical bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "miniquant/aligned.h"
#include "miniquant/format.h"

namespace mq {

// Code convention (integer schemes). A weight w is stored as an unsigned `bits`-wide field u and
// dequantizes as  w' = s * (u - z):
//   symmetric : u = q + 2^(bits-1) with q = clamp(round(w / s), -qmax, qmax); z = 2^(bits-1) is
//               implicit (not stored). int8: u = q + 128, int4: u = q + 8 (as llama.cpp's Q4_0).
//   asymmetric: u = clamp(round(w / s) + z, 0, 2^bits - 1) with a stored zero-point z.
// round() is round-half-to-even, the IEEE default, in both implementations. s is the fp16 scale.
struct QTensor {
  Scheme scheme;
  std::string name;
  int64_t rows = 0;  // output channels
  int64_t cols = 0;  // input width
  // (rows, row_code_bytes(scheme, cols)): packed fields (see pack.h for the bit order), the raw
  // little-endian fp32 / fp16 / bf16 values for float schemes, or a K family's super-blocks (ggml's bytes,
  // scales included: kquant.h).
  mq::AlignedBytes codes;  // 64-byte aligned: rows are read with 64-byte loads
  // (scale_count): fp16 bit patterns, index row * groups_per_row + group; per-tensor: one. Empty for K.
  std::vector<uint16_t> scales;
  // Asymmetric only: one `bits`-wide zero-point field per scale, same index, packed like codes.
  std::vector<uint8_t> zeros;

  Storage storage() const { return storage_of(scheme, rows, cols); }
  int64_t row_bytes() const { return row_code_bytes(scheme, cols); }
  const uint8_t* row_codes(int64_t r) const { return codes.data() + r * row_bytes(); }
  // Index into `scales` / `zeros` of element (r, c) (integer schemes; scale_at, zero_at and field_at too).
  int64_t scale_index(int64_t r, int64_t c) const;
  float scale_at(int64_t r, int64_t c) const;
  int zero_at(int64_t r, int64_t c) const;  // 2^(bits-1) for symmetric schemes
  int field_at(int64_t r, int64_t c) const;
  float value_at(int64_t r, int64_t c) const;  // the dequantized weight (any scheme)
};

// Scale (and zero-point) of one group, shared by both quantizers and later by GPTQ.
struct Grid {
  uint16_t scale_bits = 0;  // fp16
  float scale = 0.0f;       // the same value as float: codes are computed with it
  int zero = 0;             // stored zero-point (asymmetric) or 2^(bits-1) (symmetric)
  // Symmetric grids of the scale search (grid_search.h) only: codes may also take -(qmax + 1), the field 0 the
  // round-to-nearest grid leaves unused (the storage and every kernel decode it as s (0 - z)), so a group whose
  // largest weight is negative can put it on that longer end.
  bool full_range = false;
};
// Symmetric grid: s = fp16(absmax / qmax). An all-zero group gets s = 0 (codes 0). When rounding s
// to fp16 would clip the largest weight by more than half a step (only possible when s is an fp16
// subnormal), s moves up one fp16 step at a time until it does not. Throws mq::Error when s does
// not fit fp16.
Grid symmetric_grid(float absmax, const Scheme& s);
// Asymmetric grid on [min(lo, 0), max(hi, 0)] (zero is always exactly representable):
// s = fp16(range / levels), moved up while range / s > levels so neither end clips; z = round(-lo / s).
Grid asymmetric_grid(float lo, float hi, const Scheme& s);
// The field of one weight on a grid (see the code convention above).
uint8_t encode(float w, const Grid& g, const Scheme& s);

// A chooser of one group's grid (integer schemes): v (n) the group's weights (one group, one row or the whole
// tensor), importance null or the weight of v[i] at importance[i % period]; errors name `name` and the scale's
// index. search_grid (grid_search.h) is one; a quantizer with a grid of its own (minigpt's quantizer table) is
// another, and quantize() and GPTQ's group step (gptq.h) run whichever they are given.
using GridChooser = Grid (*)(const float* v, int64_t n, const float* importance, int64_t period, const Scheme& s,
                             std::string_view name, int64_t scale_index);

// Where a scale search takes its error weights from: no search, the plain weights, an importance per input
// column (a recipe's -search / -imatrix; GPTQ's importance is its Hessian's diagonal), or one per weight (a K
// recipe's -fisher: the diagonal of the loss's empirical Fisher, minigpt/fisher.h).
enum class Search : uint8_t { none, plain, importance, fisher, hqq };

// How a quantizer chooses each group's (K families: each block's) scales.
struct QuantizeOptions {
  // Integer schemes: search_grid's shrink grid (grid_search.h) instead of the absmax / min-max grid. K
  // families: the weighted search of kquant_search.h instead of plain round-to-nearest (they search by
  // default: default_quantize_options). Float schemes ignore it.
  bool search = false;
  // Integer schemes: each group's grid from this chooser instead (it then decides alone; `search` is not read).
  // mq::UsageError for a K family, whose blocks have no Grid.
  GridChooser grid = nullptr;
  // (cols) one importance per input column (e.g. the diagonal of the layer's Hessian, llama.cpp's importance
  // matrix) weighting the search's error, or null: the plain weights (intN: every weight alike; K families:
  // kerror_weights in kquant_search.h).
  const float* importance = nullptr;
  // K families only: `importance` is (rows, cols), one per weight (each row's blocks take their own slice)
  // instead of one per input column. mq::UsageError for any other scheme.
  bool importance_per_weight = false;
};
// What quantize() without options does: K families search, integer schemes take the plain grid.
QuantizeOptions default_quantize_options(const Scheme& s);

// w: (rows, cols) row-major. Throws mq::Error naming `name` and the (row, col) of a NaN/Inf or of a
// value that does not fit the storage type, and mq::UsageError when the group size does not
// divide cols.
QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const Scheme& s, const QuantizeOptions& o,
                     std::string_view name = "weight");
QTensor quantize(const float* w, int64_t rows, int64_t cols, const Scheme& s, const QuantizeOptions& o,
                 std::string_view name = "weight");
inline QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const Scheme& s, std::string_view name = "weight") {
  return quantize_ref(w, rows, cols, s, default_quantize_options(s), name);
}
inline QTensor quantize(const float* w, int64_t rows, int64_t cols, const Scheme& s, std::string_view name = "weight") {
  return quantize(w, rows, cols, s, default_quantize_options(s), name);
}

// out: (rows, cols) row-major.
void dequantize(const QTensor& q, float* out);
std::vector<float> dequantize(const QTensor& q);

}  // namespace mq
