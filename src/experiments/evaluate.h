// The quality measurement every experiment and `miniquant eval` share: test-split perplexity (window
// n_ctx, stride n_ctx / 2), verb-tense accuracy and slot margins per construction, into a typed
// Quality; and, against a reference model, the divergence measures (divergence.h) from the same windows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/results.h"
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
};

// slot_margins, if not null, receives verb_tense_accuracy's per-slot margins (for pairing with another model).
Quality evaluate_quality(const minigpt::Model& m, const minigpt::Tokenizer& tok, const std::vector<minigpt::Story>& test,
                         const EvalLimits& limits = {}, std::vector<double>* slot_margins = nullptr);

// A model evaluated by evaluate_quality (its quality and slot margins), to compare with the reference.
struct Evaluated {
  const minigpt::Model* model = nullptr;
  Quality* quality = nullptr;
  const std::vector<double>* slot_margins = nullptr;
};

// One streamed pass of `reference` and all `models` over the test windows: fills every quality's
// divergence (named reference_name; margins paired with reference_margins) and its perplexity fields
// (identical to evaluate_quality's). The reference's logits are computed once per window for all models.
void evaluate_divergence(const minigpt::Model& reference, const std::string& reference_name,
                         const std::vector<double>& reference_margins, const std::vector<Evaluated>& models,
                         const minigpt::Tokenizer& tok, const std::vector<minigpt::Story>& test, const EvalLimits& limits = {});

}  // namespace mqexp
