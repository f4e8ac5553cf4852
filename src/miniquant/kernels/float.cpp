// Weight-only kernels for float storage: fp32, fp16, bf16 (16-bit values widened in registers).
// fp32 with many tokens is a plain SGEMM: Eigen's packed, cache- and register-blocked GEMM does it
// better than a decode-style kernel (2x at 64 tokens), so that path is Eigen on each thread's rows.
#include <omp.h>

#include <algorithm>

#include <Eigen/Core>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {

namespace kdetail {

// Through Eigen's serial GEMM kernel (Eigen::internal::general_matrix_matrix_product, Eigen 3.4). Not the
// public product: inside a one-thread parallel region (or outside any) that one starts its own OpenMP team,
// so "1 thread" would run 2 and contend with the caller's team (measured: 56 ms instead of 21 ms at
// 64x4096x4096).
void gemm_fp32_serial(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y, int64_t ldy) {
  using Eigen::Index;
  for (int64_t t = 0; t < n; ++t) std::fill(y + t * ldy, y + t * ldy + rows, 0.0f);  // the kernel adds
  using namespace Eigen::internal;
  gemm_blocking_space<Eigen::RowMajor, float, float, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(n, rows, cols, 1,
                                                                                                            true);
  // Lhs X row-major (n x cols); rhs W^T column-major (cols x rows); result row-major with row stride ldy.
  general_matrix_matrix_product<Index, float, Eigen::RowMajor, false, float, Eigen::ColMajor, false, Eigen::RowMajor, 1>::run(
      n, rows, cols, x, cols, w, cols, y, 1, ldy, 1.0f, blocking, nullptr);
}

}  // namespace kdetail

namespace {

// Y[:, r0:r1] = X W[r0:r1, :]^T on each thread's rows, through the serial Eigen GEMM of gemm_fp32_serial.
// x: (n, cols);  y: (n, rows).  WT: a QTensor or FloatRows.
template <class WT>
void gemm_fp32_eigen(const WT& w, const float* x, int64_t n, float* y, int threads) {
  const float* wf = reinterpret_cast<const float*>(w.codes.data());
#pragma omp parallel num_threads(threads)
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t per = (w.rows + nt - 1) / nt;
    const int64_t r0 = std::min(w.rows, tid * per), r1 = std::min(w.rows, r0 + per);
    if (r1 > r0) kdetail::gemm_fp32_serial(wf + r0 * w.cols, r1 - r0, w.cols, x, n, y + r0, w.rows);
  }
}

// fp32 weights the caller owns (a model's parameter buffer, which training updates in place), with the
// members the word kernel and the Eigen path read from a QTensor: no copy of the weights.
struct FloatRows {
  Scheme scheme = Scheme::fp32();
  int64_t rows = 0, cols = 0;
  struct Codes {
    const uint8_t* p = nullptr;
    const uint8_t* data() const { return p; }
  } codes;
  int64_t row_bytes() const { return 4 * cols; }
};

// Both fp32 paths: a streaming tile that reads each weight row once for up to 4 tokens (decode, small
// batches), Eigen's packed GEMM from kEigenMinTokens on. Either runs on `threads` threads.
template <class WT>
void gemm_fp32_any(const WT& w, const float* x, int64_t n, float* y, int threads) {
  if (n >= kdetail::kEigenMinTokens) return gemm_fp32_eigen(w, x, n, y, threads);
  kdetail::run<kdetail::DecF32, 0, WT>(w, x, n, y, threads);
}

}  // namespace

void gemm_fp32(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y, int threads) {
  if (empty_product(rows, cols, n, y, "gemm_fp32")) return;
  FloatRows v;
  v.rows = rows;
  v.cols = cols;
  v.codes.p = reinterpret_cast<const uint8_t*>(w);
  gemm_fp32_any(v, x, n, y, threads > 0 ? threads : default_threads());
}

namespace {
void fp32_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  gemm_fp32_any(w, x, n, y, threads);
}
template <class Dec>
void float_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  kdetail::run<Dec, 0>(w, x, n, y, threads);
}
// The F16C decoder only exists where the build has it (f16c_built); elsewhere the row never runs.
void fp16_f16c_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode, bool) {
  if constexpr (kdetail::DecF16Wide::kAvailable) kdetail::run<kdetail::DecF16Fast, 0>(w, x, n, y, threads);
  else kdetail::run<kdetail::DecF16, 0>(w, x, n, y, threads);
}
bool f16c_built(const QTensor&) { return kdetail::DecF16Wide::kAvailable; }
}  // namespace

std::vector<KernelRow> kernel_rows_float() {
  using namespace kdetail;
  const ActSet wo = act_bit(ActMode::weight_only);
  return {
      {families_of({"fp32"}), wo, Layout::row_major, Acts::any, false, nullptr, fp32_rows, nullptr, "any",
       "`gemm_fp32_any`: `run<DecF32>` below 16 tokens, Eigen's GEMM from 16 (`float.cpp`)", "`gemm_ref`", "`test_kernels`"},
      {families_of({"fp16"}), wo, Layout::row_major, Acts::any, true, f16c_built, fp16_f16c_rows, nullptr,
       "AVX-512 (F16C)", "`run<DecF16Fast>`: `vcvtph2ps` (`float.cpp`, `word_kernel.h`)", "`gemm_ref`", "`test_kernels`"},
      {families_of({"fp16"}), wo, Layout::row_major, Acts::any, false, nullptr, float_rows<DecF16>, nullptr, "any",
       "`run<DecF16>`", "`gemm_ref`", "`test_kernels`"},
      {families_of({"bf16"}), wo, Layout::row_major, Acts::any, false, nullptr, float_rows<DecBF16>, nullptr, "any",
       "`run<DecBF16>`: a 16-bit shift", "`gemm_ref`", "`test_kernels`"},
  };
}

}  // namespace mq
