// The dynamic-activation kernels' weight layout, also int8 / int4 / int3 / int2 weight-only on AVX-512 BF16
// (blocked_bf16.cpp):
// integer fields re-ordered into blocks of 16 output rows, so that one 512-bit load holds 16 rows x 4
// bytes and one vpdpbusd with a 4-byte activation broadcast (or vdpbf16ps with a bf16 pair) advances 16 row
// dots at once. The rows' partial sums then stay in the lanes
// of one register: no horizontal sums, and one scale conversion per 16 rows per group.
//
// Layout (k8 = 8 consecutive input columns, k16 = 16, r = 16 * block + lane):
//   int8: per block, per k8 step,  128 bytes: [half h in 0..1][lane 0..15][byte b 0..3] = field(r, 8s + 4h + b)
//   int4: per block, per k8 step,   64 bytes: [lane 0..15][byte b 0..3], low nibble  = field(r, 8s + b),
//                                                                        high nibble = field(r, 8s + 4 + b)
//   int2: per block, per k16 step,  64 bytes: [lane 0..15][byte b 0..3], bits 2j .. 2j+1 of byte b
//                                             = field(r, 16s + 4b + j): the lane's low 16 bits hold columns
//                                             0 .. 7 of the step, its high 16 bits columns 8 .. 15
//   int3: per block, per k16 step,  96 bytes: [lane 0..15][piece p in 0..1][3 bytes], bits 3j .. 3j+2 of the
//                                             24-bit little-endian piece = field(r, 16s + 8p + j) (fields 2 and
//                                             5 straddle a byte: a piece is one 8-field run of the bit stream)
//   scales: (blocks, groups, 16) fp16;  zeros (asymmetric only): (blocks, groups, 16) bytes.
// Rows past `rows` (the last block's padding) have zero fields, scales and zero-points. Per-channel
// and per-tensor rows are padded with zero fields to a multiple of 8 columns (16 for int2; the activations
// are padded with zeros too, so the padding adds nothing).
// It is a permutation of the QTensor's bytes (plus padding), not a dequantized copy.
// Every integer family has a dynamic kernel on these blocks (dynamic.cpp; int3 decodes with VBMI, else plain loops).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "miniquant/aligned.h"
#include "miniquant/kernels/int_families.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"

namespace mq {

// A family's block layout at run time, for the code that walks fields one by one (pack_blocked, unpack_blocked):
// its family's facts (int_families.h, where each family's Step struct and slot() are the one statement of the
// layout above), one row per family in block_layouts(). The kernels, templates over the family, read those.
struct BlockLayout {
  std::string_view family;  // the format table's name
  int bits = 0;             // field width
  int64_t step_columns = 0; // columns of one step (the family's kColumns)
  int64_t step_bytes = 0;   // bytes of one step of one block (sizeof of the family's Step)
  BlockSlot (*slot)(int64_t lane, int64_t c) = nullptr;
};
// One row per integer family that has the 16-row block layout.
const std::vector<BlockLayout>& block_layouts();
// The block layout of s's family, or null when the family has none (floats, K families).
const BlockLayout* block_layout(const Scheme& s);
// The row of family F (an integer family of int_families.h).
template <class F>
BlockLayout block_layout_of() {
  return {F::kName, F::kBits, F::kColumns, static_cast<int64_t>(sizeof(typename F::Step)), [](int64_t lane, int64_t c) { return F::slot(lane, c); }};
}

// The field at sl, and OR-ing a field into a zeroed slot (a straddling int3 field touches the next byte).
inline int block_field(const uint8_t* block, const BlockSlot& sl, int bits) {
  int v = block[sl.byte] >> sl.shift;
  if (sl.shift + bits > 8) v |= block[sl.byte + 1] << (8 - sl.shift);
  return v & ((1 << bits) - 1);
}
inline void put_block_field(uint8_t* block, const BlockSlot& sl, int bits, int v) {
  block[sl.byte] = static_cast<uint8_t>(block[sl.byte] | (v << sl.shift));
  if (sl.shift + bits > 8) block[sl.byte + 1] = static_cast<uint8_t>(block[sl.byte + 1] | (v >> (8 - sl.shift)));
}

// How far ahead of its loads a block-layout tile prefetches each block's codes (dynamic.cpp and
// blocked_bf16.cpp read the same streams). The hardware prefetcher alone ramps up too slowly on a tile's
// separate block streams: measured on one thread, 4096x11008 int4-g64 +a8 went from 504 to 457 us at one
// token and the GPT-2-shaped decode from 280 to 374 tokens/s; 8-token tiles from 238 to 387 GOP/s (int8), 64
// tokens from 404 to 470 (int4). A sweep of 1024 .. 8192 bytes on Zen 5 found 2048 best for both files' tiles.
inline constexpr int64_t kBlockPrefetchBytes = 2048;

struct BlockedCodes {
  Scheme scheme;
  std::string name;  // the tensor's, for messages
  int64_t rows = 0, cols = 0;
  int64_t blocks = 0;     // ceil(rows / 16)
  int64_t cols_pad = 0;   // cols rounded up to a whole step (per-channel / per-tensor), else cols
  int64_t group_k = 0;    // columns per group: the group width, or cols_pad for one group per row
  int64_t groups = 0;     // groups per row
  int64_t step_bytes = 0; // bytes per block per 8 columns: the layout's step_bytes * 8 / step_columns
  mq::AlignedBytes codes;          // (blocks, cols_pad / 8, step_bytes)
  std::vector<uint16_t> scales;    // (blocks, groups, 16) fp16
  std::vector<uint8_t> zeros;      // (blocks, groups, 16), asymmetric only
  int zero_sym = 0;                // 2^(bits-1): the zero-point of symmetric schemes

