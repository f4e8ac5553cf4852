// The generalization benchmark: its generator (determinism, halves, decided slots, constructions training never
// writes), its scoring against whole-sentence scoring, and the report's pairing and rank agreement.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/epi.h"
#include "experiments/generalization_report.h"
#include "experiments/intervals.h"
#include "miniquant/error.h"
#include "miniquant/random.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/generalization.h"
#include "minigpt/eval.h"
#include "minigpt/params.h"

using namespace minigpt;

namespace {

const Lexicon& lexicon() {
  static const Lexicon lex = Lexicon::load(MQ_SOURCE_DIR "/data/lexicon");
  return lex;
}

std::string joined(const std::vector<std::string>& t, size_t a, size_t b) {
  std::string s;
  for (size_t i = a; i < b; ++i) s += t[i] + " ";
  return s;
}

// The sentences of a story, as strings.
void add_sentences(const Story& st, std::set<std::string>& out) {
  size_t begin = 0;
  for (size_t i = 0; i < st.tokens.size(); ++i)
    if (st.tokens[i] == "." || st.tokens[i] == "?") {
      out.insert(joined(st.tokens, begin, i + 1));
      begin = i + 1;
    }
}

}  // namespace

TEST_CASE("benchmark: seeded, two disjoint halves of per_half items per paradigm, every slot well formed") {
  BenchmarkConfig cfg;
  cfg.per_half = 40;
  const std::vector<BenchmarkItem> a = generate_benchmark(lexicon(), cfg);
  const std::vector<BenchmarkItem> b = generate_benchmark(lexicon(), cfg);
  REQUIRE(a.size() == static_cast<size_t>(kNumParadigms * 2 * cfg.per_half));
  std::map<std::pair<int, bool>, int> count;
  std::set<std::vector<std::string>> seen;
  for (size_t i = 0; i < a.size(); ++i) {
    const BenchmarkItem& it = a[i];
    CAPTURE(paradigm_name(it.paradigm));
    CHECK(it.tokens == b[i].tokens);  // the same seed gives the same items
    ++count[{static_cast<int>(it.paradigm), it.test}];
    CHECK(seen.insert(it.tokens).second);  // no item twice, within or across halves
    CHECK(it.sent_end == static_cast<int32_t>(it.tokens.size()));
    CHECK((it.tokens.back() == "." || it.tokens.back() == "?"));  // a long story's slot may sit in a question
    CHECK(it.sent_begin <= it.pos);
    CHECK(it.pos < it.sent_end);
    CHECK(static_cast<int>(it.tokens.size()) <= cfg.max_tokens);
    CHECK(it.tokens[static_cast<size_t>(it.pos)] == it.forms[it.correct]);
    CHECK(it.forms[0] != it.forms[1]);
    CHECK(it.forms[0] != it.forms[2]);
    CHECK(it.forms[1] != it.forms[2]);
    // Present-tense paradigms agree in number (base or 3rd singular); the tense paradigms' slots are past or present.
    if (it.paradigm == Paradigm::far_past_cue) CHECK(it.correct == 2);
    if (it.paradigm == Paradigm::coordination_pp) CHECK(it.correct == 0);  // two conjuncts: plural
    if (it.paradigm != Paradigm::far_past_cue && it.paradigm != Paradigm::long_story) CHECK(it.correct != 2);
  }
  for (int p = 0; p < kNumParadigms; ++p)
    for (bool test : {false, true}) CHECK(count[{p, test}] == cfg.per_half);
  // Another seed, other items.
  cfg.seed = 7;
  CHECK(generate_benchmark(lexicon(), cfg)[0].tokens != a[0].tokens);
  cfg.per_half = 0;
  CHECK_THROWS_AS(generate_benchmark(lexicon(), cfg), mq::UsageError);
}

