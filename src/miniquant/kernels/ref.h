// Scalar reference GEMV / GEMM for every scheme: the obvious loops every optimized kernel is
// compared against. Weight-only: activations stay fp32, each weight is decoded on the fly.
#pragma once
#include <cstdint>

#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"

namespace mq {

// Row r of W times x: sum_g s_g * sum_{i in g} (u_i - z) x_i for integer schemes (the per-group
// form below), the plain decoded dot for float schemes.  x: (cols).
float dot_row_ref(const QTensor& w, int64_t r, const float* x);

// y = W x.  W: (rows, cols) quantized; x: (cols); y: (rows).
// Integer schemes accumulate sum_i (u_i - z) * x_i per group in float and multiply by the group's
// scale once, the way the fast kernels do.
void gemv_ref(const QTensor& w, const float* x, float* y);
// Y = X W^T.  X: (n, cols) row-major; Y: (n, rows) row-major.
void gemm_ref(const QTensor& w, const float* x, int64_t n, float* y);

// Reference of the weight-only bf16 path (has_bf16_weight_path): gemm_ref on x' = hi + lo, each activation
// split by split_bf16 (x' is exact in fp32). Finite |x| < 2^126 (bf16_safe).  X: (n, cols);  Y: (n, rows).
void gemm_bf16_ref(const QTensor& w, const float* x, int64_t n, float* y);

// Reference of the dynamic-activation path (integer and K weights): each token is quantized with
// quantize_activations (kernels.h), then y = s_x * sum_g s_g * sum_{i in g} (u_i - z_g) a_i with the
// integer sums exact (int64) and the scaling in double (K families: per sub-block b, D_b sum (q - zero) a -
// M_b sum a, from the grid kgrid gives).  X: (n, cols);  Y: (n, rows).
// act = ActMode::dynamic_int16 quantizes with quantize_activations16 instead (the 16-bit codes whole,
// not the kernels' two halves).
void gemm_dynamic_ref(const QTensor& w, const float* x, int64_t n, float* y, ActMode act = ActMode::dynamic_int8);

}  // namespace mq