  const uint8_t* block_codes(int64_t b) const { return codes.data() + b * (cols_pad / 8) * step_bytes; }
  const uint16_t* block_scales(int64_t b, int64_t g) const { return scales.data() + (b * groups + g) * 16; }
  const uint8_t* block_zeros(int64_t b, int64_t g) const { return zeros.data() + (b * groups + g) * 16; }
  // Bytes held: codes (with padding) + scales + zero-points.
  int64_t bytes() const;
};

// Largest group the int32 lane accumulators take without overflow: |sum (u - z) a| and the
// intermediate z * sum(a) stay below 2 * 255 * 127 * group_k < 2^31.
inline constexpr int64_t kMaxBlockedGroup = 16384;

// True when pack_blocked() can lay out this tensor: int8, int4, int3 or int2, and groups that are whole steps (a
// group width that is a multiple of 8, 16 for int3 / int2, or one group per row) of at most kMaxBlockedGroup.
bool blockable(const QTensor& w);
// Throws UsageError when !blockable(w).
BlockedCodes pack_blocked(const QTensor& w);
// The inverse (tests): the QTensor pack_blocked() was made from, byte for byte.
QTensor unpack_blocked(const BlockedCodes& b);

// The walk of the block layout's portable twins: y[t * rows + 16 b + l] = out(b, t, l) for every block b, token t < n
// and lane l that holds a row (the last block's padded lanes are not stored), the blocks split over the threads.
// W: BlockedCodes, or any other 16-row block layout with `blocks` and `rows` (bench/'s K table chunks).
template <class W, class Out>
void for_each_block_output(const W& w, int64_t n, float* y, int threads, Out&& out) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t b = 0; b < w.blocks; ++b) {
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows - 16 * b));
    for (int64_t t = 0; t < n; ++t)
      for (int l = 0; l < valid; ++l) y[t * w.rows + 16 * b + l] = out(b, t, l);
  }
}

// Y = X W^T with dynamically quantized activations (act: dynamic_int8, quantize_activations per token;
// dynamic_int16, quantize_activations16), the same arithmetic as gemm_dynamic_ref: exact int32 group
// dots, scaled in float once per group (16-bit: once per half, the two halves' outputs added).
// act weight_only / bf16 runs gemm_blocked_bf16. Either way the kernel is the family's blocks16 row of the
// registry (registry.h block_row; UsageError for a family and mode without one, none today: every integer family has both).
// x: (n, cols) row-major;  y: (n, rows) row-major.  use_isa = false runs the portable twin.
void gemm_blocked(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa = true,
                  ActMode act = ActMode::dynamic_int8);

// Y = X W^T for int8 / int4 / int3 / int2 in the block layout with weight-only activations (blocked_bf16.cpp): act weight_only
// multiplies x' = hi + lo (split_bf16, within 2^-16 |x| of x), act bf16 multiplies bf16(x), on AVX-512 BF16
// dot products (use_isa, where the build has them) or the portable twin's plain loops; products of bf16 values
// are exact in fp32 (int8 runs each byte as its two nibbles, so each weight is two such products, or from 8 / 16
// tokens on bf16 u - z dequantized once per call, one product), so either is
// W x' within the fp32 accumulation's rounding. A call with a NaN, an Inf or
// a magnitude of 2^126 or more among its activations runs the twin in fp32 on x as it is (bf16_safe).
// Throws UsageError for the dynamic modes. Shapes as gemm_blocked.
void gemm_blocked_bf16(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa = true,
                       ActMode act = ActMode::weight_only);

}  // namespace mq