TEST_CASE("benchmark: the number a slot takes is the head's, across attractors of the other number") {
  // The head is the first noun after the cue's comma; its number (from the lexicon) decides base vs 3rd singular
  // in the paradigms whose slot is the main verb. Every other noun before the slot has the other number.
  std::map<std::string, bool> plural;  // noun form -> is plural
  for (const Noun& n : lexicon().nouns) {
    plural[n.singular] = false;
    plural[n.plural] = true;
  }
  BenchmarkConfig cfg;
  cfg.per_half = 30;
  int checked = 0;
  for (const BenchmarkItem& it : generate_benchmark(lexicon(), cfg)) {
    const Paradigm p = it.paradigm;
    const bool head_decides = p == Paradigm::two_pp || p == Paradigm::four_pp || p == Paradigm::pp_relative ||
                              p == Paradigm::pp_orel || p == Paradigm::orel_pp || p == Paradigm::orel_relative ||
                              p == Paradigm::centre_main || p == Paradigm::unseen_pairing || p == Paradigm::unseen_two_pp;
    if (!head_decides) continue;
    CAPTURE(paradigm_name(p));
    CAPTURE(joined(it.tokens, 0, it.tokens.size()));
    std::vector<bool> numbers;
    for (int32_t t = 0; t < it.pos; ++t)
      if (const auto f = plural.find(it.tokens[static_cast<size_t>(t)]); f != plural.end()) numbers.push_back(f->second);
    REQUIRE(numbers.size() >= 2);
    CHECK(it.correct == (numbers.front() ? 0 : 1));
    for (size_t k = 1; k < numbers.size(); ++k) CHECK(numbers[k] != numbers.front());
    ++checked;
  }
  CHECK(checked == 9 * 2 * cfg.per_half);
}

TEST_CASE("benchmark: no scored sentence is one the training grammar writes, and long stories outgrow training's") {
  CorpusConfig cc;
  cc.train_tokens = 400'000;  // a sample of the training split: every sentence kind it writes occurs many times
  cc.val_tokens = 100;
  cc.test_tokens = 100;
  const Corpus corpus = generate_corpus(lexicon(), cc);
  std::set<std::string> train;
  size_t longest = 0;
  for (const Story& st : corpus.train) {
    add_sentences(st, train);
    longest = std::max<size_t>(longest, static_cast<size_t>(std::count(st.tokens.begin(), st.tokens.end(), ".")) +
                                            static_cast<size_t>(std::count(st.tokens.begin(), st.tokens.end(), "?")));
  }
  CHECK(longest <= 6);
  BenchmarkConfig cfg;
  cfg.per_half = 30;
  for (const BenchmarkItem& it : generate_benchmark(lexicon(), cfg)) {
    CAPTURE(paradigm_name(it.paradigm));
    if (it.paradigm == Paradigm::long_story) {
      // Its sentences are the grammar's; what training never shows is a story this long before the slot.
      const auto sentences = std::count(it.tokens.begin(), it.tokens.end(), ".") + std::count(it.tokens.begin(), it.tokens.end(), "?");
      CHECK(sentences >= 8);
      continue;
    }
    CHECK(train.count(joined(it.tokens, static_cast<size_t>(it.sent_begin), static_cast<size_t>(it.sent_end))) == 0);
  }
}

// Every committed report scored this test half (seed 42, 500 items per paradigm): a change to the grammar's
// defaults, the lexicon or an item builder that moves one token of it fails here, not silently in a report.
TEST_CASE("benchmark: the frozen test half is the one the committed reports scored") {
  std::vector<std::string> flat;
  size_t n = 0;
  for (const BenchmarkItem& it : generate_benchmark(lexicon(), BenchmarkConfig{})) {
    if (!it.test) continue;
    ++n;
    flat.emplace_back(paradigm_name(it.paradigm));
    flat.insert(flat.end(), it.tokens.begin(), it.tokens.end());
    flat.insert(flat.end(), it.forms.begin(), it.forms.end());
    for (int v : {it.pos, it.sent_begin, it.sent_end, static_cast<int>(it.correct)}) flat.push_back(std::to_string(v));
  }
  CHECK(n == static_cast<size_t>(kNumParadigms) * 500);
  CHECK(fmt::format("{:016x}", tokens_hash(flat)) == "22051fc22571502a");
}

