// The GPTQ solver: dead columns, damping, upper Cholesky factor of H^-1, column loop with error
// propagation inside a block, lazy updates of the remaining columns after each block.
#include "miniquant/gptq.h"
#include "miniquant/util/timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <Eigen/Cholesky>
#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kquant.h"
#include "miniquant/kquant_search.h"
#include "miniquant/pack.h"
#include "miniquant/quantize_detail.h"

namespace mq {
namespace {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Grid of rows x n weights starting at column c0 of m (one group / one row / the whole tensor): the plain
// grid, or the chooser's (search_grid or a quantizer's own; imp: null, or the importances of those nc columns).
Grid grid_of(const Eigen::MatrixXd& m, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const Scheme& s, GridChooser chooser,
             const float* imp, std::string_view name, int64_t index) {
  std::vector<float> v(static_cast<size_t>(nr * nc));  // (nr, nc)
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t c = 0; c < nc; ++c) v[static_cast<size_t>(r * nc + c)] = static_cast<float>(m(r0 + r, c0 + c));
  if (chooser) return chooser(v.data(), nr * nc, imp, nc, s, name, index);
  return detail::grid_for(v.data(), nr * nc, s, name, index);
}

// Upper factor U of H^-1 = U^T U, with damping raised until both factorisations succeed.
Eigen::MatrixXd inverse_cholesky_upper(const Eigen::MatrixXd& h, const GptqOptions& o, std::string_view name,
                                       GptqResult& res) {
  const double mean_diag = h.diagonal().mean();
  double pd = o.percdamp;
  for (int attempt = 0;; ++attempt) {
    Eigen::MatrixXd hd = h;
    hd.diagonal().array() += pd * mean_diag;
    const Eigen::LLT<Eigen::MatrixXd> llt(hd);
    if (llt.info() == Eigen::Success) {
      const Eigen::MatrixXd hinv = llt.solve(Eigen::MatrixXd::Identity(h.rows(), h.cols()));
      const Eigen::LLT<Eigen::MatrixXd> llt2(hinv);
      if (llt2.info() == Eigen::Success && llt2.matrixL().toDenseMatrix().allFinite()) {
        res.percdamp_used = pd;
        res.damp_retries = attempt;
        return llt2.matrixU();
      }
    }
    if (attempt == o.max_damp_retries)
      throw Error(fmt::format("GPTQ on '{}': the Hessian cannot be factorised even with damping {:g} of its mean "
                              "diagonal; check the calibration activations", name, pd));
    res.notes.push_back(fmt::format("Cholesky failed with damping {:g}; retrying with {:g}", pd, pd * 10));
    pd *= 10;
  }
}

}  // namespace

