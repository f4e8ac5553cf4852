// The three rule baselines: word classes from the lexicon, tense and number read off the text before
// the blank, and a bigram counted on the train split.
#include "minigpt/baselines.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

namespace minigpt {
namespace {

enum class Number : uint8_t { sg1, sg3, pl };

// What the rules know about words: the number of every noun, name and pronoun, the tense an
// unambiguous finite form shows, and the time cues.
struct WordClasses {
  std::unordered_map<std::string, Number> number;
  std::unordered_map<std::string, Tense> tense_form;
  const std::vector<TimeCue>* cues = nullptr;

  explicit WordClasses(const Lexicon& lex) : cues(&lex.cues) {
    for (const auto& n : lex.nouns) number[n.singular] = Number::sg3, number[n.plural] = Number::pl;
    for (const auto& name : lex.names) number[name] = Number::sg3;
    for (const auto& p : lex.pronouns) {
      const Number k = p.plural ? Number::pl : p.person == 1 ? Number::sg1 : Number::sg3;
      number[p.subject] = k;
      number[p.object] = k;
    }
    // A form is unambiguous when no verb writes the same word in another role: "ate" is only a
    // past, "walked" is also a participle ("has walked"), "put" also a base.
    std::unordered_map<std::string, std::set<int>> roles;  // 0 base, 1 s3, 2 past, 3 participle, 4 ing
    for (const auto& v : lex.verbs) {
      const std::string* f[] = {&v.base, &v.s3, &v.past, &v.participle, &v.ing};
      for (int r = 0; r < 5; ++r) roles[*f[r]].insert(r);
    }
    for (const auto& [w, r] : roles) {
      if (r == std::set<int>{1}) tense_form[w] = Tense::present;
      if (r == std::set<int>{2}) tense_form[w] = Tense::past;
    }
    for (const char* w : {"is", "are", "am", "has", "does", "do"}) tense_form[w] = Tense::present;
    for (const char* w : {"was", "were", "had", "did"}) tense_form[w] = Tense::past;
    tense_form["will"] = Tense::future;
  }

  // The tense of a time cue whose last word is tokens[i], if one ends there.
  std::optional<Tense> cue_ending_at(const std::vector<std::string>& tokens, int32_t i) const {
    for (const auto& c : *cues) {
      const auto n = static_cast<int32_t>(c.words.size());
      if (n == 0 || i + 1 < n) continue;
      if (std::equal(c.words.begin(), c.words.end(), tokens.begin() + (i + 1 - n))) return c.tense;
    }
    return std::nullopt;
  }

  // Nearest evidence before `pos`: a time cue or an unambiguous finite form, anywhere earlier in the story.
  std::optional<Tense> tense_before(const std::vector<std::string>& tokens, int32_t pos) const {
    for (int32_t i = pos - 1; i >= 0; --i) {
      if (auto t = cue_ending_at(tokens, i)) return t;
      if (auto it = tense_form.find(tokens[static_cast<size_t>(i)]); it != tense_form.end()) return it->second;
    }
    return std::nullopt;
  }

