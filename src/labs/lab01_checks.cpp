// Grader of lab 01 (GPTQ): the learner's Hessian against the library's on random batches and on real
// MiniGPT activations, the output error, and the learner's GPTQ against the library's on a random
// correlated problem (also with H scaled by 1e-3: damping is relative; and its proxy loss), with blocks of
// 32 and 128 (lazy updates change nothing but speed), on a dead column, on an H that needs the damping
// retry, and on a real Linear of the shipped MiniGPT with a Hessian from real calibration windows.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Eigenvalues>
#include <fmt/core.h>

#include "lab01.h"
#include "labs/grade.h"
#include "labs/workbench.h"
#include "miniquant/error.h"
#include "miniquant/hessian.h"
#include "miniquant/random.h"
#include "minigpt/calibrate.h"

namespace mqlab {
namespace {

using mq::Scheme;
using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// n activation rows of width `in`, correlated through a random mixing (like a real layer's inputs).
std::vector<float> activations(int64_t n, int64_t in, uint64_t seed) {
  mq::Rng rng(seed);
  const int64_t k = in / 4;
  std::vector<double> mix(static_cast<size_t>(k * in));
  for (auto& m : mix) m = rng.normal();
  std::vector<float> x(static_cast<size_t>(n * in));
  std::vector<double> z(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    for (auto& v : z) v = rng.normal();
    for (int64_t c = 0; c < in; ++c) {
      double v = 0.1 * rng.normal();
      for (int64_t j = 0; j < k; ++j) v += z[j] * mix[j * in + c] / std::sqrt(static_cast<double>(k));
      x[r * in + c] = static_cast<float>(v);
    }
  }
  return x;
}

double max_rel_diff(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff() / std::max(1e-300, b.cwiseAbs().maxCoeff());
}

void block_a(Checks& c, const LabOptions& o) {
  const int64_t in = 96;
  const std::vector<float> x = activations(700, in, 42);
  lab::Hessian mine(in);
  mq::Hessian lib(in);
  int64_t off = 0;
  for (int64_t n : {1, 0, 64, 135, 500}) {  // uneven batches, one empty
    mine.add(x.data() + off * in, n);
    lib.add(x.data() + off * in, n);
    off += n;
  }
  c.expect(mine.samples() == lib.samples() && mine.in() == in, "samples counted over 5 batches (one empty)",
           fmt::format("{} samples", lib.samples()), fmt::format("{} samples", mine.samples()));
  const Eigen::MatrixXd hm = mine.matrix(), hl = lib.matrix();
  const double d = hm.rows() == in && hm.cols() == in ? max_rel_diff(hm, hl) : INFINITY;
  c.expect(d <= 1e-12, "H = X X^T / n of 700 correlated activations (96 wide)", "max |diff| <= 1e-12 of max |H|",
           fmt::format("{:.2e}", d));
  c.expect(hm.rows() == in && (hm - hm.transpose()).cwiseAbs().maxCoeff() == 0.0, "H is exactly symmetric", "H == H^T",
           hm.rows() == in && (hm - hm.transpose()).cwiseAbs().maxCoeff() == 0.0 ? "H == H^T" : "not symmetric");
  std::string empty = "returned a matrix";
  try {
    (void)lab::Hessian(8).matrix();
  } catch (const mq::Error&) {
    empty = "threw mq::Error";
  }
  c.expect(empty == "threw mq::Error", "matrix() before any add()", "throws mq::Error (no samples)", empty);

  // Real activations: the inputs h.0.attn.c_attn sees on 8 calibration windows of the val split.
  const Workbench wb = load_workbench(o);
  minigpt::Model m = wb.fresh();
  const auto windows = minigpt::calibration_windows(wb.val, 8, m.config().n_ctx);
  const std::string name = "h.0.attn.c_attn";
  lab::Hessian real(m.config().d_model);
  m.set_linear_hook([&](const std::string& n, const float* xs, int rows, int) {
    if (n == name) real.add(xs, rows);
  });
  for (const auto& w : windows) (void)m.logits(w);
  m.set_linear_hook(nullptr);
  const auto ref = minigpt::collect_hessians(m, windows, {name});
  const double dr = max_rel_diff(real.matrix(), ref.at(name).matrix());
  c.expect(dr <= 1e-12, fmt::format("H of {} from {} real activations (8 windows of the val split)", name, real.samples()),
           "max |diff| <= 1e-12 of max |H| (minigpt::collect_hessians)", fmt::format("{:.2e}", dr));
}

void block_b(Checks& c) {
  const int64_t rows = 48, cols = 128;
  const std::vector<float> x = activations(400, cols, 7);
  mq::Hessian h(cols);
  h.add(x.data(), 400);
  const std::vector<float> w = mq::gaussian_matrix(rows, cols, 42, 0.05);
  for (const char* s : {"int4-g32", "int8-per-channel"}) {
    const mq::QTensor q = mq::quantize(w.data(), rows, cols, Scheme::parse(s));
    const double want = mq::output_error(w.data(), q, h.matrix()), got = lab::output_error(w.data(), q, h.matrix());
    c.expect(std::fabs(got - want) <= 1e-9 * want, fmt::format("tr((W-Q) H (W-Q)^T) of a 48x128 {} weight", s),
             fmt::format("{:.9g} (mq::output_error, 1e-9 relative)", want), fmt::format("{:.9g}", got));
  }
}

// Fraction of fields that agree.
double agreement(const mq::QTensor& a, const mq::QTensor& b) {
  if (a.rows != b.rows || a.cols != b.cols || a.scheme != b.scheme) return 0.0;
  int64_t same = 0;
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t k = 0; k < a.cols; ++k) same += a.field_at(r, k) == b.field_at(r, k);
  return static_cast<double>(same) / static_cast<double>(a.rows * a.cols);
}

void block_c(Checks& c, const LabOptions& o) {
  const int64_t rows = 64, cols = 256;
  const std::vector<float> x = activations(2048, cols, 11);
  mq::Hessian hh(cols);
  hh.add(x.data(), 2048);
  const Eigen::MatrixXd h = hh.matrix();
  const std::vector<float> w = mq::gaussian_matrix(rows, cols, 42, 0.05);
  for (const char* name : {"int4-g32", "int4-per-channel", "int8-per-channel"}) {
    const Scheme s = Scheme::parse(name);
    const mq::GptqResult lib = mq::gptq_quantize(w.data(), rows, cols, h, s);
    const mq::GptqResult mine = lab::gptq_quantize(w.data(), rows, cols, h, s);
    const double el = mq::output_error(w.data(), lib.q, h), em = mq::output_error(w.data(), mine.q, h);
    const double agree = agreement(mine.q, lib.q);
    c.expect(std::fabs(em / el - 1.0) <= 0.01 && agree >= 0.99,
             fmt::format("{} on a 64x256 weight, correlated inputs", name),
             fmt::format("output error within 1% of mq::gptq_quantize's {:.6g}, >= 99% of codes equal", el),
             fmt::format("{:.6g} ({}), {:.2f}% of codes equal", em, pct(em / el - 1.0), 100.0 * agree));
  }
  {  // The damping is a fraction of H's mean diagonal, so GPTQ does not depend on the inputs' scale: the same
     // problem with H / 1000 (mean diagonal ~1e-3) must give the library's codes. An absolute damping of
     // 0.01 would be ten times H's diagonal here and turn GPTQ into round-to-nearest.
    const Scheme s = Scheme::parse("int4-g32");
    const Eigen::MatrixXd hs = h * 1e-3;
    const mq::GptqResult lib = mq::gptq_quantize(w.data(), rows, cols, hs, s), mine = lab::gptq_quantize(w.data(), rows, cols, hs, s);
    const double el = mq::output_error(w.data(), lib.q, hs), em = mq::output_error(w.data(), mine.q, hs);
    const double agree = agreement(mine.q, lib.q);
    c.expect(std::fabs(em / el - 1.0) <= 0.01 && agree >= 0.99, "int4-g32 with H scaled by 1e-3 (mean diagonal ~0.001)",
             "the library's result: damping is percdamp x mean diag(H), not an absolute amount",
             fmt::format("output error {} against the library's, {:.2f}% of codes equal", pct(em / el - 1.0), 100.0 * agree));
    // The solver's own objective, sum (w - q)^2 / (2 U_jj^2), with U the upper Cholesky factor of H^-1.
    const mq::GptqResult lib1 = mq::gptq_quantize(w.data(), rows, cols, h, s), mine1 = lab::gptq_quantize(w.data(), rows, cols, h, s);
    c.expect(std::fabs(mine1.proxy_loss / lib1.proxy_loss - 1.0) <= 0.01, "proxy_loss of int4-g32 on the 64x256 weight",
             fmt::format("{:.6g} (the library's, within 1%): sum of (w - q)^2 / (2 U_jj^2)", lib1.proxy_loss),
             fmt::format("{:.6g}", mine1.proxy_loss));
  }
  {  // An H whose 1% damping is not enough (not positive definite: an H summed in float from rank-deficient
     // inputs can be): the first Cholesky fails, damping x10 succeeds.
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(h, Eigen::EigenvaluesOnly);
    Eigen::MatrixXd hb = h;
    hb.diagonal().array() -= eig.eigenvalues().minCoeff() + 0.05 * h.diagonal().mean();  // smallest eigenvalue -5% of the mean
    const Scheme s = Scheme::parse("int4-g32");
    const mq::GptqResult lib = mq::gptq_quantize(w.data(), rows, cols, hb, s);
    std::string got;
    bool ok = false;
    try {
      const mq::GptqResult mine = lab::gptq_quantize(w.data(), rows, cols, hb, s);
      const double el = mq::output_error(w.data(), lib.q, hb), em = mq::output_error(w.data(), mine.q, hb);
      ok = mine.percdamp_used == lib.percdamp_used && std::isfinite(em) && std::fabs(em / el - 1.0) <= 0.01;
      got = fmt::format("percdamp_used {:g}, output error {} against the library's", mine.percdamp_used, pct(em / el - 1.0));
    } catch (const std::exception& e) {
      got = std::string("threw: ") + e.what();
    }
    c.expect(ok, "an H that 1% damping leaves indefinite",
             fmt::format("Cholesky retried with damping x10: percdamp_used {:g} as the library's, the same result", lib.percdamp_used), got);
  }
  {  // Lazy updates are exact algebra: the block size may change rounding noise, not the result.
    const Scheme s = Scheme::parse("int4-g32");
    mq::GptqOptions small;
    small.block = 32;
    const mq::GptqResult a = lab::gptq_quantize(w.data(), rows, cols, h, s, small), b = lab::gptq_quantize(w.data(), rows, cols, h, s);
    const double ea = mq::output_error(w.data(), a.q, h), eb = mq::output_error(w.data(), b.q, h);
    c.expect(std::fabs(ea / eb - 1.0) <= 1e-3 && agreement(a.q, b.q) >= 0.999, "int4-g32 with blocks of 32 vs 128",
             "the same output error (1e-3) and codes (99.9%)",
             fmt::format("{:.6g} vs {:.6g}, {:.2f}% of codes equal", ea, eb, 100.0 * agreement(a.q, b.q)));
  }
  {  // A block that is not whole groups (48 columns of g32) is rounded up to whole groups: a group's scale is chosen
     // once all of its columns have had their updates.
    const Scheme s = Scheme::parse("int4-g32");
    mq::GptqOptions odd;
    odd.block = 48;
    const mq::GptqResult lib = mq::gptq_quantize(w.data(), rows, cols, h, s, odd), mine = lab::gptq_quantize(w.data(), rows, cols, h, s, odd);
    const double el = mq::output_error(w.data(), lib.q, h), em = mq::output_error(w.data(), mine.q, h);
    c.expect(std::fabs(em / el - 1.0) <= 1e-6 && agreement(mine.q, lib.q) >= 0.999, "int4-g32 with a block of 48 columns",
             "rounded to whole groups: the library's output error (1e-6) and codes (99.9%)",
             fmt::format("{:.6g} vs {:.6g}, {:.2f}% of codes equal", em, el, 100.0 * agreement(mine.q, lib.q)));
    std::vector<float> bad = w;
    bad[static_cast<size_t>(3 * cols + 7)] = std::numeric_limits<float>::quiet_NaN();
    std::string nan = "returned a result";
    try {
      (void)lab::gptq_quantize(bad.data(), rows, cols, h, s);
    } catch (const mq::Error& e) {
      nan = std::string("threw: ") + e.what();
    } catch (const std::exception& e) {
      nan = std::string("threw another exception: ") + e.what();
    }
    c.expect(nan.rfind("threw: ", 0) == 0, "a NaN weight at (3, 7)", "throws mq::Error (never a silent code)", nan);
  }
  {  // A dead input (diag(H) = 0) must not break the factorisation; its weights become 0.
    Eigen::MatrixXd hd = h;
    hd.row(5).setZero();
    hd.col(5).setZero();
    const Scheme s = Scheme::parse("int4-g32");
    const mq::GptqResult r = lab::gptq_quantize(w.data(), rows, cols, hd, s);
    bool zero = true;
    for (int64_t i = 0; i < rows; ++i) zero = zero && r.q.value_at(i, 5) == 0.0f;
    const bool listed = r.dead_columns.size() == 1 && r.dead_columns[0] == 5;
    c.expect(listed && zero, "input column 5 never fires (diag(H) = 0)", "dead_columns = {5}, its weights 0",
             fmt::format("dead_columns has {} entries{}, weights {}", r.dead_columns.size(),
                         r.dead_columns.empty() ? "" : fmt::format(" (first {})", r.dead_columns[0]), zero ? "0" : "not 0"));
    c.expect(r.percdamp_used >= 0.01, "damping", "percdamp_used >= the requested 1% of mean diag(H)",
             fmt::format("{:g}", r.percdamp_used));
  }

  // A real Linear: h.3.mlp.c_proj (256 x 1024) of the shipped model, H from 32 calibration windows.
  const Workbench wb = load_workbench(o);
  minigpt::Model m = wb.fresh();
  const std::string name = "h.3.mlp.c_proj";
  const auto windows = minigpt::calibration_windows(wb.val, 32, m.config().n_ctx);
  const Eigen::MatrixXd hr = minigpt::collect_hessians(m, windows, {name}).at(name).matrix();
  const minigpt::LinearInfo* li = nullptr;
  const auto all = m.linears();
  for (const auto& l : all)
    if (l.name == name) li = &l;
  const Scheme s = Scheme::parse("int4-g64");
  const mq::QTensor rtn = mq::quantize(li->weight, li->out, li->in, s);
  const double e_rtn = mq::output_error(li->weight, rtn, hr);
  const mq::GptqResult libr = mq::gptq_quantize(li->weight, li->out, li->in, hr, s);
  const double e_lib = mq::output_error(li->weight, libr.q, hr);
  const mq::GptqResult mine = lab::gptq_quantize(li->weight, li->out, li->in, hr, s);
  const double e_mine = mq::output_error(li->weight, mine.q, hr);
  const double ratio = e_mine / e_rtn, ratio_lib = e_lib / e_rtn;
  c.bar(ratio < 1.0 && std::fabs(ratio / ratio_lib - 1.0) <= 0.10,
        fmt::format("{} int4-g64, H from {} real windows: output error GPTQ / RTN", name, windows.size()),
        fmt::format("below 1 and within +-10% of the library's {:.4f}", ratio_lib),
        fmt::format("{:.4f} ({:.6g} / RTN {:.6g})", ratio, e_mine, e_rtn));
  const double proxy_lib = libr.proxy_loss;
  c.bar(std::isfinite(mine.proxy_loss) && std::fabs(mine.proxy_loss / proxy_lib - 1.0) <= 0.01, "proxy loss as the library's",
        fmt::format("within 1% of {:.6g}", proxy_lib), fmt::format("{:.6g}", mine.proxy_loss));
}

Lab make(const LabOptions& o) {
  Lab lab{"01", "GPTQ", "labs/01-gptq/gptq.cpp", {}};
  lab.blocks = {
      {"A", "Hessian: H = X X^T / n from batches of real activations", [o](Checks& c) { block_a(c, o); }, {}, {"mq::Hessian"}},
      {"B", "output_error: tr((W-Q) H (W-Q)^T)", block_b, {}, {"mq::output_error"}},
      {"C", "gptq_quantize: damping, Cholesky of H^-1, column loop, lazy blocks", [o](Checks& c) { block_c(c, o); },
       {"h.3.mlp.c_proj int4-g64 output error GPTQ / RTN below 1 and within +-10% of the library's", "proxy loss as the library's"},
       {"mq::gptq_quantize"}},
  };
  return lab;
}

}  // namespace
}  // namespace mqlab

int main(int argc, char** argv) { return mqlab::run_lab(mqlab::make, argc, argv, MQ_LEARNER_OBJECT); }