GptqResult gptq_quantize(const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXd& h, const Scheme& s,
                         const GptqOptions& o, std::string_view name) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!s.is_integer() && !s.is_kquant())
    throw UsageError(fmt::format("GPTQ on '{}': scheme {} stores floats; GPTQ needs an integer grid", name, s.name()));
  GptqResult res;
  res.q = detail::make_tensor(rows, cols, s, name);
  detail::check_finite_ref(w, rows, cols, name);
  if (h.rows() != cols || h.cols() != cols)
    throw UsageError(fmt::format("GPTQ on '{}': Hessian is {}x{} but the weight has {} input columns", name, h.rows(),
                                 h.cols(), cols));
  if (!h.allFinite()) throw Error(fmt::format("GPTQ on '{}': the Hessian holds NaN or Inf", name));
  if (rows == 0 || cols == 0) return res;

  Eigen::MatrixXd W = Eigen::Map<const RowMajorF>(w, rows, cols).cast<double>();  // (rows, cols)
  Eigen::MatrixXd H = h;                                                         // (cols, cols)
  for (int64_t j = 0; j < cols; ++j)
    if (H(j, j) == 0.0) {
      res.dead_columns.push_back(j);
      H(j, j) = 1.0;
      W.col(j).setZero();
    }
  // The search's importance of each input column: diag(H) as given (a dead column weighs nothing).
  std::vector<float> importance;
  if (o.search == Search::fisher)
    throw UsageError(fmt::format("tensor '{}': GPTQ weights its grid search by the Hessian's diagonal; a Fisher search is not one of its options", name));
  if (o.search == Search::importance)
    for (int64_t j = 0; j < cols; ++j) importance.push_back(static_cast<float>(h(j, j)));
  const float* imp = importance.empty() ? nullptr : importance.data();
  if (o.grid && !s.is_integer())
    throw UsageError(fmt::format("tensor '{}': a grid chooser picks an integer group's grid; {} has none", name, s.name()));
  const GridChooser chooser = detail::chooser_of(o.grid, o.search != Search::none);

  // Grids known before the loop: per-tensor, per-channel, act-order's static groups, and every K block.
  const bool kq = s.is_kquant();
  const bool grouped = s.is_integer() && s.group > 0;
  const int64_t g = kq ? 0 : s.group_width(cols), gpr = kq ? 0 : s.groups_per_row(cols);
  std::vector<Grid> grids(static_cast<size_t>(s.scale_count(rows, cols)));
  if (s.group == kPerTensor) {
    grids[0] = grid_of(W, 0, rows, 0, cols, s, chooser, imp, name, 0);
  } else if (!kq && (!grouped || o.act_order)) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < gpr; ++k)
        grids[r * gpr + k] = grid_of(W, r, 1, k * g, g, s, chooser, imp ? imp + k * g : nullptr, name, r * gpr + k);
  }
  const KFamily* kf = kq ? &kfamily_of(s) : nullptr;
  const int64_t nb = kq ? cols / kSuperBlock : 0;
  std::vector<KParams> kparams(static_cast<size_t>(rows * nb));  // (rows, nb)
  std::vector<KGrid> kgrids(kparams.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      float x[kSuperBlock], wt[kSuperBlock];
      for (int i = 0; i < kSuperBlock; ++i) x[i] = static_cast<float>(W(r, b * kSuperBlock + i));
      kerror_weights(x, imp ? imp + b * kSuperBlock : nullptr, wt);
      try {
        kparams[r * nb + b] = kchoose_params(*kf, x, wt, /*search*/ true);
      } catch (const Error& e) {
        throw Error(fmt::format("GPTQ on '{}', row {}, block {}: {}", name, r, b, e.what()));
      }
      kgrids[r * nb + b] = kgrid(*kf, kparams[r * nb + b]);
    }
  // The stored field of weight v at (r, col) and what it decodes to (exactly what value_at returns).
  auto round_to_grid = [&](int64_t r, int64_t col, float v, double& deq) -> uint8_t {
    if (kq) {
      const KGrid& kg = kgrids[r * nb + col / kSuperBlock];
      const int sb = static_cast<int>(col % kSuperBlock) / kf->sub;
      const uint8_t u = kencode(*kf, v, kg.D[sb], kg.M[sb]);
      deq = kvalue(*kf, kg.D[sb], kg.M[sb], u);
      return u;
    }
    const Grid& grid = grids[s.group == kPerTensor ? 0 : r * gpr + col / g];
    const uint8_t u = encode(v, grid, s);
    deq = grid.scale * static_cast<float>(u - grid.zero);
    return u;
  };

  // Column order: act-order visits large diag(H) first (stable, so ties keep their order).
  std::vector<int64_t> perm(static_cast<size_t>(cols));
  std::iota(perm.begin(), perm.end(), 0);
  if (o.act_order) {
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return H(a, a) > H(b, b); });
    Eigen::MatrixXd Wp(rows, cols), Hp(cols, cols);
    for (int64_t j = 0; j < cols; ++j) Wp.col(j) = W.col(perm[j]);
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j) Hp(i, j) = H(perm[i], perm[j]);
    W.swap(Wp);
    H.swap(Hp);
  }
  const Eigen::MatrixXd U = inverse_cholesky_upper(H, o, name, res);  // (cols, cols) upper

  // Blocks hold whole groups, so a group's scale can be chosen from the block's updated weights.
  int64_t block = std::max<int64_t>(1, o.block);
  if (grouped && !o.act_order) block = g <= block ? (block / g) * g : g;

  std::vector<uint8_t> fields(static_cast<size_t>(rows * cols));  // (rows, cols), original column order
  for (int64_t i1 = 0; i1 < cols; i1 += block) {
    const int64_t count = std::min(block, cols - i1);
    Eigen::MatrixXd W1 = W.middleCols(i1, count);          // (rows, count) updated inside the block
    Eigen::MatrixXd Err1 = Eigen::MatrixXd::Zero(rows, count);  // (rows, count) scaled errors
    for (int64_t i = 0; i < count; ++i) {
      const int64_t col = perm[static_cast<size_t>(i1 + i)];
      if (grouped && !o.act_order && col % g == 0)
        for (int64_t r = 0; r < rows; ++r)
          grids[r * gpr + col / g] = grid_of(W1, r, 1, i, g, s, chooser, imp ? imp + col : nullptr, name, r * gpr + col / g);
      const double d = U(i1 + i, i1 + i);
      for (int64_t r = 0; r < rows; ++r) {
        double deq = 0.0;
        fields[static_cast<size_t>(r * cols + col)] = round_to_grid(r, col, static_cast<float>(W1(r, i)), deq);
        const double e = W1(r, i) - deq;
        res.proxy_loss += e * e / (2.0 * d * d);
        Err1(r, i) = e / d;
      }
      if (i + 1 < count)
        W1.rightCols(count - i - 1).noalias() -= Err1.col(i) * U.row(i1 + i).segment(i1 + i + 1, count - i - 1);
    }
    if (i1 + count < cols)
      W.rightCols(cols - i1 - count).noalias() -= Err1 * U.block(i1, i1 + count, count, cols - i1 - count);
  }

  QTensor& q = res.q;
  if (kq) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < nb; ++b)
        kf->pack(kparams[r * nb + b], fields.data() + r * cols + b * kSuperBlock,
                 q.codes.data() + r * q.row_bytes() + b * kf->block_bytes);
  } else {
    std::vector<uint8_t> zero_fields(grids.size());
    for (size_t k = 0; k < grids.size(); ++k) {
      q.scales[k] = grids[k].scale_bits;
      zero_fields[k] = static_cast<uint8_t>(grids[k].zero);
    }
    if (!s.symmetric) pack_fields(zero_fields.data(), static_cast<int64_t>(zero_fields.size()), s.bits, q.zeros.data());
    for (int64_t r = 0; r < rows; ++r)
      pack_fields(fields.data() + r * cols, cols, s.bits, q.codes.data() + r * q.row_bytes());
  }
  if (!res.dead_columns.empty())
    res.notes.push_back(fmt::format("{} dead input column(s) (diag(H) = 0): their weights are set to 0",
                                    res.dead_columns.size()));
  res.seconds = mq::seconds_since(t0);
  return res;
}

double output_error(const float* w, const float* w2, int64_t rows, int64_t cols, const Eigen::MatrixXd& h) {
  const Eigen::MatrixXd E = Eigen::Map<const RowMajorF>(w, rows, cols).cast<double>() -
                            Eigen::Map<const RowMajorF>(w2, rows, cols).cast<double>();  // (rows, cols)
  return (E * h).cwiseProduct(E).sum();
}

double output_error(const float* w, const QTensor& q, const Eigen::MatrixXd& h) {
  const std::vector<float> d = dequantize(q);
  return output_error(w, d.data(), q.rows, q.cols, h);
}

}  // namespace mq
