// Evaluation: strided-window perplexity against a brute-force scorer, and the verb-tense
// bookkeeping on a model whose answer is known.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/random.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/eval.h"
#include "minigpt/params.h"

using namespace minigpt;

namespace {

ModelConfig tiny(int vocab, int n_ctx) {
  return ModelConfig{.vocab_size = vocab, .n_ctx = n_ctx, .d_model = 128, .n_layer = 1, .n_head = 2, .d_ff = 512};
}

// Random weights large enough that every logit depends on the context.
Model random_model(const ModelConfig& c) {
  Model m(c, 42);
  NormalSampler n(3);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.05 * n.next());
  return m;
}

const Corpus& small_corpus() {
  static const Corpus c = [] {
    CorpusConfig cfg;
    cfg.train_tokens = 3000;
    cfg.val_tokens = 100;
    cfg.test_tokens = 1500;
    return generate_corpus(Lexicon::load(MQ_SOURCE_DIR "/data/lexicon"), cfg);
  }();
  return c;
}

}  // namespace

TEST_CASE("perplexity scores every token once, with the documented context") {
  const ModelConfig c = tiny(13, 16);
  const Model m = random_model(c);
  mq::Rng rng(5);
  std::vector<int32_t> stream(61);
  for (auto& t : stream) t = static_cast<int32_t>(rng.below(13));

  for (int window : {2, 9, 16, 17}) {
    for (int stride : {1, 4, window - 1}) {
      if (stride < 1 || stride > window - 1) continue;
      CAPTURE(window);
      CAPTURE(stride);
      const PerplexityResult r = perplexity(m, stream, window, stride);
      CHECK(r.tokens == static_cast<int64_t>(stream.size()));
      // Brute force: target t (in <sep> + stream) is read in the first window [k*stride, k*stride + window)
      // that contains it as a target, i.e. the smallest k with k*stride + window > t.
      std::vector<int32_t> s{Tokenizer::kSepId};
      s.insert(s.end(), stream.begin(), stream.end());
      double total = 0.0;
      for (int t = 1; t < static_cast<int>(s.size()); ++t) {
        int begin = 0;
        while (begin + window <= t) begin += stride;
        const std::vector<int32_t> ctx(s.begin() + begin, s.begin() + t + 1);
        total += m.score(ctx, t - begin, t - begin + 1);
      }
      CHECK(r.nats_per_token == doctest::Approx(-total / static_cast<double>(stream.size())).epsilon(1e-5));
      CHECK(r.ppl == doctest::Approx(std::exp(r.nats_per_token)).epsilon(1e-12));
    }
  }
  CHECK_THROWS_AS(perplexity(m, stream, 18, 4), mq::UsageError);  // window beyond n_ctx + 1
  CHECK_THROWS_AS(perplexity(m, stream, 8, 8), mq::UsageError);   // stride must leave context
}

TEST_CASE("verb-tense accuracy: a uniform model picks the first candidate on every tie") {
  const Corpus& corpus = small_corpus();
  const Tokenizer tok = Tokenizer::build(corpus.train);
  Model m(tiny(tok.size(), 128), 42);
  // All weights zero: every logit is 0, every candidate sentence scores the same, and the
  // argmax (first maximum) is candidate 0, the base form.
  std::fill(m.params(), m.params() + m.num_params(), 0.0f);
  const int64_t max_slots = 40;
  const VerbTenseResult r = verb_tense_accuracy(m, tok, corpus.test, max_slots);

  int64_t seen = 0, expect_correct = 0, expect_skipped = 0;
  std::array<int64_t, kNumConstructions> expect_total{};
  for (const Story& st : corpus.test)
    for (const VerbSlot& sl : st.slots) {
      if (seen++ >= max_slots) break;
      bool known = true;
      for (const auto& f : sl.forms) known = known && tok.id(f) != Tokenizer::kUnkId;
      if (!known) {
        ++expect_skipped;
        continue;
      }
      ++expect_total[static_cast<int>(sl.kind)];
      expect_correct += sl.correct == 0;
    }
  CHECK(r.skipped_unknown == expect_skipped);
  CHECK(r.overall.total + r.skipped_unknown + r.skipped_long == max_slots);
  CHECK(r.overall.correct == expect_correct);
  for (int k = 0; k < kNumConstructions; ++k) CHECK(r.by_kind[k].total == expect_total[k]);
  // Margins: every candidate sentence scores the same, so every scored slot's margin is exactly 0;
  // skipped slots carry NaN; one entry per slot, with its construction.
  REQUIRE(r.slot_margin.size() == static_cast<size_t>(max_slots));
  REQUIRE(r.slot_kind.size() == static_cast<size_t>(max_slots));
  int64_t nan_count = 0;
  for (double mg : r.slot_margin) {
    if (std::isnan(mg)) ++nan_count;
    else CHECK(mg == 0.0);
  }
  CHECK(nan_count == r.skipped_unknown + r.skipped_long);
}

