#include "experiments/energy_baseline.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <Eigen/Core>
#include <fmt/core.h>

#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/util/timer.h"

namespace mqexp {
namespace {

using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Seconds per call: the median of 3 timed batches of calls lasting >= 2 ms each (after one untimed call).
double median_seconds_per_call(const std::function<void()>& f) { return mq::time_call(f, 3, 0.002).median; }

}  // namespace

nlohmann::json fp32_kernel_check(const std::vector<const minigpt::ModelConfig*>& models, const std::vector<int>& batches, int threads) {
  nlohmann::json rows = nlohmann::json::array();
  std::set<std::pair<int, int>> done;
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  Eigen::setNbThreads(threads);
  for (const minigpt::ModelConfig* c : models) {
    const int d = c->d_model, f = c->d_ff;
    // (out, in) of the four Linears and the LM head.
    for (const std::pair<int, int>& shape : std::vector<std::pair<int, int>>{{3 * d, d}, {d, d}, {f, d}, {d, f}, {c->vocab_size, d}}) {
      // Plain ints, not a structured binding: the lambdas below capture them (clang 14 refuses a binding).
      const int out = shape.first, in = shape.second;
      if (!done.insert(shape).second) continue;
      MatR w(out, in);
      for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = nd(rng);
      for (int B : batches) {
        MatR x(B, in), ours(B, out), eig(B, out);
        for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = nd(rng) * 20;
        mq::gemm_fp32(w.data(), out, in, x.data(), B, ours.data(), threads);
        eig.noalias() = x * w.transpose();
        // Both sum `in` products in some order: within in * 2^-23 * sum |w x| of each other.
        const float tol = static_cast<float>(in) * 0x1p-23f * (x.cwiseAbs() * w.cwiseAbs().transpose()).maxCoeff() * 2;
        const float err = (ours - eig).cwiseAbs().maxCoeff();
        if (!(err <= tol))
          throw mq::Error(fmt::format("fp32 kernel check: {}x{} at batch {}: ours and Eigen differ by {} (bound {})", out, in, B, err, tol));
        std::vector<double> t_ours, t_eig;
        for (int round = 0; round < 5; ++round) {  // interleaved, the first of each pair alternating
          const auto a = [&] { t_ours.push_back(median_seconds_per_call([&] { mq::gemm_fp32(w.data(), out, in, x.data(), B, ours.data(), threads); })); };
          const auto b = [&] { t_eig.push_back(median_seconds_per_call([&] { eig.noalias() = x * w.transpose(); })); };
          if (round % 2) b(), a();
          else a(), b();
        }
        const mq::energy::Ratio r = mq::energy::paired_ratio(t_eig, t_ours);
        std::vector<double> so = t_ours, se = t_eig;
        std::nth_element(so.begin(), so.begin() + 2, so.end());
        std::nth_element(se.begin(), se.begin() + 2, se.end());
        rows.push_back({{"out", out}, {"in", in}, {"batch", B}, {"ours_us", 1e6 * so[2]}, {"eigen_us", 1e6 * se[2]},
                        {"eigen_over_ours", r.ratio}, {"low", r.low}, {"high", r.high}, {"max_abs_difference", err}});
      }
    }
  }
  return {{"threads", threads}, {"rows", rows},
          {"note", "mq::gemm_fp32 (the fp32 Linears' and LM head's kernel) against Eigen's product X W^T on the same shapes, "
                   "interleaved rounds, paired ratio of seconds per call (above 1: ours faster)"}};
}

}  // namespace mqexp
