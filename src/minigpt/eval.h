// Evaluation of a MiniGPT on the verb corpus: test perplexity (next to the corpus floor) and
// verb-tense minimal-pair accuracy per construction.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "minigpt/model.h"
#include "minigpt/corpus/generalization.h"
#include "minigpt/corpus/story.h"
#include "minigpt/tokenizer.h"

namespace minigpt {

struct PerplexityResult {
  double ppl = 0.0;
  double nats_per_token = 0.0;
  int64_t tokens = 0;  // predicted tokens: the whole split, separators included
  // Tokens whose most likely prediction (the first maximum of the logits) is the true next token: the
  // next-token top-1 accuracy is top1_hits / tokens (an accuracy that stays far below 1 on this corpus,
  // whose entropy floor is ~2.7 nats per token, and moves with every bit taken from the weights).
  int64_t top1_hits = 0;
  double top1() const { return tokens > 0 ? static_cast<double>(top1_hits) / static_cast<double>(tokens) : 0.0; }
  int window = 0;      // context window (tokens fed per forward pass)
  int stride = 0;      // windows start `stride` apart; each token is scored once, in the first
                       // window where it has at least window - stride tokens of context
  double seconds = 0.0;
};

// The windows perplexity() scores: over s = <sep> + stream (L = stream.size() + 1 tokens), window
// i feeds s[begin, end) and scores the targets s[first, end) that no earlier window scored. Every
// target 1 .. L-1 is scored exactly once. divergence (experiments/divergence.h) walks the same ones.
struct ScoreWindow {
  int64_t begin = 0, end = 0, first = 0;
};
std::vector<ScoreWindow> score_windows(int64_t L, int window, int stride);

// Perplexity of `stream` (a split's token ids, each story ending in <sep>). A <sep> is put in
// front, so the first story's first token is predicted from the same start a story has in
// training, and the count matches the corpus floor's.
PerplexityResult perplexity(const Model& m, const std::vector<int32_t>& stream, int window, int stride);

struct ConstructionScore {
  int64_t total = 0, correct = 0;
  double accuracy() const { return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total); }
};

// One verb slot inside a story's token ids: the sentence is [a, b), the blank is at s.
struct SlotSpan {
  int a = 0, s = 0, b = 0;
  std::array<int32_t, 3> forms{};  // candidate token ids (base, 3rd singular, past)
  int truth = 0;                   // index of the form that ids[s] holds
};

// For each slot (in order of s), the log-probability of its sentence tokens [a, b) with each form
// in the blank. The story runs once through a KV cache; each candidate feeds only the blank and the
// rest of its sentence. Equals Model::score with the form substituted, up to float rounding.
// ids (<= n_ctx + 1 tokens) must hold the true forms.
std::vector<std::array<double, 3>> slot_scores(const Model& m, const std::vector<int32_t>& ids,
                                               const std::vector<SlotSpan>& slots);

struct VerbTenseResult {
  ConstructionScore overall;
  // Per slot in story order (the slots counted in max_slots): the construction and the margin
  // log p(sentence | true form) - max over wrong forms of log p(sentence | that form), in nats;
  // > 0 means correct, < 0 wrong (a tie scores the lowest-index form). NaN for a skipped slot. Comparing two models slot by slot
  // pairs these vectors (same stories, same order).
  std::vector<Construction> slot_kind;
  std::vector<double> slot_margin;
  std::array<ConstructionScore, kNumConstructions> by_kind;  // indexed by Construction
  int64_t skipped_unknown = 0;  // slots with a candidate form outside the vocabulary
  int64_t skipped_long = 0;     // slots whose sentence ends beyond the context window
  double seconds = 0.0;
};

// For every slot of `stories` (up to max_slots, in story order; 0 = all): put each candidate form
// (base, 3rd singular, past) in the blank, score the log-probability of the whole sentence given
// the story before it, and count the slot correct when the true form scores highest.
VerbTenseResult verb_tense_accuracy(const Model& m, const Tokenizer& tok, const std::vector<Story>& stories,
                                    int64_t max_slots = 0);

// The generalization benchmark (corpus/generalization.h) scored as the slots are: each item's sentence with
// each form in the blank, given the context before it (<sep> in front). Per item, in order: its margin
// log p(true form) - max over wrong forms, nats (> 0 correct; a tie counts wrong); NaN for an item skipped
// (a form outside the vocabulary, or a context longer than n_ctx + 1 tokens).
struct BenchmarkScores {
  std::vector<double> margin;
  int64_t skipped_unknown = 0, skipped_long = 0;
  double seconds = 0.0;
};
BenchmarkScores benchmark_scores(const Model& m, const Tokenizer& tok, const std::vector<BenchmarkItem>& items);

}  // namespace minigpt
