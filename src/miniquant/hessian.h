// Hessian of a Linear layer's reconstruction error, H = X X^T / n, accumulated in double from
// batches of input activations (never all of them at once), with the statistics worth reporting.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Core>

namespace mq {

class Hessian {
 public:
  explicit Hessian(int64_t in);

  // x: (n, in) row-major, one activation vector per row.
  void add(const float* x, int64_t n);
  int64_t in() const { return in_; }
  int64_t samples() const { return n_; }
  // H = X X^T / n (in, in), symmetric. Throws mq::Error when no samples were added.
  Eigen::MatrixXd matrix() const;

 private:
  int64_t in_ = 0, n_ = 0;
  Eigen::MatrixXd sum_;  // (in, in) X X^T, lower triangle kept up to date
};

struct HessianStats {
  int64_t samples = 0;
  double trace = 0.0;
  double condition = 0.0;            // lambda_max / lambda_min over the live columns (+inf if singular)
  double offdiag_fraction = 0.0;     // sum_{i != j} |H_ij| / sum_ij |H_ij|
  std::vector<int64_t> dead_columns; // diag(H) == 0: inputs that never fire
};
HessianStats hessian_stats(const Eigen::MatrixXd& h, int64_t samples);

}  // namespace mq
