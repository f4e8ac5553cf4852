// The synthetic verb corpus: deterministic multi-sentence stories with exact log-probabilities and
// minimal-pair verb slots, split into train / val / test that share no story.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "minigpt/corpus/lexicon.h"
#include "minigpt/corpus/story.h"

namespace minigpt {

struct CorpusConfig {
  uint64_t seed = 42;
  // Each split grows story by story until it holds at least this many tokens (separators included).
  int64_t train_tokens = 5'000'000;
  int64_t val_tokens = 50'000;
  int64_t test_tokens = 100'000;
  GrammarConfig grammar;
};

struct Corpus {
  std::vector<Story> train, val, test;
  // Stories drawn for val (train) that already occurred in test (test or val) and were redrawn:
  // the guarantee that the splits are disjoint.
  int64_t redrawn_val = 0, redrawn_train = 0;
};

// Test is drawn first from its own stream, then val, then train, so a split's content depends only
// on the seed, its own size and the sizes of the splits drawn before it.
Corpus generate_corpus(const Lexicon& lex, const CorpusConfig& cfg);

struct SplitStats {
  int64_t stories = 0;
  int64_t tokens = 0;        // separators included: the model predicts them too
  double nll_sum = 0;        // -sum of token log-probs = -log p(split) (nats)
  double nats_per_token = 0;
  double bits_per_token = 0;
  double floor_ppl = 0;      // exp(nats_per_token): the perplexity an ideal model reaches
  std::array<int64_t, kNumConstructions> slots{};  // indexed by Construction
};
SplitStats split_stats(const std::vector<Story>& split);

// splitmix64: turns (seed, stream) into well-separated mt19937_64 seeds (the splits', the benchmark's).
uint64_t seed_mix(uint64_t x);

// FNV-1a 64 over the tokens, each followed by a 0 byte: identical stories hash identically.
uint64_t story_hash(const Story& s);
uint64_t tokens_hash(const std::vector<std::string>& tokens);

}  // namespace minigpt
