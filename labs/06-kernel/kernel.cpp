// Lab 06 (see README.md next to this file): a quantized GEMV from the obvious loops to the roofline. Replace
// each TODO body; keep the signatures (lab06.h). Grade with `miniquant lab check 06`.
// Call your own functions qualified (lab::gemv_ref(...)): with mq:: arguments an unqualified call also finds
// the library's function of the same name by argument-dependent lookup and is ambiguous.
#include "lab06.h"

#include <cmath>
#include <stdexcept>

#include <omp.h>
#include <xsimd/xsimd.hpp>

#include "miniquant/half.h"  // mq::f16_to_f32: a scale's fp16 bits as a float
#include "miniquant/pack.h"  // mq::field_at: one field of a packed row

namespace lab {

void gemv_ref(const mq::QTensor& w, const float* x, float* y) {
  // TODO(lab 06 block A): per row, per group: acc += (field - z) * x[c]; y[r] += scale * acc.
  (void)w, (void)x, (void)y;
  throw std::logic_error("lab 06 block A: not implemented yet (gemv_ref in labs/06-kernel/kernel.cpp)");
}

float quantize_activations(const float* x, int64_t cols, int8_t* a) {
  // TODO(lab 06 block B): s = absmax / 127; a[i] = round-half-even(x[i] / s) (std::nearbyint), clamped.
  (void)x, (void)cols, (void)a;
  throw std::logic_error("lab 06 block B: not implemented yet (quantize_activations in labs/06-kernel/kernel.cpp)");
}

void gemv_a8(const mq::QTensor& w, const float* x, float* y) {
  // TODO(lab 06 block B): your quantize_activations, then int32 sums of (field - z) * a per group.
  (void)w, (void)x, (void)y;
  throw std::logic_error("lab 06 block B: not implemented yet (gemv_a8 in labs/06-kernel/kernel.cpp)");
}

void gemv_unrolled(const mq::QTensor& w, const float* x, float* y) {
  // TODO(lab 06 block C): several independent accumulators, so the adds do not wait for each other.
  (void)w, (void)x, (void)y;
  throw std::logic_error("lab 06 block C: not implemented yet (gemv_unrolled in labs/06-kernel/kernel.cpp)");
}

void gemv_threads(const mq::QTensor& w, const float* x, float* y, int threads) {
  // TODO(lab 06 block D): #pragma omp parallel for num_threads(threads) over the rows.
  (void)w, (void)x, (void)y, (void)threads;
  throw std::logic_error("lab 06 block D: not implemented yet (gemv_threads in labs/06-kernel/kernel.cpp)");
}

void gemv_simd(const mq::QTensor& w, const float* x, float* y, int threads) {
  // TODO(lab 06 block E): decode a group's fields into floats, then xsimd::batch<float> fused multiply-adds.
  (void)w, (void)x, (void)y, (void)threads;
  throw std::logic_error("lab 06 block E: not implemented yet (gemv_simd in labs/06-kernel/kernel.cpp)");
}

void gemm_simd(const mq::QTensor& w, const float* x, int64_t n, float* y, int threads) {
  // TODO(lab 06 block F): decode each group once, then multiply it with every token's x.
  (void)w, (void)x, (void)n, (void)y, (void)threads;
  throw std::logic_error("lab 06 block F: not implemented yet (gemm_simd in labs/06-kernel/kernel.cpp)");
}

}  // namespace lab
