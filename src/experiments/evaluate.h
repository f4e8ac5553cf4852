// The quality measurement every experiment and `miniquant eval` share: test-split perplexity (window
// n_ctx, stride n_ctx / 2) and verb-tense accuracy per construction, into a typed Quality.
#pragma once
#include <cstdint>
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
};

Quality evaluate_quality(const minigpt::Model& m, const minigpt::Tokenizer& tok, const std::vector<minigpt::Story>& test,
                         const EvalLimits& limits = {});

}  // namespace mqexp
