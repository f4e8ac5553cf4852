// Exact conversion of miniquant's quantized storage (mq::QTensor) to ggml tensor types, and a scalar
// reference dequantizer for those types (what ggml's dequantize_row_* computes).
//
// Mappings (a (rows, cols) weight becomes a GGUF tensor with ne = {cols, rows}):
//   fp32 / fp16 / bf16                    -> F32 / F16 / BF16: the stored values, byte for byte.
//   int8 symmetric per-channel, g32/64/128 -> Q8_0: qs = c (the code, field - 128), d = the group's
//                                           fp16 scale; a group of 64/128 or a whole row is 2/4 or
//                                           cols/32 blocks sharing d. Exact.
//   int4 symmetric per-channel, g32/64/128 -> Q4_0: nibble = field = c + 8, d = s. Exact.
//   int4 asymmetric g32/64/128, per-channel -> Q4_1: nibble = field u, d = s, m = fp16(-s z). Ours is
//                                           s (u - z); Q4_1 gives d u + m: the only difference is
//                                           m's fp16 rounding (s z has up to 15 significant bits),
//                                           bounded by q4_1_error_bound().
//   K families (q2_k .. q6_k)             -> Q2_K .. Q6_K: the stored blocks, byte for byte (they are
//                                           ggml's layouts). Exact.
// Anything else (int2, int3, per-tensor grids, asymmetric int8) throws mq::UsageError naming the
// exportable schemes. cols must be a multiple of 32 for the block types (256 for the K types).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "miniquant/gguf/types.h"
#include "miniquant/quantize.h"

namespace mq::gguf {

// The GGUF type `s` exports to; throws mq::UsageError listing exportable_schemes() otherwise.
TensorType type_for(const Scheme& s);
std::string exportable_schemes();

// q's storage as a GGUF tensor named `name`. Throws mq::UsageError (scheme, or cols not a multiple
// of 32 for block types).
Tensor from_qtensor(const QTensor& q, std::string name);
// A float matrix (rows, cols) row-major (rows = 1 for a vector) stored as F32, F16 or BF16.
// ne = {cols, rows}, or {cols} when `vector` is set. F16: throws mq::Error for values beyond fp16.
Tensor from_floats(const float* x, int64_t rows, int64_t cols, TensorType type, std::string name, bool vector = false);

// Reference dequantizer: (rows, ne[0]) row-major floats, element by element as ggml computes them.
std::vector<float> dequantize(const Tensor& t);

// |Q4_1 value - miniquant value| is at most this for a weight of group scale s and zero-point z
// dequantizing (in Q4_1) to y: half an fp16 ulp of s z (m's rounding; 2^-25 absolute below the fp16
// normal range) plus one float rounding of d u + m.
double q4_1_error_bound(float s, int z, float y);

}  // namespace mq::gguf
