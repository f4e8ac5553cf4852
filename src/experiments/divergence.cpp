// The streamed divergence pass (see divergence.h): per window the reference's logits once, then each
// model's; per token KL, argmax agreement and log-losses; intervals from per-window sums.
#include "experiments/divergence.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/core.h>

#include "experiments/energy_phases.h"  // argmax
#include "experiments/intervals.h"
#include "miniquant/error.h"
#include "miniquant/util/first_error.h"
#include "miniquant/util/timer.h"
#include "minigpt/eval.h"
#include "minigpt/tokenizer.h"

namespace mqexp {

void log_softmax(const float* row, int V, double* out) {
  const float mx = *std::max_element(row, row + V);
  double sum = 0;
  for (int j = 0; j < V; ++j) sum += std::exp(static_cast<double>(row[j]) - mx);
  const double lse = std::log(sum);
  for (int j = 0; j < V; ++j) out[j] = static_cast<double>(row[j]) - mx - lse;
}

double kl_divergence(const double* lp, const double* lq, int V) {
  double kl = 0;
  for (int j = 0; j < V; ++j) kl += std::exp(lp[j]) * (lp[j] - lq[j]);
  return kl;
}

std::vector<DivergencePass> divergence_pass(const minigpt::Model& reference, const std::vector<const minigpt::Model*>& models,
                                            const std::vector<int32_t>& stream, int window, int stride) {
  const auto t0 = std::chrono::steady_clock::now();
  const int V = reference.config().vocab_size, n_ctx = reference.config().n_ctx;
  for (const auto* m : models)
    if (!m || m->config().vocab_size != V || m->config().n_ctx != n_ctx)
      throw mq::UsageError("divergence: every model needs the reference's vocabulary and context");
  if (window < 2 || window > n_ctx + 1 || stride < 1 || stride > window - 1)
    throw mq::UsageError(fmt::format("divergence: window {} / stride {} out of range for n_ctx {}", window, stride, n_ctx));
  std::vector<int32_t> s{minigpt::Tokenizer::kSepId};  // the same sequence perplexity() scores
  s.insert(s.end(), stream.begin(), stream.end());
  const int64_t L = static_cast<int64_t>(s.size());
  const std::vector<minigpt::ScoreWindow> windows = minigpt::score_windows(L, window, stride);
  const size_t M = models.size(), W = windows.size();

  std::vector<DivergencePass> out(M);
  std::vector<std::vector<double>> wlq(M, std::vector<double>(W)), wlp(M, std::vector<double>(W));
  std::vector<std::vector<long long>> wagree(M, std::vector<long long>(W)), wtrue(M, std::vector<long long>(W)),
      wtrue_ref(M, std::vector<long long>(W));
  for (auto& p : out) {
    p.kl.assign(static_cast<size_t>(L - 1), 0.0);
    p.window_kl.assign(W, 0.0);
    p.window_dnll.assign(W, 0.0);
    p.window_tokens.assign(W, 0);
    p.window = window;
    p.stride = stride;
  }
  mq::FirstError error;
#pragma omp parallel
  {
    std::vector<float> ref_lg, lg;
    std::vector<double> ref_lp, lq(static_cast<size_t>(V));
#pragma omp for schedule(dynamic, 4)
    for (size_t i = 0; i < W; ++i) error.run(i, [&] {
      const minigpt::ScoreWindow& w = windows[i];
      // Positions [begin, end - 1) are fed; row r predicts s[begin + r + 1]; rows first-1-begin .. are scored.
      const int n = static_cast<int>(w.end - 1 - w.begin), r0 = static_cast<int>(w.first - 1 - w.begin);
      const size_t nv = static_cast<size_t>(n) * V;
      ref_lg.resize(nv);
      // A non-finite logit (Model::forward) names the window of the split it came from.
      const auto run = [&](const minigpt::Model& m, float* out, const char* which) {
        minigpt::KVCache cache = m.make_cache();
        try {
          m.forward(cache, s.data() + w.begin, n, out);
        } catch (const mq::UsageError&) {
          throw;
        } catch (const mq::Error& e) {
          throw mq::Error(fmt::format("{} model, window {} (split tokens {}..{}): {}", which, i, w.begin, w.end - 1, e.what()));
        }
      };
      run(reference, ref_lg.data(), "reference");
      ref_lp.resize(static_cast<size_t>(n - r0) * V);
      for (int r = r0; r < n; ++r) log_softmax(ref_lg.data() + static_cast<size_t>(r) * V, V, ref_lp.data() + static_cast<size_t>(r - r0) * V);
      for (size_t k = 0; k < M; ++k) {
        const float* q_lg = ref_lg.data();
        if (models[k] != &reference) {
          lg.resize(nv);
          run(*models[k], lg.data(), "compared");
          q_lg = lg.data();
        }
        DivergencePass& p = out[k];
        double sum_kl = 0, sum_lq = 0, sum_lp = 0;
        long long agree = 0, right = 0, right_ref = 0;
        for (int r = r0; r < n; ++r) {
          const float* qrow = q_lg + static_cast<size_t>(r) * V;
          const double* lp = ref_lp.data() + static_cast<size_t>(r - r0) * V;
          log_softmax(qrow, V, lq.data());
          const int32_t target = s[static_cast<size_t>(w.begin + r + 1)];
          const double kl = kl_divergence(lp, lq.data(), V);
          p.kl[static_cast<size_t>(w.begin + r)] = kl;  // target index - 1: 0 .. L-2, each once
          sum_kl += kl;
          sum_lq += lq[static_cast<size_t>(target)];
          sum_lp += lp[target];
          const int32_t q_top = argmax(qrow, V), p_top = argmax(ref_lg.data() + static_cast<size_t>(r) * V, V);
          agree += q_top == p_top;
          right += q_top == target;
          right_ref += p_top == target;
        }
        p.window_kl[i] = sum_kl;
        p.window_dnll[i] = sum_lp - sum_lq;  // sum of (-log q) - (-log p)
        p.window_tokens[i] = n - r0;
        wlq[k][i] = sum_lq;
        wlp[k][i] = sum_lp;
        wagree[k][i] = agree;
        wtrue[k][i] = right;
        wtrue_ref[k][i] = right_ref;
      }
    });
  }
  error.rethrow();
  const double secs = mq::seconds_since(t0);
  for (size_t k = 0; k < M; ++k) {
    for (size_t i = 0; i < W; ++i) {  // serial, in window order: independent of threads
      out[k].logp_model += wlq[k][i];
      out[k].logp_reference += wlp[k][i];
      out[k].top1_agree += wagree[k][i];
      out[k].top1_true += wtrue[k][i];
      out[k].top1_true_reference += wtrue_ref[k][i];
    }
    out[k].seconds = secs;
  }
  return out;
}

Divergence summarize_divergence(const DivergencePass& p, const std::string& reference) {
  Divergence d;
  d.reference = reference;
  d.tokens = static_cast<long long>(p.kl.size());
  d.windows = static_cast<long long>(p.window_tokens.size());
  d.seconds = p.seconds;
  d.window_kl = p.window_kl;
  if (d.tokens == 0) return d;
  const MeanInterval kl = clustered_mean(p.window_kl, p.window_tokens);
  d.kl_mean = kl.mean;
  d.kl_low = kl.low;
  d.kl_high = kl.high;
  d.kl_median = quantile(p.kl, 0.5);
  d.kl_p99 = quantile(p.kl, 0.99);
  d.kl_max = *std::max_element(p.kl.begin(), p.kl.end());
  d.top1 = static_cast<double>(p.top1_agree) / static_cast<double>(d.tokens);
  d.next_token_top1 = static_cast<double>(p.top1_true) / static_cast<double>(d.tokens);
  d.next_token_top1_reference = static_cast<double>(p.top1_true_reference) / static_cast<double>(d.tokens);
  const double n = static_cast<double>(d.tokens);
  d.ppl_reference = std::exp(-p.logp_reference / n);
  const MeanInterval dn = clustered_mean(p.window_dnll, p.window_tokens);
  d.dnll_mean = dn.mean;
  d.dnll_low = dn.low;
  d.dnll_high = dn.high;
  d.dppl = std::exp(-p.logp_model / n) - d.ppl_reference;
  d.dppl_low = d.ppl_reference * std::expm1(dn.low);
  d.dppl_high = d.ppl_reference * std::expm1(dn.high);
  return d;
}

void add_margin_change(Divergence& d, const std::vector<double>& ref, const std::vector<double>& q) {
  if (ref.size() != q.size())
    throw mq::UsageError(fmt::format("margin change: {} reference slots but {} model slots", ref.size(), q.size()));
  std::vector<double> diff;
  d.flipped_to_wrong = d.flipped_to_right = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i]) || std::isnan(q[i])) continue;
    diff.push_back(q[i] - ref[i]);
    d.flipped_to_wrong += ref[i] > 0 && q[i] <= 0;
    d.flipped_to_right += ref[i] <= 0 && q[i] > 0;
  }
  const MeanInterval m = mean_interval(diff);
  d.margin_slots = static_cast<long long>(diff.size());
  d.dmargin_mean = m.mean;
  d.dmargin_low = m.low;
  d.dmargin_high = m.high;
}

}  // namespace mqexp