TEST_CASE("benchmark scores: each item's margin is whole-sentence scoring's, skipped items are NaN") {
  BenchmarkConfig cfg;
  cfg.per_half = 2;
  std::vector<BenchmarkItem> items = generate_benchmark(lexicon(), cfg);
  CorpusConfig cc;
  cc.train_tokens = 300'000;
  cc.val_tokens = 100;
  cc.test_tokens = 100;
  const Tokenizer tok = Tokenizer::build(generate_corpus(lexicon(), cc).train);
  Model m(ModelConfig{.vocab_size = tok.size(), .n_ctx = 128, .d_model = 128, .n_layer = 1, .n_head = 2, .d_ff = 512}, 42);
  NormalSampler n(3);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.05 * n.next());
  BenchmarkItem unknown = items[0];
  unknown.forms[(unknown.correct + 1) % 3] = "zzzz";  // not in the vocabulary
  items.push_back(unknown);
  const BenchmarkScores s = benchmark_scores(m, tok, items);
  REQUIRE(s.margin.size() == items.size());
  CHECK(std::isnan(s.margin.back()));
  CHECK(s.skipped_unknown == 1);
  for (size_t i = 0; i + 1 < items.size(); ++i) {
    const BenchmarkItem& it = items[i];
    std::vector<int32_t> ids{Tokenizer::kSepId};
    for (const auto& w : it.tokens) ids.push_back(tok.id(w));
    std::array<double, 3> sc{};
    for (int c = 0; c < 3; ++c) {
      std::vector<int32_t> with = ids;
      with[static_cast<size_t>(it.pos + 1)] = tok.id(it.forms[static_cast<size_t>(c)]);
      sc[static_cast<size_t>(c)] = m.score(with, it.sent_begin + 1, it.sent_end + 1);
    }
    const size_t t = it.correct;
    CHECK(s.margin[i] == doctest::Approx(sc[t] - std::max(sc[(t + 1) % 3], sc[(t + 2) % 3])).epsilon(1e-5));
  }
}

TEST_CASE("paired differences: Newcombe's method 10 on a published example, McNemar's exact test") {
  // Altman, Machin, Bryant & Gardner, Statistics with confidence (2000), Table 6.2: 14 both, 5 only A, 0 only B,
  // 22 neither: difference 0.122, 95% interval 0.011 to 0.226.
  const mqexp::PairedDifference p = mqexp::paired_difference(14, 5, 0, 22);
  CHECK(p.n == 41);
  CHECK(p.diff == doctest::Approx(5.0 / 41));
  CHECK(std::abs(p.low - 0.011) < 5e-4);
  CHECK(std::abs(p.high - 0.226) < 5e-4);
  CHECK(p.p_value == doctest::Approx(0.0625));  // 2 * 0.5^5
  // Swapping the classifiers negates the interval.
  const mqexp::PairedDifference q = mqexp::paired_difference(14, 0, 5, 22);
  CHECK(q.low == doctest::Approx(-p.high));
  CHECK(q.high == doctest::Approx(-p.low));
  CHECK(mqexp::mcnemar_exact(1, 9) == doctest::Approx(2.0 * 11.0 / 1024.0));
  CHECK(mqexp::mcnemar_exact(7, 7) == 1.0);
  CHECK(mqexp::mcnemar_exact(0, 0) == 1.0);
  // Thousands of discordant items: no underflow.
  CHECK(mqexp::mcnemar_exact(1000, 1200) > 0.0);
  CHECK(mqexp::mcnemar_exact(1000, 1200) < 1e-4);
  // No discordant item: a tie whose interval still has width; large n with many discordant items in one
  // direction: close to the Wald interval of the paired difference.
  const mqexp::PairedDifference tie = mqexp::paired_difference(900, 0, 0, 100);
  CHECK(tie.low < 0.0);
  CHECK(tie.high > 0.0);
  CHECK(tie.high < 0.005);
  const long long b = 300, c = 200, n = 5000;
  const mqexp::PairedDifference big = mqexp::paired_difference(4000, b, c, n - 4000 - b - c);
  const double d = static_cast<double>(b - c) / n;
  const double se = std::sqrt((static_cast<double>(b + c) / n - d * d) / n);
  CHECK(big.low == doctest::Approx(d - mqexp::kZ95 * se).epsilon(0.05));
  CHECK(big.high == doctest::Approx(d + mqexp::kZ95 * se).epsilon(0.05));
  CHECK_THROWS_AS(mqexp::paired_difference(1, -1, 0, 0), mq::UsageError);
}

