// Corpus tests: lexicon loading and its errors, determinism, disjoint splits, slot truth, and exact
// probabilities (an exhaustive enumeration of small grammars must sum to one).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <unistd.h>

#include "miniquant/error.h"
#include "minigpt/corpus/corpus.h"
#include "story_enumerator.h"
#include "temp_dir.h"

using namespace minigpt;
namespace fs = std::filesystem;

namespace {

const std::string kLexDir = MQ_SOURCE_DIR "/data/lexicon";

const Lexicon& lexicon() {
  static const Lexicon lex = Lexicon::load(kLexDir);
  return lex;
}

CorpusConfig small_config(uint64_t seed = 42) {
  CorpusConfig c;
  c.seed = seed;
  c.train_tokens = 20'000;
  c.val_tokens = 5'000;
  c.test_tokens = 10'000;
  return c;
}

const Corpus& small_corpus() {
  static const Corpus c = generate_corpus(lexicon(), small_config());
  return c;
}

std::string join(const Story& s) {
  std::string out;
  for (const auto& t : s.tokens) out += t + " ";
  return out;
}

// The tense of the time cue whose words start at tokens[i], if one does.
std::optional<Tense> cue_at(const Lexicon& lex, const std::vector<std::string>& tokens, size_t i) {
  for (const auto& c : lex.cues) {
    if (i + c.words.size() > tokens.size()) continue;
    if (std::equal(c.words.begin(), c.words.end(), tokens.begin() + static_cast<std::ptrdiff_t>(i))) return c.tense;
  }
  return std::nullopt;
}

bool lower_word(const std::string& w) {
  if (w.empty()) return false;
  for (char c : w)
    if (c < 'a' || c > 'z') return false;
  return true;
}

// A scratch copy of the lexicon directory that a test may break.
struct ScratchLexicon {
  fs::path dir;
  explicit ScratchLexicon(const std::string& tag) {
    dir = fs::path(mqtest::temp_path("mq_test", "mq_lex_" + tag + "_" + std::to_string(::getpid())));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(kLexDir)) fs::copy_file(e.path(), dir / e.path().filename());
  }
  ~ScratchLexicon() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) const { std::ofstream(dir / file) << text; }
  void append(const std::string& file, const std::string& text) const {
    std::ofstream(dir / file, std::ios::app) << text;
  }
  int lines(const std::string& file) const {
    std::ifstream in(dir / file);
    std::string s;
    int n = 0;
    while (std::getline(in, s)) ++n;
    return n;
  }
};

std::string load_error(const fs::path& dir) {
  try {
    Lexicon::load(dir.string());
  } catch (const mq::Error& e) {
    return e.what();
  }
  return "";
}

// A lexicon small enough to enumerate: two verbs, three nouns, one cue per position.
struct MicroLexicon : ScratchLexicon {
  MicroLexicon() : ScratchLexicon("micro") {
    for (const auto& e : fs::directory_iterator(dir)) fs::remove(e.path());
    write("nouns.tsv", "boy\tboys\thuman\ncat\tcats\tanimal\nbox\tboxes\tthing\n");
    write("verbs.tsv",
          "walk\twalks\twalked\twalked\twalking\treg\tanimate\t-\n"
          "see\tsees\tsaw\tseen\tseeing\tirr\tanimate\t@thing|@human\n");
    write("names.txt", "tom\n");
    write("pronouns.tsv", "he\thim\t3\tsg\nthey\tthem\t3\tpl\n");
    write("adjectives.tsv", "big\tthing\n");
    write("adverbs.txt", "again\n");
    write("time_cues.tsv",
          "present\tevery day\tfront,end\npresent\toften\tmid\npast\tyesterday\tfront,end\n"
          "future\tnext week\tfront,end\n");
  }
};

struct EnumResult {
  int64_t derivations = 0;
  int64_t ambiguous = 0;  // texts reached by more than one derivation
  double total_p = 0;
  double worst_logp_mismatch = 0;
  int64_t coordinated = 0, object_relative = 0;  // texts with "x and y", "the boy who the cat ..."
  std::array<int64_t, kNumConstructions> slots{};  // verb slots per construction over all derivations
};