TEST_CASE("verb-tense margins: the true form's score minus the best wrong one, positive exactly when correct") {
  const Corpus& corpus = small_corpus();
  const Tokenizer tok = Tokenizer::build(corpus.train);
  const Model m = random_model(tiny(tok.size(), 128));
  const VerbTenseResult r = verb_tense_accuracy(m, tok, corpus.test, 60);
  int64_t positive = 0, scored = 0;
  for (double mg : r.slot_margin) {
    if (std::isnan(mg)) continue;
    ++scored;
    positive += mg > 0;
    CHECK(mg != 0.0);  // random weights: no exact ties
  }
  CHECK(scored == r.overall.total);
  CHECK(positive == r.overall.correct);
  CHECK(r.overall.correct > 0);                // random weights: some right,
  CHECK(r.overall.correct < r.overall.total);  // some wrong

  // The first scored slot by hand: the margin from slot_scores of the same sentence.
  size_t idx = 0;
  const Story* stp = nullptr;
  const VerbSlot* slp = nullptr;
  for (const Story& st : corpus.test) {
    for (const VerbSlot& sl : st.slots) {
      if (idx < r.slot_margin.size() && !std::isnan(r.slot_margin[idx])) {
        stp = &st;
        slp = &sl;
        break;
      }
      ++idx;
    }
    if (slp) break;
  }
  REQUIRE(slp != nullptr);
  const Story& st = *stp;
  const VerbSlot& sl = *slp;
  std::vector<int32_t> ids{Tokenizer::kSepId};
  for (int32_t t = 0; t < sl.sent_end; ++t) ids.push_back(tok.id(st.tokens[static_cast<size_t>(t)]));
  REQUIRE(ids.size() <= 129);
  SlotSpan sp{.a = sl.sent_begin + 1, .s = sl.pos + 1, .b = sl.sent_end + 1, .forms = {}, .truth = sl.correct};
  for (int c = 0; c < 3; ++c) sp.forms[static_cast<size_t>(c)] = tok.id(sl.forms[static_cast<size_t>(c)]);
  const auto sc = slot_scores(m, ids, {sp});
  const size_t t = static_cast<size_t>(sl.correct);
  CHECK(r.slot_margin[idx] == doctest::Approx(sc[0][t] - std::max(sc[0][(t + 1) % 3], sc[0][(t + 2) % 3])).epsilon(1e-5));  // the story runs to its last slot there: float rounding
}

TEST_CASE("verb-tense accuracy skips slots whose forms the vocabulary lacks") {
  const Corpus& corpus = small_corpus();
  // A vocabulary from two stories only: most verb forms of the test split are unknown to it.
  const Tokenizer tok = Tokenizer::build({corpus.train.begin(), corpus.train.begin() + 2});
  const Model m = random_model(tiny(tok.size(), 128));
  const VerbTenseResult r = verb_tense_accuracy(m, tok, corpus.test, 25);
  CHECK(r.skipped_unknown > 0);
  CHECK(r.overall.total + r.skipped_unknown + r.skipped_long == 25);
}

TEST_CASE("slot scores share the story's forward pass and equal whole-sequence scoring") {
  const Model m = random_model(tiny(40, 24));
  mq::Rng rng(5);
  std::vector<int32_t> ids(21);  // n_ctx + 1 tokens
  for (auto& t : ids) t = static_cast<int32_t>(rng.below(40));
  // Slots in one story: blank inside a sentence, at its start, at its end, two in one sentence,
  // and one from position 1; each true form is the token the story holds, the others differ.
  std::vector<SlotSpan> slots = {{1, 4, 8}, {9, 9, 14}, {9, 12, 14}, {9, 13, 14}, {15, 18, 21}};
  for (auto& sp : slots) {
    sp.truth = static_cast<int>(rng.below(3));
    for (int c = 0; c < 3; ++c)
      sp.forms[static_cast<size_t>(c)] = c == sp.truth ? ids[static_cast<size_t>(sp.s)] : static_cast<int32_t>(rng.below(40));
  }
  const auto got = slot_scores(m, ids, slots);
  REQUIRE(got.size() == slots.size());
  for (size_t k = 0; k < slots.size(); ++k)
    for (int c = 0; c < 3; ++c) {
      std::vector<int32_t> with = ids;
      with[static_cast<size_t>(slots[k].s)] = slots[k].forms[static_cast<size_t>(c)];
      CHECK(got[k][static_cast<size_t>(c)] == doctest::Approx(m.score(with, slots[k].a, slots[k].b)).epsilon(1e-5));
    }
  CHECK_THROWS_AS(slot_scores(m, ids, {{5, 4, 10, {1, 2, 3}, 0}}), mq::UsageError);  // s < a
  SlotSpan wrong = slots[0];
  wrong.truth = (wrong.truth + 1) % 3;
  if (wrong.forms[static_cast<size_t>(wrong.truth)] != ids[4]) CHECK_THROWS_AS(slot_scores(m, ids, {wrong}), mq::UsageError);
}
