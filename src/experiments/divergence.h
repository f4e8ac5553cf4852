// How far a quantized model's next-token distributions are from a reference (fp32) model's on the same
// test windows: KL(ref || q) per token, top-1 agreement, and the paired per-token log-loss difference
// (-> ΔPPL with an interval), in one streamed pass; and the paired change of verb-tense slot margins.
#pragma once
#include <cstdint>
#include <vector>

#include "experiments/results.h"
#include "minigpt/model.h"

namespace mqexp {

// One row of logits (V) as log-probabilities in double: max subtracted first, the normaliser summed in
// double, exactly as ops::log_prob computes the target's (so the log-loss of a target is bit-identical
// to the one perplexity() sums).
void log_softmax(const float* row, int V, double* out);

// KL(p || q) = sum_j p_j (log p_j - log q_j) from log-probabilities (V each), summed in double.
// >= 0 up to rounding (a few ulps of the largest term); 0 exactly when lp == lq.
double kl_divergence(const double* lp, const double* lq, int V);

// The pass over the test windows of one reference and several models, per model: every scored token's
// KL, whether the argmaxes agree, and per window the sums needed for clustered intervals.
struct DivergencePass {
  std::vector<double> kl;                   // (tokens) in stream order
  std::vector<double> window_kl, window_dnll;  // (windows) sums over the window's scored tokens
  std::vector<long long> window_tokens;     // (windows)
  long long top1_agree = 0;
  long long top1_true = 0, top1_true_reference = 0;  // the model's / reference's argmax is the true next token
  double logp_model = 0, logp_reference = 0;  // sum over all tokens of log q(t), log p(t), summed per
                                              // window, then over windows in order, as perplexity() does
  int window = 0, stride = 0;
  double seconds = 0;
};

// Runs `reference` and every model of `models` on the windows of minigpt::perplexity(stream, window,
// stride). A model pointer equal to &reference reuses the reference's logits (KL exactly 0).
// Memory: per thread the reference's and one model's logits of a window (2 x window x V floats, about
// 2 MB at window 128, V 1963) plus the reference's log-softmax of that window in double (2 MB); per
// model one double per scored token (0.8 MB for the 100k-token test split). The whole split's logits
// (785 MB for one model in fp32) are never held: the reference is computed once per window and streamed.
std::vector<DivergencePass> divergence_pass(const minigpt::Model& reference, const std::vector<const minigpt::Model*>& models,
                                            const std::vector<int32_t>& stream, int window, int stride);

// The summary of one model's pass (reference = the name written into the result). ΔPPL:
// PPL(q) - PPL(ref) = PPL(ref) (exp(mean dnll) - 1), its interval from the clustered interval of the
// paired mean dnll mapped through the same function (monotone), with PPL(ref) taken as given: the
// pairing removes the test set's own sampling noise that both models share.
Divergence summarize_divergence(const DivergencePass& p, const std::string& reference);

// Adds the paired margin change (margin(q) - margin(ref) per verb slot scored by both; slots from
// verb_tense_accuracy's slot_margin, same stories in the same order) and the slots whose correctness
// flipped. The interval treats slots as independent.
void add_margin_change(Divergence& d, const std::vector<double>& reference_margin, const std::vector<double>& model_margin);

}  // namespace mqexp
