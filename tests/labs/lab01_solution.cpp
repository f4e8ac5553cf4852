// A learner-style solution of lab 01 (GPTQ), written from the handout alone on 2026-11-29
// (labs/01-gptq/README.md, lab01.h, the starter and the library headers it names).
// Graded by the test suite's lab01_solution grader, not the course's reference; it is not the
// reference and may differ from it in details the grader does not check.
#include "lab01.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Cholesky>

#include "miniquant/error.h"
#include "miniquant/pack.h"      // mq::pack_fields (lab 00)
#include "miniquant/quantize.h"  // mq::symmetric_grid, mq::encode, mq::dequantize (lab 00)

namespace lab {

Hessian::Hessian(int64_t in) : in_(in) {
  if (in <= 0) throw mq::UsageError("Hessian: width must be positive, got " + std::to_string(in));
  sum_ = Eigen::MatrixXd::Zero(in, in);
}

void Hessian::add(const float* x, int64_t n) {
  if (n <= 0) return;
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMat> xf(x, n, in_);
  Eigen::MatrixXd xd = xf.cast<double>();
  sum_.noalias() += xd.transpose() * xd;
  n_ += n;
}

Eigen::MatrixXd Hessian::matrix() const {
  if (n_ == 0) throw mq::Error("Hessian: no samples added");
  Eigen::MatrixXd h = (sum_ + sum_.transpose()) * (0.5 / static_cast<double>(n_));
  return h;
}

double output_error(const float* w, const mq::QTensor& q, const Eigen::MatrixXd& h) {
  const int64_t rows = q.rows, cols = q.cols;
  if (h.rows() != cols || h.cols() != cols) throw mq::UsageError("output_error: H has the wrong size");
  std::vector<float> dq = mq::dequantize(q);
  Eigen::MatrixXd e(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      e(r, c) = static_cast<double>(w[r * cols + c]) - static_cast<double>(dq[r * cols + c]);
  Eigen::MatrixXd eh = e * h;
  return eh.cwiseProduct(e).sum();
}

namespace {

mq::Grid grid_of(const double* v, int64_t n, int64_t stride, const mq::Scheme& s) {
  if (s.symmetric) {
    double a = 0.0;
    for (int64_t i = 0; i < n; ++i) a = std::max(a, std::abs(v[i * stride]));
    return mq::symmetric_grid(static_cast<float>(a), s);
  }
  double lo = 0.0, hi = 0.0;
  bool first = true;
  for (int64_t i = 0; i < n; ++i) {
    double x = v[i * stride];
    if (first) lo = hi = x, first = false;
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  return mq::asymmetric_grid(static_cast<float>(lo), static_cast<float>(hi), s);
}

}  // namespace

mq::GptqResult gptq_quantize(const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXd& h, const mq::Scheme& s,
                             const mq::GptqOptions& o, std::string_view name) {
  if (!s.is_integer()) throw mq::UsageError("gptq: only integer schemes are supported (got " + s.name() + ")");
  if (o.act_order) throw mq::UsageError("gptq: act_order is not part of lab 01");
  s.check_shape(rows, cols);
  if (h.rows() != cols || h.cols() != cols)
    throw mq::UsageError("gptq: H is " + std::to_string(h.rows()) + "x" + std::to_string(h.cols()) + ", expected " +
                         std::to_string(cols));
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(w[i])) throw mq::Error("gptq: non-finite weight in " + std::string(name));
  if (!h.allFinite()) throw mq::Error("gptq: non-finite Hessian for " + std::string(name));

  mq::GptqResult res;
  // W in double, (rows, cols) column-major so a column is contiguous.
  Eigen::MatrixXd W(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) W(r, c) = w[r * cols + c];

  // 1. dead columns
  Eigen::MatrixXd H = h;
  for (int64_t j = 0; j < cols; ++j)
    if (H(j, j) == 0.0) {
      H(j, j) = 1.0;
      W.col(j).setZero();
      res.dead_columns.push_back(j);
    }

  // 2-3. damping with retries, U = upper Cholesky factor of H^-1
  const double mean_diag = H.diagonal().mean();
  double perc = o.percdamp;
  Eigen::MatrixXd U;
  for (int attempt = 0;; ++attempt) {
    Eigen::MatrixXd Hd = H;
    Hd.diagonal().array() += perc * mean_diag;
    Eigen::LLT<Eigen::MatrixXd> llt(Hd);
    bool ok = llt.info() == Eigen::Success;
    if (ok) {
      Eigen::MatrixXd Hinv = llt.solve(Eigen::MatrixXd::Identity(cols, cols));
      Hinv = (Hinv + Hinv.transpose()) * 0.5;
      Eigen::LLT<Eigen::MatrixXd> llt2(Hinv);
      if (llt2.info() == Eigen::Success) {
        U = llt2.matrixU();
        if (U.allFinite()) {
          res.percdamp_used = perc;
          res.damp_retries = attempt;
          break;
        }
      }
    }
    if (attempt >= o.max_damp_retries)
      throw mq::Error("gptq: Hessian of " + std::string(name) + " not factorisable even with damping " +
                      std::to_string(perc));
    perc *= 10.0;
    res.notes.push_back("Cholesky failed; damping raised to " + std::to_string(perc));
  }

  // Grids
  const int64_t gw = s.group_width(cols);
  const int64_t gpr = s.groups_per_row(cols);
  std::vector<mq::Grid> grids(static_cast<size_t>(s.group > 0 ? rows * gpr : (s.group == mq::kPerChannel ? rows : 1)));
  if (s.group == mq::kPerTensor) {
    grids[0] = grid_of(W.data(), rows * cols, 1, s);
  } else if (s.group == mq::kPerChannel) {
    for (int64_t r = 0; r < rows; ++r) grids[r] = grid_of(W.data() + r, cols, rows, s);
  }
  auto grid_at = [&](int64_t r, int64_t c) -> const mq::Grid& {
    if (s.group == mq::kPerTensor) return grids[0];
    if (s.group == mq::kPerChannel) return grids[r];
    return grids[r * gpr + c / gw];
  };

  int64_t block = std::max<int64_t>(1, o.block);
  if (s.group > 0) block = ((block + s.group - 1) / s.group) * s.group;

  std::vector<uint8_t> fields(static_cast<size_t>(rows * cols));
  double proxy = 0.0;
  for (int64_t b0 = 0; b0 < cols; b0 += block) {
    const int64_t b1 = std::min(cols, b0 + block);
    const int64_t bn = b1 - b0;
    Eigen::MatrixXd Err(rows, bn);
    for (int64_t i = b0; i < b1; ++i) {
      if (s.group > 0 && i % s.group == 0) {
        const int64_t g = i / s.group;
        for (int64_t r = 0; r < rows; ++r) {
          // group columns i .. i+group-1, row r: stride rows in column-major storage
          grids[r * gpr + g] = grid_of(&W(r, i), s.group, rows, s);
        }
      }
      const double d = U(i, i);
      for (int64_t r = 0; r < rows; ++r) {
        const mq::Grid& g = grid_at(r, i);
        const double wv = W(r, i);
        const uint8_t u = mq::encode(static_cast<float>(wv), g, s);
        fields[r * cols + i] = u;
        const double qv = static_cast<double>(g.scale) * (static_cast<int>(u) - g.zero);
        const double diff = wv - qv;
        proxy += diff * diff / (2.0 * d * d);
        Err(r, i - b0) = diff / d;
      }
      // propagate inside the block
      if (i + 1 < b1)
        W.block(0, i + 1, rows, b1 - i - 1).noalias() -= Err.col(i - b0) * U.block(i, i + 1, 1, b1 - i - 1);
    }
    // 5. lazy update
    if (b1 < cols) W.rightCols(cols - b1).noalias() -= Err * U.block(b0, b1, bn, cols - b1);
  }
  res.proxy_loss = proxy;

  // 6. store
  mq::QTensor& q = res.q;
  q.scheme = s;
  q.name = std::string(name);
  q.rows = rows;
  q.cols = cols;
  const int64_t rb = q.row_bytes();
  q.codes.assign(static_cast<size_t>(rows * rb), 0);
  for (int64_t r = 0; r < rows; ++r) mq::pack_fields(fields.data() + r * cols, cols, s.bits, q.codes.data() + r * rb);
  q.scales.resize(grids.size());
  for (size_t k = 0; k < grids.size(); ++k) q.scales[k] = grids[k].scale_bits;
  if (!s.symmetric) {
    std::vector<uint8_t> z(grids.size());
    for (size_t k = 0; k < grids.size(); ++k) z[k] = static_cast<uint8_t>(grids[k].zero);
    q.zeros.assign(static_cast<size_t>((static_cast<int64_t>(z.size()) * s.bits + 7) / 8), 0);
    mq::pack_fields(z.data(), static_cast<int64_t>(z.size()), s.bits, q.zeros.data());
  }
  return res;
}

}  // namespace lab