TEST_CASE("Spearman's rho: average ranks for ties; paired answers count by item") {
  CHECK(mqexp::spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1.0));
  CHECK(mqexp::spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1.0));
  CHECK(mqexp::spearman({1, 2, 2, 3}, {1, 2, 3, 4}) == doctest::Approx(4.5 / std::sqrt(22.5)));
  CHECK(std::isnan(mqexp::spearman({1, 1, 1}, {1, 2, 3})));
  CHECK_THROWS_AS(mqexp::spearman({1, 2}, {1}), mq::UsageError);

  mqexp::Generalization a, b;
  for (int p = 0; p < kNumParadigms; ++p) {
    const std::string name = paradigm_name(static_cast<Paradigm>(p));
    a.answers[name] = "1100-";
    b.answers[name] = "1010-";
  }
  const auto pd = mqexp::paired_answers(a, b);
  REQUIRE(pd.has_value());
  int scored = 0;
  for (int p = 0; p < kNumParadigms; ++p) scored += paradigm_scored(static_cast<Paradigm>(p));
  CHECK(pd->n == 4 * scored);  // the skipped item is left out; the diagnostics are not in the overall
  CHECK(pd->only_a == scored);
  CHECK(pd->only_b == scored);
  const auto one = mqexp::paired_answers(a, b, "centre_middle");  // a diagnostic, asked for by name
  REQUIRE(one.has_value());
  CHECK(one->n == 4);
  b.answers["two_pp"] = "10";  // another length: not the same items
  CHECK_FALSE(mqexp::paired_answers(a, b).has_value());
}

TEST_CASE("EPI frontier: with answers, an accuracy difference inside its paired interval is a tie, not a win") {
  // y gets two more of 1000 items right than x at the same cost in every round: by value y dominates x (more
  // accurate, no dearer); paired by item the +0.002 is inside its interval, so neither beats the other.
  std::string x(1000, '0'), y(1000, '0');
  for (int i = 0; i < 900; ++i) x[static_cast<size_t>(i)] = y[static_cast<size_t>(i)] = '1';
  y[900] = y[901] = '1';
  const std::vector<double> j = {1.0, 1.1, 0.9, 1.05, 0.95, 1.0};
  std::vector<mqexp::EpiPoint> by_value = {{"x", 0.900, j, ""}, {"y", 0.902, j, ""}};
  CHECK(mqexp::epi_frontier(by_value) == std::vector<std::string>{"y"});
  std::vector<mqexp::EpiPoint> paired = {{"x", 0.900, j, x}, {"y", 0.902, j, y}};
  CHECK(mqexp::epi_frontier(paired) == std::vector<std::string>{"x", "y"});
  // Thirty more right answers are beyond the interval: y dominates again.
  for (int i = 902; i < 932; ++i) paired[1].answers[static_cast<size_t>(i)] = '1';
  paired[1].accuracy = 0.932;
  CHECK(mqexp::epi_frontier(paired) == std::vector<std::string>{"y"});
}

