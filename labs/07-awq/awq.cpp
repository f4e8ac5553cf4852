// Lab 07 (see README.md next to this file): AWQ on MiniGPT. Replace each TODO body; keep the signatures
// (lab07.h). Grade with `miniquant lab check 07`. Block E runs blocks A, C and D on the whole model.
// Call your own functions qualified (lab::fold_input_scale(...)): with minigpt:: arguments an unqualified call
// also finds the library's function of the same name by argument-dependent lookup and is ambiguous.
#include "lab07.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "miniquant/error.h"
#include "miniquant/gptq.h"      // mq::output_error(w, w2, rows, cols, h)
#include "miniquant/half.h"      // mq::f32_to_f16, mq::f16_to_f32
#include "miniquant/quantize.h"  // mq::quantize, mq::dequantize

namespace lab {

std::vector<float> channel_mean_abs(const float* x, int64_t n, int64_t in) {
  // TODO(lab 07 block A): sum |x[r * in + j]| over the rows in double, divide by n.
  (void)x, (void)n, (void)in;
  throw std::logic_error("lab 07 block A: not implemented yet (channel_mean_abs in labs/07-awq/awq.cpp)");
}

std::vector<int64_t> top_channels(const std::vector<float>& importance, double fraction) {
  // TODO(lab 07 block B): sort channel indices by importance, largest first, ties to the lower index.
  (void)importance, (void)fraction;
  throw std::logic_error("lab 07 block B: not implemented yet (top_channels in labs/07-awq/awq.cpp)");
}

std::vector<float> keep_salient_fp16(const float* w, int64_t out, int64_t in, const mq::Scheme& s, const std::vector<int64_t>& keep) {
  // TODO(lab 07 block B): mq::quantize + mq::dequantize, then the kept columns back at fp16(w).
  (void)w, (void)out, (void)in, (void)s, (void)keep;
  throw std::logic_error("lab 07 block B: not implemented yet (keep_salient_fp16 in labs/07-awq/awq.cpp)");
}

AwqChoice awq_search(const float* w, int64_t out, int64_t in, const std::vector<float>& mean_abs, const Eigen::MatrixXd& h,
                     const mq::Scheme& s) {
  // TODO(lab 07 block C): 20 values of alpha; scale, quantize, dequantize, unscale, mq::output_error; keep the best.
  (void)w, (void)out, (void)in, (void)mean_abs, (void)h, (void)s;
  throw std::logic_error("lab 07 block C: not implemented yet (awq_search in labs/07-awq/awq.cpp)");
}

void fold_input_scale(minigpt::Model& m, const minigpt::LinearInfo& li, const std::vector<float>& s) {
  // TODO(lab 07 block D): W[:, j] *= s_j; the producer's channel j /= s_j.
  (void)m, (void)li, (void)s;
  throw std::logic_error("lab 07 block D: not implemented yet (fold_input_scale in labs/07-awq/awq.cpp)");
}

}  // namespace lab
