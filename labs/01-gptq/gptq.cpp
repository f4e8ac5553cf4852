// Lab 01 (see README.md next to this file): your Hessian and GPTQ. Replace each TODO body; keep the
// signatures (lab01.h). Grade with `miniquant lab check 01`.
// Call your own functions qualified (lab::encode(...)): with mq:: arguments an unqualified call also
// finds the library's function of the same name by argument-dependent lookup and is ambiguous.
#include "lab01.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <Eigen/Cholesky>

#include "miniquant/error.h"
#include "miniquant/pack.h"      // mq::pack_fields (lab 00)
#include "miniquant/quantize.h"  // mq::symmetric_grid, mq::encode, mq::dequantize (lab 00)

namespace lab {

Hessian::Hessian(int64_t in) : in_(in) {
  // TODO(lab 01 block A): allocate the (in, in) sum.
  throw std::logic_error("lab 01 block A: not implemented yet (Hessian in labs/01-gptq/gptq.cpp)");
}

void Hessian::add(const float* x, int64_t n) {
  // TODO(lab 01 block A): sum_ += X^T X in double (X: n rows of `in` activations); n_ += n.
  (void)x, (void)n;
  throw std::logic_error("lab 01 block A: not implemented yet (Hessian::add in labs/01-gptq/gptq.cpp)");
}

Eigen::MatrixXd Hessian::matrix() const {
  // TODO(lab 01 block A): sum_ / n_, symmetric; mq::Error when n_ == 0.
  throw std::logic_error("lab 01 block A: not implemented yet (Hessian::matrix in labs/01-gptq/gptq.cpp)");
}

double output_error(const float* w, const mq::QTensor& q, const Eigen::MatrixXd& h) {
  // TODO(lab 01 block B): E = W - dequantize(Q) (rows, cols) in double; return sum of (E H) .* E.
  (void)w, (void)q, (void)h;
  throw std::logic_error("lab 01 block B: not implemented yet (output_error in labs/01-gptq/gptq.cpp)");
}

mq::GptqResult gptq_quantize(const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXd& h, const mq::Scheme& s,
                             const mq::GptqOptions& o, std::string_view name) {
  // TODO(lab 01 block C): see the handout's steps 1-6.
  (void)w, (void)rows, (void)cols, (void)h, (void)s, (void)o, (void)name;
  throw std::logic_error("lab 01 block C: not implemented yet (gptq_quantize in labs/01-gptq/gptq.cpp)");
}

}  // namespace lab
