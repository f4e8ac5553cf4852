// Public entry points of the fast kernels: y = W x for one token (GEMV) or n tokens (GEMM), for every
// scheme of the format table, under every activation mode; kernels/registry.h says which kernel runs which
// (family, activation mode, build).
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

#include "miniquant/half.h"
#include "miniquant/quantize.h"

namespace mq {

enum class ActMode : uint8_t {
  weight_only,   // activations stay fp32; weights are decoded in registers
  dynamic_int8,  // activations quantized per token to int8 (one fp32 scale per token), integer dots
  // Activations quantized per token to 16 bits (quantize_activations16: |a| <= 32639, one fp32 scale),
  // each code split into two int8 halves a = 256 h + l, so the int8 dot products run twice (h and l)
  // on the same weight loads: integer speed with activations ~256x finer than int8. Its error against
  // fp32 activations is at most s_x / 2 * sum |w| per output (s_x = absmax / 32639) plus float rounding.
  dynamic_int16,
  // Weight-only with each activation rounded once per call to bf16 (round to nearest even, bf16_round: 8
  // significant bits, |bf16(x) - x| <= 2^-8 |x|), so the error against fp32 activations is at most
  // 2^-8 sum |w x| per output plus the fp32 accumulation's rounding. Any scheme (the weights are those of
  // weight_only). On AVX-512 BF16 builds int4 / int3 / int2 (has_bf16_weight_path) multiply bf16(x) directly:
  // one vdpbf16ps per 32 weights where weight_only's two-bf16 split needs two. Elsewhere the activations are
  // rounded into a copy and the weight-only kernel runs on it. A call with a NaN, an Inf or a magnitude of 2^126
  // or more among its activations runs weight_only on x unrounded (bf16_safe).
  bf16,
};

// True for the modes that quantize the activations (+a8, +a16): the dynamic kernels (the integer and K families).
inline constexpr bool is_dynamic(ActMode a) { return a == ActMode::dynamic_int8 || a == ActMode::dynamic_int16; }

struct KernelOptions {
  int threads = 0;                     // 0: default_threads() (OMP_NUM_THREADS unless set_default_threads)
  ActMode act = ActMode::weight_only;
  bool use_isa = true;                 // false forces the portable path (tests compare both)
};

// Shapes with nothing to multiply: throws UsageError (naming `who`) for n < 0; returns true, with
// y (n, rows) zero-filled, when n, rows or cols is 0.
bool empty_product(int64_t rows, int64_t cols, int64_t n, float* y, const char* who);

// Threads used when KernelOptions::threads == 0. Starts at omp_get_max_threads().
void set_default_threads(int n);
int default_threads();

// Y = X W^T.  W: (rows, cols) quantized;  x: (n, cols) row-major;  y: (n, rows) row-major. Runs the registry's
// row-major row for (family, opt.act, opt.use_isa). Throws UsageError when no row serves the mode and family.
void gemm(const QTensor& w, const float* x, int64_t n, float* y, const KernelOptions& opt = {});

// True when the dynamic modes (ActMode::dynamic_int8 / dynamic_int16) can run this scheme: a registry row serves
// its family (int8, int4, symmetric or asymmetric, and the K families).
bool supports_dynamic(const Scheme& s);
// True when this build has the VNNI (vpdpbusd) path compiled in.
bool has_vnni_path();
// True when this build runs the weight-only fields of s's family on AVX-512 BF16 dot products (use_isa): int4 and
// int2 where the CPU has AVX-512 BF16, int3 where it also has VBMI (vpermi2b spreads its 3-byte pieces). Each activation
// split into two bf16 (split_bf16), so the product is W x' with x' = hi + lo, within 2^-16 sum |w x| of fp32
// activations per output, plus the fp32 accumulation's rounding (and bf16 inputs below 2^-126, which
// vdpbf16ps counts as zero). Calls with a NaN, an Inf or a magnitude of 2^126 or more among the activations
// run the fp32 kernels instead (bf16_safe), which propagate them as the reference does.
bool has_bf16_weight_path(const Scheme& s);

// An activation as two bf16, x = hi + lo + e: hi = bf16(x), lo = bf16(x - hi), round to nearest even (x - hi
// is exact in fp32), so |e| <= 2^-8 |x - hi| <= 2^-16 |x|: bf16 keeps 8 significant bits. hi + lo is exact in
// fp32 (at most 17 significant bits). Finite |x| < 2^126 only (bf16_safe): hi cannot round to infinity.
inline void split_bf16(float x, uint16_t& hi, uint16_t& lo) {
  hi = f32_to_bf16(x);
  lo = f32_to_bf16(x - bf16_to_f32(hi));
}
// x rounded to bf16 (to nearest even; ActMode::bf16's activation), as an fp32.
inline float bf16_round(float x) { return bf16_to_f32(f32_to_bf16(x)); }
// x' = hi + lo of split_bf16, the activation the bf16 kernels multiply (exact in fp32).
inline float bf16_pair_value(float x) {
  uint16_t hi, lo;
  split_bf16(x, hi, lo);
  return bf16_to_f32(hi) + bf16_to_f32(lo);
}
// True when every activation can be split: finite and below 2^126 in magnitude (false for NaN). An int
// accumulator, because gcc 12 does not vectorise `bool &=` here: 92 ns for 256 values against 7 ns this way,
// paid on every call of a bf16-dot row (selection and the block path), 2-6% of a 256-wide one-token GEMV.
inline bool bf16_safe(const float* x, int64_t count) {
  int bad = 0;
  for (int64_t i = 0; i < count; ++i) bad |= !(std::fabs(x[i]) < 0x1p126f);
  return bad == 0;
}
// The dynamic (+a8 / +a16) kernels' instruction path for an integer family ("int8", "int4", "int3", "int2") in this
// build: "vnni" (AVX-512 VNNI), "avx2" (vpmaddubsw + vpmaddwd, for CPUs without VNNI) or "portable" (the plain-loop
// twin). -march=native decides; int3's decode needs VBMI besides, so it can be "portable" where the others are not.
// Throws mq::Error for any other family.
const char* dynamic_kernel_name(std::string_view family);
// The xsimd instruction set the weight-only and float kernels (word_kernel.h) and the optimized quantizer
// were compiled for, xsimd's default architecture: "avx512bw", "avx2", ... on x86, "arm64+neon" on aarch64 (the
// aarch64 build, preset `aarch64`). -march / -mcpu decides.
const char* simd_arch_name();

// The block dot the K families' +a8 runs on this build: "vnni", "avx2" or "portable".
const char* kquant_dynamic_kernel_name();
// fp32 weights the caller owns, w: (rows, cols) row-major, not copied: gemm_fp32_any's paths (a streaming
// tile that reads each row once for up to 4 tokens below 16 tokens, Eigen's GEMM from 16), on `threads`
// threads (0: default_threads()). What MiniGPT's fp32 Linears run, so the fp32 baseline decodes B sequences
// with one weight read per step, as the quantized kernels do.
void gemm_fp32(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y, int threads = 0);
namespace kdetail {
// From this many tokens on, fp32 runs Eigen's GEMM, and the K families their batch kernel (kquant_ftile.h's
// register tile on AVX-512, Eigen's GEMM on dequantized panels elsewhere)
// (measured: at 8 tokens fp32's streaming kernel is still ahead, at 64 Eigen is 2x faster; bench/README.md).
inline constexpr int64_t kEigenMinTokens = 16;
// y[t * ldy + r] = sum_k w[r * cols + k] x[t * cols + k] for r < rows, t < n on the calling thread alone
// (Eigen's serial packed GEMM; float.cpp).  w: (rows, cols);  x: (n, cols);  y: (n, ldy), ldy >= rows.
void gemm_fp32_serial(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y, int64_t ldy);
// The K families' AVX2 fused blocks (isa_x86_kfused_avx2.h) whatever this build's rows run. They are the K rows'
// path below the batch kernels on AVX2 CPUs without AVX-512 VNNI, and are compiled on every x86-64 build with AVX2,
// FMA and F16C, so that tests/test_kernels.cpp holds them to their bounds on AVX-512 machines too. Built: whether
// they are compiled here (the two calls throw mq::Error where not). w: a K tensor; x: (n, cols); y: (n, rows).
// Weight-only from 1 to 7 tokens (kquant.cpp); `+a8` at any count (kquant_dynamic.cpp).
bool kquant_fused_avx2_built();
void gemm_kquant_fused_avx2_wo(const QTensor& w, const float* x, int64_t n, float* y, int threads);
void gemm_kquant_fused_avx2_a8(const QTensor& w, const float* x, int64_t n, float* y, int threads);
}  // namespace kdetail

// Symmetric per-token activation quantization shared by the dynamic kernels and their reference:
// s = absmax / 127 (fp32), a_i = round_half_even(x_i / s) in [-127, 127]; s = 0 and a = 0 for a zero row;
// s = NaN (a = 0) when x holds a NaN or Inf, so that token's outputs are NaN.
// x: (cols);  a: (cols).  Returns s.
float quantize_activations(const float* x, int64_t cols, int8_t* a);

// The same with 16-bit codes for ActMode::dynamic_int16: s = absmax / kAct16Max, a_i = round_half_even(x_i / s)
// in [-kAct16Max, kAct16Max]. kAct16Max = 32767 - 128 keeps both halves of the split a = 256 h + l in int8
// (h = (a + 128) >> 8 in [-127, 127], l = a - 256 h in [-128, 127]; split_act16).
inline constexpr int32_t kAct16Max = 32639;
float quantize_activations16(const float* x, int64_t cols, int16_t* a);
// a = 256 h + l with h and l in int8 (a in [-kAct16Max, kAct16Max]).
inline void split_act16(int16_t a, int8_t& h, int8_t& l) {
  const int32_t hi = (int32_t{a} + 128) >> 8;  // floor((a + 128) / 256): arithmetic shift
  h = static_cast<int8_t>(hi);
  l = static_cast<int8_t>(int32_t{a} - 256 * hi);
}

}  // namespace mq