  std::optional<Number> number_of(const std::string& w) const {
    auto it = number.find(w);
    if (it == number.end()) return std::nullopt;
    return it->second;
  }
};

bool clause_boundary(std::string_view w) {
  return w == "," || w == "when" || w == "after" || w == "before" || w == "because";
}

// The form index a tense and number call for: past, else 3rd singular or base.
int form_for(std::optional<Tense> t, std::optional<Number> n) {
  if (t == Tense::past) return 2;
  return n == Number::sg3 ? 1 : 0;
}

int two_line_rule(const WordClasses& w, const Story& st, const VerbSlot& sl) {
  const auto t = w.tense_before(st.tokens, sl.pos);
  int32_t from = sl.sent_begin;
  for (int32_t i = sl.sent_begin; i < sl.pos; ++i)
    if (clause_boundary(st.tokens[static_cast<size_t>(i)])) from = i + 1;
  std::optional<Number> n;
  for (int32_t i = from; i < sl.pos && !n; ++i) n = w.number_of(st.tokens[static_cast<size_t>(i)]);
  return form_for(t, n);
}

int nearest_noun(const WordClasses& w, const Story& st, const VerbSlot& sl) {
  const auto t = w.tense_before(st.tokens, sl.pos);
  std::optional<Number> n;
  for (int32_t i = sl.pos - 1; i >= sl.sent_begin && !n; --i) n = w.number_of(st.tokens[static_cast<size_t>(i)]);
  return form_for(t, n);
}

// Add-one-smoothed bigram over the train split's token stream (stories joined, each ending in <sep>,
// the first preceded by one, as the model reads them).
class Bigram {
 public:
  explicit Bigram(const std::vector<Story>& train) {
    int32_t prev = id_of(kSeparator);
    for (const Story& s : train)
      for (const auto& t : s.tokens) {
        const int32_t cur = id_of(t);
        ++pair_[key(prev, cur)];
        ++first_[prev];
        prev = cur;
      }
  }
  // log p(b | a), with unseen words as their own (never counted) ids.
  double logp(const std::string& a, const std::string& b) const {
    const int32_t ia = find(a), ib = find(b);
    const auto pc = pair_.find(key(ia, ib));
    const auto fc = first_.find(ia);
    const double num = 1.0 + (pc == pair_.end() ? 0.0 : static_cast<double>(pc->second));
    const double den = static_cast<double>(ids_.size() + 1) + (fc == first_.end() ? 0.0 : static_cast<double>(fc->second));
    return std::log(num / den);
  }

 private:
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<uint64_t, int64_t> pair_;
  std::unordered_map<int32_t, int64_t> first_;

  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  int32_t id_of(const std::string& w) { return ids_.try_emplace(w, static_cast<int32_t>(ids_.size())).first->second; }
  int32_t find(const std::string& w) const {
    auto it = ids_.find(w);
    return it == ids_.end() ? -1 : it->second;
  }
};

// A slot at a story's first token follows the previous story's <sep>, as in the train stream.
int bigram_pick(const Bigram& bg, const Story& st, const VerbSlot& sl) {
  static const std::string kSep = kSeparator;
  const std::string& prev = sl.pos > 0 ? st.tokens[static_cast<size_t>(sl.pos - 1)] : kSep;
  const std::string& next = st.tokens[static_cast<size_t>(sl.pos + 1)];  // a slot never ends its story
  int best = 0;
  double best_score = -INFINITY;
  for (int c = 0; c < 3; ++c) {
    const std::string& f = sl.forms[static_cast<size_t>(c)];
    const double s = bg.logp(prev, f) + bg.logp(f, next);
    if (s > best_score) best = c, best_score = s;
  }
  return best;
}

}  // namespace

std::vector<BaselineScore> rule_baselines(const Lexicon& lex, const std::vector<Story>& train,
                                          const std::vector<Story>& test, int64_t max_slots) {
  const WordClasses words(lex);
  const Bigram bigram(train);
  std::vector<BaselineScore> out(3);
  out[0].name = "two_line_rule";
  out[0].rule = "tense from the nearest earlier time cue or unambiguous verb form; number from the first noun or "
                "pronoun after the clause boundary";
  out[1].name = "nearest_noun";
  out[1].rule = "the same tense; number from the nearest noun or pronoun before the blank";
  out[2].name = "bigram";
  out[2].rule = "add-one word bigram on the train split: the form with the likelier previous -> form -> next words";
  int64_t n = 0;
  for (const Story& st : test) {
    for (const VerbSlot& sl : st.slots) {
      if (max_slots > 0 && n >= max_slots) return out;
      ++n;
      const int pick[3] = {two_line_rule(words, st, sl), nearest_noun(words, st, sl), bigram_pick(bigram, st, sl)};
      for (int b = 0; b < 3; ++b) {
        const int ok = pick[b] == sl.correct ? 1 : 0;
        ConstructionScore& k = out[static_cast<size_t>(b)].by_kind[static_cast<size_t>(sl.kind)];
        ++k.total, k.correct += ok;
        ++out[static_cast<size_t>(b)].overall.total, out[static_cast<size_t>(b)].overall.correct += ok;
      }
    }
  }
  return out;
}

}  // namespace minigpt