EnumResult enumerate(const Lexicon& lex, const GrammarConfig& g, int64_t limit) {
  StoryGenerator gen(lex, g);
  mqtest::Enumerator en;
  EnumResult r;
  std::map<std::string, int> seen;
  do {
    en.rewind();
    const Story s = gen.generate(en);
    double lp = 0;
    for (double x : s.logp) lp += x;
    r.worst_logp_mismatch = std::max(r.worst_logp_mismatch, std::abs(lp - en.logq()));
    r.total_p += std::exp(lp);
    const std::string text = join(s);
    if (++seen[text] == 2) ++r.ambiguous;
    r.coordinated += text.find(" and ") != std::string::npos;
    for (const auto& sl : s.slots) ++r.slots[static_cast<size_t>(sl.kind)];
    r.object_relative += text.find(" who the ") != std::string::npos || text.find(" that the ") != std::string::npos;
    if (++r.derivations > limit) FAIL("more derivations than the test budget: shrink the configuration");
  } while (en.advance());
  return r;
}

}  // namespace

TEST_CASE("lexicon: counts and word forms") {
  const Lexicon& lex = lexicon();
  CHECK(lex.verbs.size() >= 300);
  CHECK(lex.irregular_count() >= 80);
  CHECK(lex.nouns.size() >= 100);
  for (const auto& v : lex.verbs) {
    for (const auto* f : {&v.base, &v.s3, &v.past, &v.participle, &v.ing}) CHECK_MESSAGE(lower_word(*f), v.base);
    CHECK_MESSAGE(v.ing.ends_with("ing"), v.base);
    CHECK_MESSAGE(v.s3.ends_with("s"), v.base);
    if (!v.irregular) CHECK_MESSAGE((v.past.ends_with("ed") && v.past == v.participle), v.base);
    CHECK(!v.frames.empty());
  }
  for (const auto& n : lex.nouns) {
    CHECK(lower_word(n.singular));
    CHECK(lower_word(n.plural));
    CHECK(n.singular != n.plural);
  }
  // Spot checks of spellings that are easy to get wrong.
  std::map<std::string, const Verb*> by;
  for (const auto& v : lex.verbs) by[v.base] = &v;
  REQUIRE(by.count("lie"));
  CHECK(by["lie"]->past == "lay");
  CHECK(by["lie"]->participle == "lain");
  CHECK(by["lie"]->ing == "lying");
  CHECK(by["stop"] == nullptr);  // not in the list: only verbs that are there are checked below
  CHECK(by["drop"]->ing == "dropping");
  CHECK(by["cry"]->s3 == "cries");
  CHECK(by["cut"]->past == "cut");
  CHECK(by["cut"]->ing == "cutting");
  CHECK(by["go"]->s3 == "goes");
}

TEST_CASE("lexicon: errors name the file and line") {
  SUBCASE("wrong column count") {
    ScratchLexicon s("cols");
    const int line = s.lines("verbs.tsv") + 1;
    s.append("verbs.tsv", "jump\tjumps\tjumped\n");
    const std::string msg = load_error(s.dir);
    CHECK(msg.find("verbs.tsv:" + std::to_string(line) + ":") != std::string::npos);
    CHECK(msg.find("expected 8 tab-separated column(s), found 3") != std::string::npos);
  }
  SUBCASE("unknown noun class in a frame") {
    ScratchLexicon s("class");
    const int line = s.lines("verbs.tsv") + 1;
    s.append("verbs.tsv", "zoom\tzooms\tzoomed\tzoomed\tzooming\treg\thuman\t@spaceship\n");
    const std::string msg = load_error(s.dir);
    CHECK(msg.find("verbs.tsv:" + std::to_string(line) + ":") != std::string::npos);
    CHECK(msg.find("unknown noun class '@spaceship'") != std::string::npos);
  }
  SUBCASE("upper case word") {
    ScratchLexicon s("upper");
    const int line = s.lines("nouns.tsv") + 1;
    s.append("nouns.tsv", "Robot\trobots\tthing\n");
    const std::string msg = load_error(s.dir);
    CHECK(msg.find("nouns.tsv:" + std::to_string(line) + ":") != std::string::npos);
    CHECK(msg.find("lower-case") != std::string::npos);
  }
  SUBCASE("invariant noun") {
    ScratchLexicon s("sheep");
    s.append("nouns.tsv", "sheep\tsheep\tanimal\n");
    CHECK(load_error(s.dir).find("same singular and plural") != std::string::npos);
  }
  SUBCASE("missing file") {
    ScratchLexicon s("missing");
    fs::remove(s.dir / "time_cues.tsv");
    const std::string msg = load_error(s.dir);
    CHECK(msg.find("cannot open lexicon file") != std::string::npos);
    CHECK(msg.find("time_cues.tsv") != std::string::npos);
  }
  SUBCASE("comments and blank lines are fine") {
    ScratchLexicon s("ok");
    s.append("names.txt", "\n# a comment\n");
    CHECK(load_error(s.dir).empty());
  }
}

