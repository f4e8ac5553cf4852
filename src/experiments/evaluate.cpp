// evaluate_quality(): perplexity against the split's entropy floor, and verb-tense accuracy.
#include "experiments/evaluate.h"

#include "minigpt/eval.h"

namespace mqexp {

Quality evaluate_quality(const minigpt::Model& m, const minigpt::Tokenizer& tok, const std::vector<minigpt::Story>& test,
                         const EvalLimits& limits) {
  std::vector<int32_t> stream = minigpt::encode_split(tok, test);
  if (limits.ppl_tokens > 0 && limits.ppl_tokens < static_cast<int64_t>(stream.size()))
    stream.resize(static_cast<size_t>(limits.ppl_tokens));
  const int window = limits.window > 0 ? limits.window : m.config().n_ctx;
  const int stride = limits.stride > 0 ? limits.stride : window / 2;
  Quality q;
  const auto ppl = minigpt::perplexity(m, stream, window, stride);
  q.ppl = ppl.ppl;
  q.nats_per_token = ppl.nats_per_token;
  q.ppl_floor = minigpt::split_stats(test).floor_ppl;
  q.test_tokens = ppl.tokens;
  q.window = ppl.window;
  q.stride = ppl.stride;
  q.perplexity_seconds = ppl.seconds;
  const auto vt = minigpt::verb_tense_accuracy(m, tok, test, limits.max_slots);
  q.verb_tense = {vt.overall.correct, vt.overall.total};
  for (int k = 0; k < minigpt::kNumConstructions; ++k)
    q.by_construction[minigpt::construction_name(static_cast<minigpt::Construction>(k))] = {vt.by_kind[k].correct,
                                                                                          vt.by_kind[k].total};
  q.skipped_unknown_form = vt.skipped_unknown;
  q.skipped_too_long = vt.skipped_long;
  q.verb_tense_seconds = vt.seconds;
  return q;
}

}  // namespace mqexp
