// The quality measurement every experiment and `miniquant eval` share: test-split perplexity (window
// n_ctx, stride n_ctx / 2), verb-tense accuracy and slot margins per construction, the generalization
// benchmark per paradigm, into a typed Quality; and, against a reference model, the divergence measures (divergence.h) from the same windows.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/results.h"
#include "experiments/workspace.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/model.h"
#include "minigpt/tokenizer.h"

namespace mqexp {

struct EvalLimits {
  int64_t ppl_tokens = 0;  // perplexity over the test split's first tokens only (0: all)
  int64_t max_slots = 0;   // verb-tense slots (0: all)
  int window = 0;          // 0: the model's n_ctx
  int stride = 0;          // 0: window / 2
  // false: leave the perplexity fields to evaluate_divergence, whose pass computes the same numbers
  // bit for bit (so a model against a reference runs its windows once, not twice).
  bool perplexity = true;
  // The generalization benchmark: off, or on its test half (every report) or dev half (for building it),
  // the first max_items / kNumParadigms items of each paradigm (0: all).
  bool benchmark = true;
  bool benchmark_dev = false;
  int64_t max_items = 0;
};

// The benchmark items `limits` selects from the bundle, in the bundle's order (paradigm by paradigm).
std::vector<minigpt::BenchmarkItem> benchmark_items(const CorpusBundle& c, const EvalLimits& limits);

// Per-item values of one model, for pairing with another model's on the same items.
struct ItemScores {
  std::vector<double> slot_margins;   // verb-tense slots (the corpus's test split)
  std::vector<double> bench_margins;  // the benchmark items benchmark_items() selects; > 0 correct
};

// The generalization benchmark alone (the half and items `limits` selects; nullopt when none): accuracy over
// the scored paradigms, the diagnostics, per paradigm, margins, answers. margins, if not null, receives the
// per-item margins (NaN for a skipped item).
std::optional<Generalization> evaluate_generalization(const minigpt::Model& m, const minigpt::Tokenizer& tok, const CorpusBundle& c,
                                                      const EvalLimits& limits, std::vector<double>* margins = nullptr);

// items, if not null, receives the per-item margins.
Quality evaluate_quality(const minigpt::Model& m, const minigpt::Tokenizer& tok, const CorpusBundle& c,
                         const EvalLimits& limits = {}, ItemScores* items = nullptr);

// A model evaluated by evaluate_quality (its quality and item scores), to compare with the reference.
struct Evaluated {
  const minigpt::Model* model = nullptr;
  Quality* quality = nullptr;
  const ItemScores* items = nullptr;
};

// One streamed pass of `reference` and all `models` over the test windows: fills every quality's
// divergence (named reference_name; margins and benchmark answers paired with reference_items, when given)
// and its perplexity fields (identical to evaluate_quality's). The reference's logits are computed once per
// window for all models.
void evaluate_divergence(const minigpt::Model& reference, const std::string& reference_name, const ItemScores* reference_items,
                         const std::vector<Evaluated>& models, const minigpt::Tokenizer& tok, const CorpusBundle& c,
                         const EvalLimits& limits = {});

}  // namespace mqexp