TEST_CASE("corpus: same seed, same corpus; another seed, another corpus") {
  const Corpus& a = small_corpus();
  const Corpus b = generate_corpus(lexicon(), small_config(42));
  const Corpus c = generate_corpus(lexicon(), small_config(43));
  REQUIRE(a.test.size() == b.test.size());
  REQUIRE(a.train.size() == b.train.size());
  for (size_t i = 0; i < a.test.size(); ++i) {
    CHECK(a.test[i].tokens == b.test[i].tokens);
    CHECK(a.test[i].logp == b.test[i].logp);
  }
  for (size_t i = 0; i < a.train.size(); ++i) CHECK(a.train[i].tokens == b.train[i].tokens);
  int same = 0;
  for (size_t i = 0; i < std::min(a.test.size(), c.test.size()); ++i) same += a.test[i].tokens == c.test[i].tokens;
  CHECK(same < 5);
  // The first test story of seed 42 is pinned: a change of grammar or sampler shows up here.
  CHECK(join(a.test[0]) == "every morning , omar fights with the wolf . the clever doctors do not shiver . <sep> ");
}

TEST_CASE("corpus: split sizes and disjoint splits") {
  const Corpus& c = small_corpus();
  const CorpusConfig cfg = small_config();
  const std::pair<const std::vector<Story>*, int64_t> splits[] = {
      {&c.train, cfg.train_tokens}, {&c.val, cfg.val_tokens}, {&c.test, cfg.test_tokens}};
  for (const auto& [split, target] : splits) {
    const auto st = split_stats(*split);
    CHECK(st.tokens >= target);
    CHECK(st.tokens < target + 200);  // stops right after crossing the target
  }
  std::set<std::string> test, val;
  for (const auto& s : c.test) test.insert(join(s));
  for (const auto& s : c.val) {
    CHECK(!test.count(join(s)));
    val.insert(join(s));
  }
  for (const auto& s : c.train) {
    CHECK(!test.count(join(s)));
    CHECK(!val.count(join(s)));
  }
}

TEST_CASE("corpus: duplicates of earlier splits are redrawn") {
  // A one-verb, one-noun grammar repeats itself a lot, so the redraw path really runs.
  MicroLexicon m;
  const Lexicon lex = Lexicon::load(m.dir.string());
  CorpusConfig cfg;
  cfg.train_tokens = 3000, cfg.val_tokens = 1000, cfg.test_tokens = 2000;
  cfg.grammar.min_sentences = cfg.grammar.max_sentences = 1;
  cfg.grammar.p_modifier = 0;
  const Corpus c = generate_corpus(lex, cfg);
  CHECK(c.redrawn_train > 0);
  std::set<std::string> earlier;
  for (const auto& s : c.test) earlier.insert(join(s));
  for (const auto& s : c.val) CHECK(!earlier.count(join(s)));
  for (const auto& s : c.val) earlier.insert(join(s));
  for (const auto& s : c.train) CHECK(!earlier.count(join(s)));
}

