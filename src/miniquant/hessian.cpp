// Hessian accumulation (rank-n updates in double) and its summary statistics.
#include "miniquant/hessian.h"

#include <cmath>
#include <limits>

#include <Eigen/Eigenvalues>
#include <fmt/core.h>

#include "miniquant/error.h"

namespace mq {

Hessian::Hessian(int64_t in) : in_(in), sum_(Eigen::MatrixXd::Zero(in, in)) {}

void Hessian::add(const float* x, int64_t n) {
  if (n <= 0) return;
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajorF> xs(x, n, in_);
  // Double before the product: activations sum over thousands of tokens.
  const Eigen::MatrixXd xd = xs.cast<double>();  // (n, in)
  sum_.selfadjointView<Eigen::Lower>().rankUpdate(xd.transpose());
  n_ += n;
}

Eigen::MatrixXd Hessian::matrix() const {
  if (n_ == 0) throw Error("Hessian: no calibration samples were added");
  Eigen::MatrixXd h = sum_.selfadjointView<Eigen::Lower>();
  return h / static_cast<double>(n_);
}

HessianStats hessian_stats(const Eigen::MatrixXd& h, int64_t samples) {
  HessianStats st;
  st.samples = samples;
  st.trace = h.trace();
  double diag_abs = 0.0;
  std::vector<int64_t> live;
  for (int64_t i = 0; i < h.rows(); ++i) {
    diag_abs += std::fabs(h(i, i));
    if (h(i, i) == 0.0) st.dead_columns.push_back(i);
    else live.push_back(i);
  }
  const double total_abs = h.cwiseAbs().sum();
  st.offdiag_fraction = total_abs > 0.0 ? (total_abs - diag_abs) / total_abs : 0.0;
  if (!live.empty()) {
    Eigen::MatrixXd sub(live.size(), live.size());
    for (size_t i = 0; i < live.size(); ++i)
      for (size_t j = 0; j < live.size(); ++j) sub(i, j) = h(live[i], live[j]);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(sub, Eigen::EigenvaluesOnly);
    const double lo = es.eigenvalues().minCoeff(), hi = es.eigenvalues().maxCoeff();
    st.condition = lo > 0.0 ? hi / lo : std::numeric_limits<double>::infinity();
  }
  return st;
}

}  // namespace mq
