// evaluate_quality(): perplexity against the split's entropy floor, verb-tense accuracy and margins;
// evaluate_divergence(): the same windows against a reference model.
#include "experiments/evaluate.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>

#include <fmt/core.h>

#include "experiments/divergence.h"
#include "experiments/generalization_report.h"
#include "experiments/intervals.h"
#include "miniquant/error.h"
#include "minigpt/eval.h"

namespace mqexp {
namespace {

std::vector<int32_t> test_stream(const minigpt::Tokenizer& tok, const std::vector<minigpt::Story>& test, const EvalLimits& limits) {
  std::vector<int32_t> stream = minigpt::encode_split(tok, test);
  if (limits.ppl_tokens > 0 && limits.ppl_tokens < static_cast<int64_t>(stream.size()))
    stream.resize(static_cast<size_t>(limits.ppl_tokens));
  return stream;
}

// A metric that is not a number is an error, not a result (the logits were finite, e.g. so far apart
// that a log-probability underflows to -inf).
void require_finite(double v, const char* what) {
  if (!std::isfinite(v))
    throw mq::Error(fmt::format("{} is {}: the model's outputs are too extreme to score (its weights are corrupt or overflow), so "
                                "there is no result to report",
                                what, v));
}

MarginStats margin_stats(const std::vector<double>& m) {
  MarginStats s;
  s.slots = static_cast<long long>(m.size());
  if (m.empty()) return s;
  s.median = quantile(m, 0.5);
  s.p1 = quantile(m, 0.01);
  s.min = quantile(m, 0.0);
  return s;
}

// A benchmark margin as a stored answer: '1' right, '0' wrong (a tie included), '-' skipped.
char answer_of(double margin) { return std::isnan(margin) ? '-' : margin > 0 ? '1' : '0'; }

// The answers of `which` items, paired by generalization_report.h's one pairing (pair_answer_strings).
PairedDifference pair_items(const std::vector<double>& model, const std::vector<double>& ref, const std::vector<size_t>& which) {
  std::string a, b;
  for (size_t i : which) {
    a.push_back(answer_of(model[i]));
    b.push_back(answer_of(ref[i]));
  }
  return pair_answer_strings(a, b);
}

void add_generalization_change(Divergence& d, const std::vector<minigpt::BenchmarkItem>& items, const std::vector<double>& ref,
                               const std::vector<double>& model) {
  if (ref.size() != items.size() || model.size() != items.size())
    throw mq::UsageError(fmt::format("generalization change: {} items, {} reference answers, {} model answers", items.size(),
                                     ref.size(), model.size()));
  std::vector<size_t> scored;  // the overall change: the scored paradigms only, as the accuracy
  std::map<std::string, std::vector<size_t>> by;
  for (size_t i = 0; i < items.size(); ++i) {
    if (minigpt::paradigm_scored(items[i].paradigm)) scored.push_back(i);
    by[minigpt::paradigm_name(items[i].paradigm)].push_back(i);
  }
  d.generalization_change = pair_items(model, ref, scored);
  d.generalization_change_by_paradigm.clear();
  for (const auto& [name, which] : by) d.generalization_change_by_paradigm[name] = pair_items(model, ref, which);
}

}  // namespace

std::vector<minigpt::BenchmarkItem> benchmark_items(const CorpusBundle& c, const EvalLimits& limits) {
  std::vector<minigpt::BenchmarkItem> out;
  if (!limits.benchmark) return out;
  const int64_t per = limits.max_items > 0 ? std::max<int64_t>(1, limits.max_items / minigpt::kNumParadigms) : INT64_MAX;
  std::array<int64_t, minigpt::kNumParadigms> taken{};
  for (const auto& it : c.benchmark) {
    if (it.test == limits.benchmark_dev) continue;
    int64_t& n = taken[static_cast<size_t>(it.paradigm)];
    if (n >= per) continue;
    ++n;
    out.push_back(it);
  }
  return out;
}

std::optional<Generalization> evaluate_generalization(const minigpt::Model& m, const minigpt::Tokenizer& tok, const CorpusBundle& c,
                                                      const EvalLimits& limits, std::vector<double>* margins) {
  const std::vector<minigpt::BenchmarkItem> bench = benchmark_items(c, limits);
  if (bench.empty()) return std::nullopt;
  const minigpt::BenchmarkScores bs = minigpt::benchmark_scores(m, tok, bench);
  Generalization g;
  g.split = limits.benchmark_dev ? "dev" : "test";
  std::vector<double> scored;
  for (size_t i = 0; i < bench.size(); ++i) {
    g.answers[minigpt::paradigm_name(bench[i].paradigm)].push_back(answer_of(bs.margin[i]));
    if (std::isnan(bs.margin[i])) continue;  // skipped
    require_finite(bs.margin[i], "a generalization benchmark margin");
    scored.push_back(bs.margin[i]);
    const bool right = bs.margin[i] > 0;
    Score& p = g.by_paradigm[minigpt::paradigm_name(bench[i].paradigm)];
    ++p.total;
    p.correct += right;
    Score& sum = minigpt::paradigm_scored(bench[i].paradigm) ? g.overall : g.diagnostic;
    ++sum.total;
    sum.correct += right;
  }
  g.margin = margin_stats(scored);
  g.skipped_unknown_form = bs.skipped_unknown;
  g.skipped_too_long = bs.skipped_long;
  g.seconds = bs.seconds;
  if (margins) *margins = bs.margin;
  return g;
}

Quality evaluate_quality(const minigpt::Model& m, const minigpt::Tokenizer& tok, const CorpusBundle& c, const EvalLimits& limits,
                         ItemScores* items) {
  const std::vector<minigpt::Story>& test = c.corpus.test;
  const int window = limits.window > 0 ? limits.window : m.config().n_ctx;
  const int stride = limits.stride > 0 ? limits.stride : window / 2;
  Quality q;
  q.ppl_floor = minigpt::split_stats(test).floor_ppl;
  q.window = window;
  q.stride = stride;
  if (limits.perplexity) {
    const auto ppl = minigpt::perplexity(m, test_stream(tok, test, limits), window, stride);
    require_finite(ppl.ppl, "test perplexity");
    q.ppl = ppl.ppl;
    q.nats_per_token = ppl.nats_per_token;
    q.test_tokens = ppl.tokens;
    q.perplexity_seconds = ppl.seconds;
  }
  const auto vt = minigpt::verb_tense_accuracy(m, tok, test, limits.max_slots);
  q.verb_tense = {vt.overall.correct, vt.overall.total};
  std::vector<double> all;
  std::vector<std::vector<double>> by(minigpt::kNumConstructions);
  for (size_t i = 0; i < vt.slot_margin.size(); ++i) {
    if (std::isnan(vt.slot_margin[i])) continue;  // a skipped slot
    require_finite(vt.slot_margin[i], "a verb-tense slot margin");
    all.push_back(vt.slot_margin[i]);
    by[static_cast<size_t>(vt.slot_kind[i])].push_back(vt.slot_margin[i]);
  }
  q.margin = margin_stats(all);
  for (int k = 0; k < minigpt::kNumConstructions; ++k) {
    const std::string name = minigpt::construction_name(static_cast<minigpt::Construction>(k));
    q.by_construction[name] = {vt.by_kind[k].correct, vt.by_kind[k].total};
    q.margin_by_construction[name] = margin_stats(by[static_cast<size_t>(k)]);
  }
  q.skipped_unknown_form = vt.skipped_unknown;
  q.skipped_too_long = vt.skipped_long;
  q.verb_tense_seconds = vt.seconds;
  if (items) items->slot_margins = vt.slot_margin;
  q.generalization = evaluate_generalization(m, tok, c, limits, items ? &items->bench_margins : nullptr);
  return q;
}

void evaluate_divergence(const minigpt::Model& reference, const std::string& reference_name, const ItemScores* reference_items,
                         const std::vector<Evaluated>& models, const minigpt::Tokenizer& tok, const CorpusBundle& c,
                         const EvalLimits& limits) {
  if (models.empty()) return;
  const std::vector<minigpt::Story>& test = c.corpus.test;
  const std::vector<minigpt::BenchmarkItem> bench = benchmark_items(c, limits);
  const int window = limits.window > 0 ? limits.window : reference.config().n_ctx;
  const int stride = limits.stride > 0 ? limits.stride : window / 2;
  std::vector<const minigpt::Model*> ms;
  for (const auto& e : models) ms.push_back(e.model);
  const std::vector<DivergencePass> passes = divergence_pass(reference, ms, test_stream(tok, test, limits), window, stride);
  for (size_t k = 0; k < models.size(); ++k) {
    const DivergencePass& p = passes[k];
    Quality& q = *models[k].quality;
    // The same sums perplexity() makes, in the same order: the same numbers.
    q.test_tokens = static_cast<long long>(p.kl.size());
    q.nats_per_token = q.test_tokens > 0 ? -p.logp_model / static_cast<double>(q.test_tokens) : 0.0;
    q.ppl = std::exp(q.nats_per_token);
    require_finite(q.ppl, "test perplexity");
    q.window = window;
    q.stride = stride;
    q.perplexity_seconds = p.seconds / static_cast<double>(models.size());  // the shared pass, split evenly
    Divergence d = summarize_divergence(p, reference_name);
    require_finite(d.kl_mean, "the mean KL divergence");
    require_finite(d.kl_max, "the largest KL divergence");
    if (models[k].items && reference_items) {
      add_margin_change(d, reference_items->slot_margins, models[k].items->slot_margins);
      if (!bench.empty()) add_generalization_change(d, bench, reference_items->bench_margins, models[k].items->bench_margins);
    }
    q.divergence = d;
  }
}

}  // namespace mqexp