TEST_CASE("corpus: tokens, log-probs and separators") {
  for (const auto* split : {&small_corpus().train, &small_corpus().test}) {
    for (const auto& s : *split) {
      REQUIRE(s.tokens.size() == s.logp.size());
      REQUIRE(!s.tokens.empty());
      CHECK(s.tokens.back() == kSeparator);
      for (size_t i = 0; i + 1 < s.tokens.size(); ++i) {
        const auto& t = s.tokens[i];
        CHECK((lower_word(t) || t == "," || t == "." || t == "?"));
      }
      for (double lp : s.logp) {
        CHECK(std::isfinite(lp));
        CHECK(lp <= 0.0);
      }
      // Ending is a choice between min_sentences and max_sentences, forced (log 1 = 0) at the maximum.
      const auto sentences = std::count_if(s.tokens.begin(), s.tokens.end(), [](const std::string& t) {
        return t == "." || t == "?";
      });
      const GrammarConfig g;
      CHECK(sentences >= g.min_sentences);
      CHECK(sentences <= g.max_sentences);
      if (sentences < g.max_sentences) CHECK(s.logp.back() < 0.0);
      else CHECK(s.logp.back() == 0.0);
    }
  }
}

TEST_CASE("corpus: every slot's truth is written and decided by what precedes it") {
  const Lexicon& lex = lexicon();
  std::set<std::string> sg, pl;
  for (const auto& n : lex.nouns) sg.insert(n.singular), pl.insert(n.plural);
  std::array<int64_t, kNumConstructions> counts{};
  for (const auto& s : small_corpus().test) {
    // The story's tense is named by the cue of its first sentence.
    std::optional<Tense> story_tense;
    for (size_t i = 0; i < s.tokens.size() && s.tokens[i] != "." && s.tokens[i] != "?"; ++i)
      if (auto t = cue_at(lex, s.tokens, i)) story_tense = t;
    REQUIRE(story_tense.has_value());
    for (const auto& sl : s.slots) {
      ++counts[static_cast<size_t>(sl.kind)];
      REQUIRE(sl.sent_begin <= sl.pos);
      REQUIRE(sl.pos < sl.sent_end);
      REQUIRE(sl.sent_end < static_cast<int32_t>(s.tokens.size()));
      CHECK((s.tokens[sl.sent_end - 1] == "." || s.tokens[sl.sent_end - 1] == "?"));
      REQUIRE(sl.correct < 3);
      CHECK(s.tokens[sl.pos] == sl.forms[sl.correct]);
      CHECK(sl.forms[0] != sl.forms[1]);
      CHECK(sl.forms[0] != sl.forms[2]);
      CHECK(sl.forms[1] != sl.forms[2]);
      CHECK(*story_tense != Tense::future);
      CHECK((sl.correct == 2) == (*story_tense == Tense::past));
      bool cue_before = false, cue_in_sentence = false, has_sg = false, has_pl = false;
      for (int32_t i = sl.sent_begin; i < sl.sent_end; ++i) {
        const bool cue = cue_at(lex, s.tokens, static_cast<size_t>(i)).has_value();
        cue_in_sentence |= cue;
        if (i < sl.pos) {
          cue_before |= cue;
          has_sg |= sg.count(s.tokens[i]) > 0;
          has_pl |= pl.count(s.tokens[i]) > 0;
        }
      }
      switch (sl.kind) {
        case Construction::agreement:
          CHECK(cue_before);
          CHECK(sl.correct != 2);
          break;
        case Construction::attractor:
          CHECK(cue_before);
          CHECK(sl.correct != 2);
          CHECK((has_sg && has_pl));  // head and attractor differ in number
          break;
        case Construction::local_time_cue:
          CHECK(cue_before);
          CHECK(sl.correct == 2);
          break;
        case Construction::long_range:
          CHECK(!cue_in_sentence);
          CHECK(sl.sent_begin > 0);
          break;
        case Construction::coordination:
          // "x and y __": always the plural form, with "and" two or more tokens before the blank.
          CHECK(sl.correct == 0);
          CHECK(std::find(s.tokens.begin() + sl.sent_begin, s.tokens.begin() + sl.pos, "and") <
                s.tokens.begin() + sl.pos - 1);
          break;
        case Construction::object_relative:
        case Construction::relative_inner: {
          CHECK(sl.correct != 2);
          CHECK((cue_before || (!cue_in_sentence && sl.sent_begin > 0)));
          // A relative pronoun stands before the blank, and a noun phrase (not a verb) right after it.
          // (the last one: a fronted clause may hold a subject relative, "when the man who eats ...").
          auto rel = s.tokens.begin() + sl.pos;
          while (rel > s.tokens.begin() + sl.sent_begin && *rel != "who" && *rel != "that") --rel;
          REQUIRE((*rel == "who" || *rel == "that"));
          const std::string& after = *(rel + 1);
          CHECK((after == "the" || after == "a" || after == "an" || after == "some"));
          break;
        }
      }
    }
  }
  // 10k tokens: every category present, long_range the most common.
  for (int64_t n : counts) CHECK(n >= 10);
  CHECK(counts[3] > counts[0]);
  CHECK(counts[static_cast<size_t>(Construction::object_relative)] ==
        doctest::Approx(counts[static_cast<size_t>(Construction::relative_inner)]).epsilon(0.5));
}

