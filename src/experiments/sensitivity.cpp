#include "experiments/sensitivity.h"

#include <fmt/core.h>

#include "experiments/divergence.h"
#include "miniquant/error.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"

namespace mqexp {

double kl_of_logits(const float* p_logits, const float* q_logits, int V) {
  std::vector<double> lp(static_cast<size_t>(V)), lq(static_cast<size_t>(V));
  log_softmax(p_logits, V, lp.data());
  log_softmax(q_logits, V, lq.data());
  return kl_divergence(lp.data(), lq.data(), V);
}

namespace {

// The reference's log-probabilities of every position of every window, computed once: (positions, V) doubles.
std::vector<std::vector<double>> reference_log_probs(const minigpt::Model& reference, const std::vector<std::vector<int32_t>>& windows) {
  const int V = reference.config().vocab_size;
  std::vector<std::vector<double>> out;
  for (const auto& w : windows) {
    const std::vector<float> p = reference.logits(w);  // (w.size(), V)
    std::vector<double> lp(p.size());
    for (size_t t = 0; t < w.size(); ++t) log_softmax(p.data() + t * V, V, lp.data() + t * V);
    out.push_back(std::move(lp));
  }
  return out;
}

double mean_kl_from(const std::vector<std::vector<double>>& ref, const minigpt::Model& m, const std::vector<std::vector<int32_t>>& windows) {
  const int V = m.config().vocab_size;
  std::vector<double> lq(static_cast<size_t>(V));
  double sum = 0;
  long long n = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const std::vector<float> q = m.logits(windows[i]);  // (positions, V)
    for (size_t t = 0; t < windows[i].size(); ++t) {
      log_softmax(q.data() + t * V, V, lq.data());
      sum += kl_divergence(ref[i].data() + t * V, lq.data(), V);
    }
    n += static_cast<long long>(windows[i].size());
  }
  if (n == 0) throw mq::UsageError("mean_kl: no positions in the windows");
  return sum / static_cast<double>(n);
}

}  // namespace

double mean_kl(const minigpt::Model& reference, const minigpt::Model& m, const std::vector<std::vector<int32_t>>& windows) {
  return mean_kl_from(reference_log_probs(reference, windows), m, windows);
}

std::vector<double> linear_sensitivity(const std::function<minigpt::Model()>& fresh, const std::vector<std::vector<int32_t>>& windows,
                                       const std::string& recipe) {
  const minigpt::LinearRecipe r = minigpt::LinearRecipe::parse(recipe);
  if (r.gptq) throw mq::UsageError(fmt::format("linear_sensitivity: {} needs calibration windows; give a round-to-nearest recipe", recipe));
  const minigpt::Model reference = fresh();
  const std::vector<std::vector<double>> ref = reference_log_probs(reference, windows);  // once for every model
  minigpt::Model base = fresh();
  minigpt::quantize_model(base, minigpt::QuantPlan::uniform("fp16"));
  const double base_kl = mean_kl_from(ref, base, windows);
  std::vector<double> out;
  for (const minigpt::LinearInfo& li : reference.linears()) {
    minigpt::QuantPlan plan = minigpt::QuantPlan::uniform("fp16");
    plan.rules.push_back({{li.layer}, li.kind, r});
    minigpt::Model m = fresh();
    minigpt::quantize_model(m, plan);
    out.push_back(mean_kl_from(ref, m, windows) - base_kl);
  }
  return out;
}

}  // namespace mqexp
