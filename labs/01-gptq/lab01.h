// Lab 01: the functions you write, declared with the library's signatures (src/miniquant/hessian.h,
// gptq.h) in namespace `lab`. The grader (`miniquant lab check 01`) compares them with the library's
// and runs your GPTQ on a real MiniGPT Linear. Do not edit this header.
#pragma once
#include <cstdint>
#include <string_view>

#include <Eigen/Core>

#include "miniquant/gptq.h"
#include "miniquant/quantize.h"

namespace lab {

// Block A. H = X X^T / n of a Linear's inputs, accumulated in double over batches.
class Hessian {
 public:
  explicit Hessian(int64_t in);
  // x: (n, in) row-major, one activation vector per row.
  void add(const float* x, int64_t n);
  int64_t in() const { return in_; }
  int64_t samples() const { return n_; }
  // H (in, in), symmetric. Throws mq::Error when no samples were added.
  Eigen::MatrixXd matrix() const;

 private:
  int64_t in_ = 0, n_ = 0;
  Eigen::MatrixXd sum_;  // (in, in) running X X^T
};

// Block B. tr((W - Q) H (W - Q)^T) = ||W X - Q X||^2 / n: the layer's output error.
double output_error(const float* w, const mq::QTensor& q, const Eigen::MatrixXd& h);

// Block C. GPTQ: w (rows, cols) row-major, h (cols, cols). Dead columns, damping, the upper Cholesky
// factor of H^-1, the column loop with error propagation, lazy block updates, per-group scales chosen
// when the loop enters a group. Same storage as round-to-nearest (fill res.q, proxy_loss,
// percdamp_used, dead_columns). act_order is not part of the lab (it may throw mq::UsageError).
mq::GptqResult gptq_quantize(const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXd& h, const mq::Scheme& s,
                             const mq::GptqOptions& o = {}, std::string_view name = "weight");

}  // namespace lab