TEST_CASE("probabilities: exhaustive enumeration sums to one, with no ambiguous text") {
  MicroLexicon m;
  const Lexicon lex = Lexicon::load(m.dir.string());
  GrammarConfig g;
  bool modifiers = false;
  SUBCASE("one sentence, subject modifiers, no subordinate clauses") {
    modifiers = true;
    g.min_sentences = g.max_sentences = 1;
    g.p_fronted_sub = 0, g.p_because = 0;
    g.p_article_a = 0;
  }
  SUBCASE("one sentence, subordinate clauses, no modifiers") {
    g.min_sentences = g.max_sentences = 1;
    g.p_modifier = 0;
    g.p_article_a = 0, g.p_some = 0, g.p_adjective = 0, g.p_adverb = 0, g.p_subj_name = 0;
  }
  SUBCASE("one sentence, nested modifiers (a modifier's noun takes its own)") {
    modifiers = true;
    g.min_sentences = g.max_sentences = 1;
    g.p_fronted_sub = 0, g.p_because = 0, g.p_question = 0, g.p_coordination = 0.5;
    g.p_article_a = 0, g.p_some = 0, g.p_adjective = 0, g.p_adverb = 0;
    g.p_subj_pronoun = 0, g.p_subj_name = 0, g.p_obj_pronoun = 0, g.p_obj_name = 0;
    g.p_nested_modifier = 0.5, g.max_nesting = 1;
  }
  SUBCASE("two sentences: continuation and stop choices") {
    g.min_sentences = 1, g.max_sentences = 2;
    g.p_modifier = 0, g.p_fronted_sub = 0, g.p_because = 0;
    g.p_article_a = 0, g.p_some = 0, g.p_adjective = 0, g.p_adverb = 0;
    g.p_subj_pronoun = 0, g.p_subj_name = 0, g.p_obj_pronoun = 0, g.p_obj_name = 0;
  }
  const EnumResult r = enumerate(lex, g, 2'000'000);
  MESSAGE("derivations: " << r.derivations << ", coordinated " << r.coordinated << ", object relative "
                          << r.object_relative);
  CHECK(r.coordinated > 0);  // every subcase's grammar coordinates subjects
  CHECK((r.object_relative > 0) == modifiers);
  // Each hard construction yields its verb slot in the grammars that can write it, every one of them
  // under the exact log-probability checked above.
  CHECK(r.slots[static_cast<size_t>(Construction::coordination)] > 0);
  CHECK((r.slots[static_cast<size_t>(Construction::object_relative)] > 0) == modifiers);
  CHECK((r.slots[static_cast<size_t>(Construction::relative_inner)] > 0) == modifiers);
  CHECK(r.derivations > 100);
  CHECK(r.ambiguous == 0);
  CHECK(r.total_p == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(r.worst_logp_mismatch < 1e-9);
}

TEST_CASE("split_stats: floor is exp of the mean negative log-prob") {
  Story a, b;
  a.tokens = {"x", "y", kSeparator};
  a.logp = {std::log(0.5), 0.0, std::log(0.25)};
  b.tokens = {"z", kSeparator};
  b.logp = {std::log(0.125), 0.0};
  b.slots.push_back(VerbSlot{0, 0, 1, {"a", "b", "c"}, 0, Construction::attractor});
  const SplitStats st = split_stats({a, b});
  CHECK(st.stories == 2);
  CHECK(st.tokens == 5);
  CHECK(st.nll_sum == doctest::Approx(6 * std::log(2.0)));  // 1 + 2 + 3 bits
  CHECK(st.bits_per_token == doctest::Approx(6.0 / 5));
  CHECK(st.floor_ppl == doctest::Approx(std::pow(2.0, 6.0 / 5)));
  CHECK(st.slots[static_cast<size_t>(Construction::attractor)] == 1);
}

TEST_CASE("story hash tells token boundaries apart") {
  Story a, b;
  a.tokens = {"ab", "c"};
  b.tokens = {"a", "bc"};
  CHECK(story_hash(a) != story_hash(b));
  b.tokens = {"ab", "c"};
  CHECK(story_hash(a) == story_hash(b));
}

TEST_CASE("real lexicon: sampled stories have exactly one derivation") {
  // The micro-lexicon enumeration checks the grammar's mechanics; this checks the full word lists:
  // search every choice sequence that writes a sampled story, and expect to find only its own.
  const StoryGenerator gen(lexicon(), GrammarConfig{});
  const auto& test = small_corpus().test;
  for (size_t i = 0; i < 8 && i < test.size(); ++i) {
    const Story& s = test[i];
    const auto d = mqtest::derivations_of(gen, s.tokens);
    double lp = 0;
    for (double x : s.logp) lp += x;
    CHECK(d.count == 1);
    CHECK(std::log(d.total_p) == doctest::Approx(lp).epsilon(1e-12));
  }
}

TEST_CASE("real lexicon, nested modifiers: sampled stories have exactly one derivation") {
  // "the dog near the boys who feed the cats": a noun inside a modifier with a modifier of its own must
  // still attach one way only, or the floor of a nested corpus would be an upper bound.
  GrammarConfig g;
  g.p_nested_modifier = 0.5;
  // Sentences with two or more modifier words: clauses each take one, so the grammar without nesting
  // writes some too, but far fewer.
  auto crowded = [](const Story& s) {
    int words = 0, n = 0;
    for (const auto& t : s.tokens) {
      if (t == "." || t == "?") n += std::exchange(words, 0) > 1;
      words += t == "who" || t == "that" || t == "near" || t == "behind" || t == "beside";
    }
    return n;
  };
  const StoryGenerator gen(lexicon(), g), flat(lexicon(), GrammarConfig{});
  RandomChooser ch(42), ch_flat(42);
  int crowded_nested = 0, crowded_flat = 0;
  for (int i = 0; i < 40; ++i) {
    const Story s = gen.generate(ch);
    crowded_nested += crowded(s);
    crowded_flat += crowded(flat.generate(ch_flat));
    const auto d = mqtest::derivations_of(gen, s.tokens);
    double lp = 0;
    for (double x : s.logp) lp += x;
    CHECK(d.count == 1);
    CHECK(std::log(d.total_p) == doctest::Approx(lp).epsilon(1e-12));
  }
  MESSAGE("sentences with two or more modifier words: nested " << crowded_nested << ", flat " << crowded_flat);
  CHECK(crowded_nested >= crowded_flat + 5);
}

TEST_CASE("grammar: bad configurations are usage errors") {
  GrammarConfig g;
  g.p_question = 1.5;
  CHECK_THROWS_AS(StoryGenerator(lexicon(), g), mq::UsageError);
  g = GrammarConfig{};
  g.p_question = 0.6, g.p_fronted_sub = 0.6;
  CHECK_THROWS_AS(StoryGenerator(lexicon(), g), mq::UsageError);
  g = GrammarConfig{};
  g.min_sentences = 3, g.max_sentences = 2;
  CHECK_THROWS_AS(StoryGenerator(lexicon(), g), mq::UsageError);
  g = GrammarConfig{};
  g.p_nested_modifier = 1.5;
  CHECK_THROWS_AS(StoryGenerator(lexicon(), g), mq::UsageError);
  g = GrammarConfig{};
  g.max_nesting = -1;
  CHECK_THROWS_AS(StoryGenerator(lexicon(), g), mq::UsageError);
  CHECK_NOTHROW(StoryGenerator(lexicon(), GrammarConfig{}));
}
