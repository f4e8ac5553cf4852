// The full default corpus (seed 42): split sizes, slot counts per construction, entropy floors in
// a band, disjoint splits. Slow label: it generates all ~5.15 million tokens.
#include <doctest/doctest.h>

#include <array>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <unordered_set>

#include "minigpt/corpus/corpus.h"
#include "minigpt/tokenizer.h"
#include "story_enumerator.h"

using namespace minigpt;

TEST_CASE("default corpus: sizes, floors, slots, disjoint splits") {
  const Lexicon lex = Lexicon::load(MQ_SOURCE_DIR "/data/lexicon");
  const CorpusConfig cfg;
  const auto t0 = std::chrono::steady_clock::now();
  const Corpus c = generate_corpus(lex, cfg);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("generation took " << secs << " s (reported, not checked)");

  const SplitStats tr = split_stats(c.train), va = split_stats(c.val), te = split_stats(c.test);
  CHECK(tr.tokens >= cfg.train_tokens);
  CHECK(tr.tokens < cfg.train_tokens + 200);
  CHECK(va.tokens >= cfg.val_tokens);
  CHECK(te.tokens >= cfg.test_tokens);
  // The val split must hold at least 128 calibration sequences for GPTQ.
  CHECK(va.stories >= 128);

  // Floors in a two-sided band: a change of grammar that moves them must be looked at.
  for (const SplitStats* s : {&tr, &va, &te}) {
    MESSAGE("floor ppl " << s->floor_ppl << ", " << s->bits_per_token << " bits/token");
    CHECK(s->floor_ppl > 12.0);
    CHECK(s->floor_ppl < 18.0);
  }
  CHECK(std::abs(tr.floor_ppl - te.floor_ppl) < 0.3);

  // Two-sided bands around the seed-42 counts in Construction order (746, 952, 211, 4351; hard set
  // 269, 187, 185): at least a hundred and fifty each, so a Wilson interval is a few points wide.
  const std::array<std::pair<int64_t, int64_t>, kNumConstructions> bands{
      {{560, 950}, {700, 1200}, {150, 280}, {3300, 5500}, {190, 360}, {130, 250}, {130, 250}}};
  int64_t total = 0;
  for (int k = 0; k < kNumConstructions; ++k) {
    const int64_t n = te.slots[static_cast<size_t>(k)];
    MESSAGE(std::string(construction_name(static_cast<Construction>(k))) << ": " << n);
    CHECK(n >= bands[static_cast<size_t>(k)].first);
    CHECK(n <= bands[static_cast<size_t>(k)].second);
    total += n;
  }
  CHECK(total >= 2000);

  std::unordered_set<uint64_t> test, val;
  for (const auto& s : c.test) test.insert(story_hash(s));
  for (const auto& s : c.val) {
    CHECK(!test.count(story_hash(s)));
    val.insert(story_hash(s));
  }
  int64_t shared = 0;
  for (const auto& s : c.train) shared += test.count(story_hash(s)) + val.count(story_hash(s));
  CHECK(shared == 0);

  const Tokenizer tok = Tokenizer::build(c.train);
  MESSAGE("vocabulary " << tok.size());
  CHECK(tok.size() > 1500);
  CHECK(tok.size() < 2500);
  int64_t unk = 0;
  for (int32_t id : encode_split(tok, c.test)) unk += id == Tokenizer::kUnkId;
  CHECK(unk == 0);  // the train split covers every word the test split uses
}

TEST_CASE("default grammar: test stories have exactly one derivation") {
  // Searches every choice sequence that writes each of the first 150 test stories (about 5 s):
  // more than one would make the floor an upper bound, none would mean a bookkeeping bug.
  // MQ_ALL_DERIVATIONS=1 searches the whole split (minutes), as the corpus README reports.
  const bool all = std::getenv("MQ_ALL_DERIVATIONS") != nullptr;
  const Lexicon lex = Lexicon::load(MQ_SOURCE_DIR "/data/lexicon");
  CorpusConfig cfg;
  cfg.train_tokens = 0, cfg.val_tokens = 0;
  const Corpus c = generate_corpus(lex, cfg);
  const StoryGenerator gen(lex, cfg.grammar);
  int ambiguous = 0, underivable = 0;
  const size_t n = all ? c.test.size() : std::min<size_t>(150, c.test.size());
  for (size_t i = 0; i < n; ++i) {
    const auto d = mqtest::derivations_of(gen, c.test[i].tokens);
    ambiguous += d.count > 1;
    underivable += d.count == 0;
  }
  MESSAGE("searched " << n << " test stories");
  CHECK(ambiguous == 0);
  CHECK(underivable == 0);
}