namespace {
// A row with KLD kl whose first `right` of 100 items per paradigm are right.
mqexp::SchemeRow benchmark_row(const std::string& name, double kl, int right) {
  mqexp::SchemeRow r;
  r.scheme = name;
  r.ok = true;
  r.quality.emplace();
  mqexp::Divergence d;
  d.kl_mean = kl;
  d.kl_low = 0.9 * kl;
  d.kl_high = 1.1 * kl;
  r.quality->divergence = d;
  mqexp::Generalization g;
  for (int p = 0; p < kNumParadigms; ++p) {
    const std::string answers = std::string(static_cast<size_t>(right), '1') + std::string(static_cast<size_t>(100 - right), '0');
    g.answers[paradigm_name(static_cast<Paradigm>(p))] = answers;
    g.by_paradigm[paradigm_name(static_cast<Paradigm>(p))] = {right, 100};
    if (paradigm_scored(static_cast<Paradigm>(p))) g.overall.correct += right, g.overall.total += 100;
  }
  r.quality->generalization = g;
  return r;
}
}  // namespace

TEST_CASE("report: pairs KLD resolves, split by what the paired accuracy says, and which way changed answers go") {
  // fp32 right on 60 of 100 items per paradigm; "tipped" (small KLD) on those and 20 more; "broken" (large KLD)
  // on 40 of fp32's. By KLD: fp32 < tipped < broken. Accuracy: tipped > fp32 > broken: the pair (fp32, tipped) is
  // reversed beyond its interval, the other two agree.
  const auto row = benchmark_row;
  const std::vector<mqexp::SchemeRow> rows = {row("fp32", 0.0, 60), row("tipped", 1e-4, 80), row("broken", 1e-2, 40)};
  const std::string s = mqexp::generalization_section(rows, "fp32", 42);
  INFO(s);
  int scored = 0;
  for (int p = 0; p < kNumParadigms; ++p) scored += paradigm_scored(static_cast<Paradigm>(p));
  CHECK(s.find("of the 3 pairs of schemes whose KLD intervals are apart, the paired accuracy difference orders 2 as KLD does, "
               "1 the other way (fp32 (KLD 0) below tipped (KLD 0.0001)") != std::string::npos);
  CHECK(s.find("calls 0 a tie (inside its interval): of the pairs accuracy resolves, 67% agree with KLD") != std::string::npos);
  CHECK(s.find(fmt::format("the 1 schemes with KLD below 1e-3 answer {} items differently from fp32, 100% of them toward the right "
                           "answer; the 1 at 1e-3 or above, {} items, 0% toward right", 20 * scored, 20 * scored)) != std::string::npos);
}

TEST_CASE("report: rank agreement within rounding errors alone and within calibrated ones") {
  // Rounded alone, accuracy falls as KLD grows; calibrated, the row with the smallest KLD answers worst:
  // rho 1 for the first kind, 0.2 for the second (fp32 the zero of both); rows that are not recipes are left out.
  const std::vector<mqexp::SchemeRow> rows = {
      benchmark_row("fp32", 0.0, 60),          benchmark_row("int8-per-channel", 1e-5, 59), benchmark_row("int4-g64", 1e-3, 55),
      benchmark_row("int2-g64", 1e-1, 40),     benchmark_row("int4-g64-gptq", 1e-4, 40),   benchmark_row("int3-g64-gptq", 1e-3, 58),
      benchmark_row("int2-g64-gptq", 1e-2, 59), benchmark_row("my-map", 1e-3, 10)};
  const std::string s = mqexp::generalization_section(rows, "fp32", 42);
  INFO(s);
  CHECK(s.find("By kind of error: over the 4 rows whose weights are rounded alone") != std::string::npos);
  CHECK(s.find("accuracy ranks as KLD does with rho 1.000 [1.000, 1.000]; over the 4 rows a calibration shaped") != std::string::npos);
  CHECK(s.find("fp32 added) rho 0.200 [") != std::string::npos);
  CHECK(s.find("The rounding errors alone meet the 0.8 at their interval's low end") != std::string::npos);
}
