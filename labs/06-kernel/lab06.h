// Lab 06: the kernels you write, declared in namespace `lab` beside the library's (src/miniquant/kernels/
// kernels.h, ref.h). Every function reads the library's packed layout (mq::QTensor, src/miniquant/quantize.h
// and pack.h) of a symmetric int8 or int4 scheme, per-channel or per-group: row r's fields at w.row_codes(r)
// (int4: field 2j in the low nibble of byte j, field 2j+1 in its high nibble; int8: byte j is field j), the
// weight is s * (field - z) with z = 2^(bits-1) and s the fp16 scale w.scales[r * groups + c / group_width].
// The grader (`miniquant lab check 06`) compares each with the library's kernel and times it against your
// machine's read bandwidth and the library in the same run. Do not edit this header.
#pragma once
#include <cstdint>

#include "miniquant/quantize.h"

namespace lab {

// Block A. y = W x, activations in fp32 (weight-only): the obvious loops on the packed fields, one output row
// at a time, each group's sum of (field - z) * x multiplied by its scale once.  w: (rows, cols);  x: (cols);
// y: (rows).
void gemv_ref(const mq::QTensor& w, const float* x, float* y);

// Block B. +a8: x quantized per token to int8 (s = absmax / 127 in fp32, a_i = round-half-even(x_i / s),
// clamped to [-127, 127]; s = 0 and a = 0 for an all-zero x; s = NaN and a = 0 when x holds a NaN or an Inf),
// then y_r = s * sum_g s_g * sum_{i in g} (field_i - z) * a_i with the integer sums exact in int32.
// a: (cols);  returns s.
float quantize_activations(const float* x, int64_t cols, int8_t* a);
void gemv_a8(const mq::QTensor& w, const float* x, float* y);

// Block C. Block A's product, one thread, with the inner loop unrolled over several independent
// accumulators (and several rows at once if you like).
void gemv_unrolled(const mq::QTensor& w, const float* x, float* y);

// Block D. Block C's product with the rows split over `threads` OpenMP threads.
void gemv_threads(const mq::QTensor& w, const float* x, float* y, int threads);

// Block E. Block D's product with the arithmetic in xsimd batches (portable: x86 and aarch64 alike).
void gemv_simd(const mq::QTensor& w, const float* x, float* y, int threads);

// Block F. Y = X W^T for n tokens on `threads` threads, each weight decoded once for all n tokens.
// x: (n, cols) row-major;  y: (n, rows) row-major. n = 1 is the GEMV of block E.
void gemm_simd(const mq::QTensor& w, const float* x, int64_t n, float* y, int threads);

}  // namespace lab
