// Correctness of either side before it is timed: its output against a reference computed in double from its own
// dequantized weights (ggml's to_float, our mq::dequantize) and the activations its kernel multiplies (RefActs),
// within a bound derived from what is left:
//
//   |y - sum_j w_j x'_j| <= 1.01 (sum_j |w_j| e_j + (in + 8) 2^-24 sum_j |w_j| (|x'_j| + e_j))
//
// x' is the kernel's activation as far as it is known exactly, e_j what it may still differ by: our +a8 codes
// come from the library's own quantize_activations (e = 0); weight-only keeps x (e = 2^-16 |x|, the bf16 split);
// ggml's come from its reference quantizer for the dot product's activation type (from_float_ref, then
// to_float), and its SIMD quantizer may round a value that sits on a half-step tie the other way (e = one step
// there, 0 elsewhere). The second term is the first-order bound of any summation order of `in` products, each
// with a few roundings. A kernel bug of a few percent in one output already exceeds it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ggml.h"
#include "ggml_api.h"
#include "miniquant/kernels/blocked.h"
#include "lut_q3k_kernel16.h"
#include "pairs.h"

namespace vsggml {

struct RefActs {
  std::vector<float> x;       // (n, in): the activations the reference multiplies
  std::vector<double> slack;  // (n, in): e_j, what the kernel's activation may still differ by
};

// Weight-only: x itself; the bf16 kernels multiply hi + lo of split_bf16 (within 2^-16 |x|).
RefActs weight_only_acts(const std::vector<float>& x, int64_t n, int64_t in);
// The 16-bit table rows (bench/lut_kernel16.h, symmetric schemes): x itself, each activation of weight group g with
// slack 0.5 s_g (1 + 2^-20), s_g the group's table step as the kernel computes it. Why that bounds the kernel: a
// column pair looks up one entry within 0.5 s_g of (u1 - z) x1 + (u0 - z) x0; a pair whose two weights are zero
// looks up entry 0, exact; any other pair has a weight |w| >= the group's scale, so its error times that scale is
// at most (|w0| + |w1|) 0.5 s_g, the pair's share of sum_j |w_j| e_j. int3's bit planes (bench/lut3_kernel16.h) look up
// a pair's and a quad's entry per weight: slack s_g (1 + 2^-20), the argument in that header.
RefActs table16_acts(const std::vector<float>& x, int64_t n, int64_t in, const mq::BlockedCodes& w);
// The K table rows (bench/lut_q2k_kernel16.h, lut_q3k_kernel16.h): x itself, each activation of super-block g with
// the header's slack (q2_k: (0.5 s_g + sx / 32)(1 + 2^-20); q3_k: s_g (1 + 2^-20)); the check takes the weights'
// magnitudes |D| |q - zero| + |M| (k_magnitudes) in place of |w|, as the headers' bounds do.
RefActs ktable16_acts(const std::vector<float>& x, int64_t n, int64_t in, const mqbench::lut::KTable16& w);
// Our +a8: per token s * a with a = mq::quantize_activations(x), the codes the kernels use.
RefActs int8_token_acts(const std::vector<float>& x, int64_t n, int64_t in);
// ggml's: each token through the activation type's reference quantizer, then its to_float (rows: Api::act_rows;
// traits: its block and bytes); a value whose x * codes_max / absmax lies within 1e-3 of a half-step gets one
// step of slack.
RefActs ggml_acts(const std::vector<float>& x, int64_t n, int64_t in, const ggml_type_traits& traits, const Api::ActRows& rows,
                  const ActQuant& q);

// Compares y: (n, out) with deq: (out, in) times a.x on every 17th row and the last, every token: "" when every
// output is within the bound, else the first miss in one line. mags: (out, in) what each weight's errors scale with
// in place of |deq| (null: |deq|).
std::string check_output(const std::vector<float>& deq, int64_t out, int64_t in, const RefActs& a, int64_t n,
                         const std::vector<float>& y, const std::vector<float>* mags = nullptr);

}  // namespace vsggml
