// Splits of the verb corpus: one random stream per split, cross-split duplicates redrawn, statistics.
#include "minigpt/corpus/corpus.h"

#include <cmath>
#include <unordered_set>

#include "miniquant/error.h"

namespace minigpt {

uint64_t story_hash(const Story& s) { return tokens_hash(s.tokens); }

uint64_t tokens_hash(const std::vector<std::string>& tokens) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& t : tokens) {
    for (unsigned char c : t) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0u) * 0x100000001b3ULL;  // token boundary: "ab","c" differs from "a","bc"
  }
  return h;
}

uint64_t seed_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

// Draws stories until `target` tokens; a story whose hash is in `taken` (an earlier split) is
// redrawn. Equal stories have equal hashes, so the splits never share a story; a hash collision
// between different stories would only cost a redraw.
int64_t fill(const StoryGenerator& gen, uint64_t seed, int64_t target, const std::unordered_set<uint64_t>& taken,
             std::vector<Story>& out, std::unordered_set<uint64_t>* record) {
  RandomChooser ch(seed);
  int64_t tokens = 0, redrawn = 0;
  while (tokens < target) {
    Story s = gen.generate(ch);
    const uint64_t h = story_hash(s);
    if (taken.count(h)) {
      ++redrawn;
      continue;
    }
    if (record) record->insert(h);
    tokens += static_cast<int64_t>(s.tokens.size());
    out.push_back(std::move(s));
  }
  return redrawn;
}

}  // namespace

Corpus generate_corpus(const Lexicon& lex, const CorpusConfig& cfg) {
  if (cfg.train_tokens < 0 || cfg.val_tokens < 0 || cfg.test_tokens < 0)
    throw mq::UsageError("corpus: split sizes must be >= 0 tokens");
  StoryGenerator gen(lex, cfg.grammar);
  Corpus c;
  std::unordered_set<uint64_t> taken;
  fill(gen, seed_mix(cfg.seed * 3 + 0), cfg.test_tokens, taken, c.test, &taken);
  const auto test_only = taken;
  c.redrawn_val = fill(gen, seed_mix(cfg.seed * 3 + 1), cfg.val_tokens, test_only, c.val, &taken);
  c.redrawn_train = fill(gen, seed_mix(cfg.seed * 3 + 2), cfg.train_tokens, taken, c.train, nullptr);
  return c;
}

SplitStats split_stats(const std::vector<Story>& split) {
  SplitStats st;
  st.stories = static_cast<int64_t>(split.size());
  for (const auto& s : split) {
    st.tokens += static_cast<int64_t>(s.tokens.size());
    for (double lp : s.logp) st.nll_sum -= lp;
    for (const auto& sl : s.slots) ++st.slots[static_cast<int>(sl.kind)];
  }
  if (st.tokens > 0) {
    st.nats_per_token = st.nll_sum / static_cast<double>(st.tokens);
    st.bits_per_token = st.nats_per_token / std::log(2.0);
    st.floor_ppl = std::exp(st.nats_per_token);
  }
  return st;
}

}  // namespace minigpt
