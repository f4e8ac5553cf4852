// The generalization benchmark's generator: one builder per item writes a sentence (or, for long_story, a
// whole story through the corpus grammar with more sentences than training ever has) and marks its slot.
#include "minigpt/corpus/generalization.h"

#include <string_view>
#include <unordered_set>

#include <fmt/core.h>

#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/story.h"
#include "miniquant/error.h"

namespace minigpt {

const char* paradigm_name(Paradigm p) {
  switch (p) {
    case Paradigm::two_pp: return "two_pp";
    case Paradigm::four_pp: return "four_pp";
    case Paradigm::pp_relative: return "pp_relative";
    case Paradigm::pp_orel: return "pp_orel";
    case Paradigm::orel_pp: return "orel_pp";
    case Paradigm::orel_relative: return "orel_relative";
    case Paradigm::centre_main: return "centre_main";
    case Paradigm::unseen_pairing: return "unseen_pairing";
    case Paradigm::unseen_two_pp: return "unseen_two_pp";
    case Paradigm::long_story: return "long_story";
    case Paradigm::far_past_cue: return "far_past_cue";
    case Paradigm::centre_middle: return "centre_middle";
    case Paradigm::inner_pp: return "inner_pp";
    case Paradigm::coordination_pp: return "coordination_pp";
  }
  return "?";
}

const char* paradigm_description(Paradigm p) {
  switch (p) {
    case Paradigm::two_pp: return "the head across two prepositional attractors of the other number";
    case Paradigm::four_pp: return "the head across four prepositional attractors (a subject longer than training's)";
    case Paradigm::pp_relative: return "the head across an attractor that carries a subject relative";
    case Paradigm::pp_orel: return "the head across an attractor that carries an object relative";
    case Paradigm::orel_pp: return "the head across an object relative whose subject has a modifier";
    case Paradigm::orel_relative: return "the head across an object relative whose subject has a relative";
    case Paradigm::centre_main: return "the main verb after two levels of object relatives";
    case Paradigm::unseen_pairing: return "a verb never seen with the subject's class, across one attractor";
    case Paradigm::unseen_two_pp: return "a verb never seen with the subject's class, across two attractors";
    case Paradigm::long_story: return "the story's tense after the seventh sentence, set only by the first";
    case Paradigm::far_past_cue: return "the past tense from a front cue across three prepositional phrases";
    case Paradigm::centre_middle: return "diagnostic: the middle verb of two levels of object relatives";
    case Paradigm::inner_pp: return "diagnostic: a relative's verb across a modifier on the relative's subject";
    case Paradigm::coordination_pp: return "diagnostic: a modified coordination of singulars takes the plural";
  }
  return "?";
}

bool paradigm_scored(Paradigm p) {
  return p != Paradigm::centre_middle && p != Paradigm::inner_pp && p != Paradigm::coordination_pp;
}

namespace {

constexpr const char* kBenchPreps[] = {"near", "with", "behind", "beside"};

// Two numbers of a subject: the verb forms agree with `plural`.
struct Head {
  int cls = 0;
  bool plural = false;
};

class ItemBuilder {
 public:
  ItemBuilder(const Lexicon& lex, RandomChooser& rng) : L_(lex), rng_(rng) {
    human_ = lex.class_id("human");
    animal_ = lex.class_id("animal");
    if (human_ < 0 || animal_ < 0) throw mq::Error("benchmark: the lexicon needs nouns of class 'human' and 'animal'");
    nouns_of_.resize(lex.noun_classes.size());
    adjs_of_.resize(lex.noun_classes.size());
    for (size_t i = 0; i < lex.nouns.size(); ++i) nouns_of_[static_cast<size_t>(lex.nouns[i].cls)].push_back(static_cast<int>(i));
    for (size_t i = 0; i < lex.adjectives.size(); ++i)
      for (int c : lex.adjectives[i].classes) adjs_of_[static_cast<size_t>(c)].push_back(static_cast<int>(i));
    for (const char* name : {"human", "animal", "thing", "furniture"})
      if (const int c = lex.class_id(name); c >= 0 && !nouns_of_[static_cast<size_t>(c)].empty()) attractor_classes_.push_back(c);
    for (size_t i = 0; i < lex.verbs.size(); ++i) {
      const Verb& v = lex.verbs[i];
      if (v.base == v.s3 || v.base == v.past || v.s3 == v.past) continue;  // put / puts / put: no three-way choice
      for (int h = 0; h < 2; ++h) {
        const bool fits = v.subject == SubjectClass::animate || (h == 0) == (v.subject == SubjectClass::human);
        if (fits) verbs_for_[h].push_back(static_cast<int>(i));
        else foreign_for_[h].push_back(static_cast<int>(i));  // a class the training text never pairs it with
        if (!fits) continue;
        for (const Frame& f : v.frames)
          if (f.size() == 1 && f[0].is_np && (f[0].cls == human_ || f[0].cls == animal_))
            orel_for_[f[0].cls == human_ ? 0 : 1][h].push_back(static_cast<int>(i));
      }
    }
    for (size_t i = 0; i < lex.cues.size(); ++i) {
      const TimeCue& c = lex.cues[i];
      if (c.front && c.tense == Tense::present) present_front_.push_back(static_cast<int>(i));
      if (c.front && c.tense == Tense::past) past_front_.push_back(static_cast<int>(i));
    }
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        if (verbs_for_[a].empty() || foreign_for_[a].empty() || orel_for_[a][b].empty())
          throw mq::Error("benchmark: the lexicon lacks verbs for a paradigm (human/animal subjects and objects)");
    if (present_front_.empty() || past_front_.empty() || attractor_classes_.empty())
      throw mq::Error("benchmark: the lexicon needs present and past front cues and attractor nouns");
  }

  // One item of paradigm p (not long_story, which the grammar writes).
  BenchmarkItem build(Paradigm p) {
    t_.clear();
    BenchmarkItem it;
    it.paradigm = p;
    cue(p == Paradigm::far_past_cue ? past_front_ : present_front_);
    emit(",");
    const int32_t begin = 0;
    switch (p) {
      case Paradigm::two_pp:
      case Paradigm::four_pp:
      case Paradigm::far_past_cue: {
        const Head h = subject_np();
        const int n = p == Paradigm::two_pp ? 2 : p == Paradigm::four_pp ? 4 : 3;
        // In the past the numbers decide nothing; they are drawn as attractors all the same.
        for (int k = 0; k < n; ++k) pp(!h.plural);
        slot_verb(it, h, verbs_for(h), p == Paradigm::far_past_cue);
        break;
      }
      case Paradigm::pp_relative:
      case Paradigm::pp_orel: {
        const Head h = subject_np();
        emit(kBenchPreps[uniform(4)]);
        // The attractor is a human or animal noun, so a relative clause can hang on it.
        const Head a{any_subject_class(), !h.plural};
        np(a.cls, a.plural);
        emit(rel_pronoun(a));
        if (p == Paradigm::pp_relative) {
          const Verb& rv = L_.verbs[static_cast<size_t>(pick(orel_for_[any_subject_index()][index(a)]))];
          finite_present(rv, a.plural);
          object_of(rv, !h.plural);
        } else {
          // "the dog near the boys that the girls feed": whichever noun the relative hangs on, the head decides.
          const Head inner{any_subject_class(), !h.plural};
          np(inner.cls, inner.plural);
          finite_present(L_.verbs[static_cast<size_t>(pick(orel_for_[index(a)][index(inner)]))], inner.plural);
        }
        slot_verb(it, h, verbs_for(h), false);
        break;
      }
      case Paradigm::orel_pp:
      case Paradigm::orel_relative:
      case Paradigm::centre_main:
      case Paradigm::centre_middle:
      case Paradigm::inner_pp: {
        // head that inner [modifier] ... : every noun before the deciding verb has the other number of
        // the word that decides it.
        const Head h = subject_np();
        emit(rel_pronoun(h));
        const Head inner{any_subject_class(), !h.plural};
        np(inner.cls, inner.plural);
        const Verb& gap_verb = L_.verbs[static_cast<size_t>(pick(orel_for_[index(h)][index(inner)]))];  // object: the head
        if (p == Paradigm::inner_pp) {
          pp(!inner.plural);
          mark(it, gap_verb, inner, false);
          main_tail(h);
          break;
        }
        if (p == Paradigm::orel_pp) {
          pp(!h.plural);
        } else if (p == Paradigm::orel_relative) {
          emit(rel_pronoun(inner));
          const Verb& rv = L_.verbs[static_cast<size_t>(pick(orel_for_[any_subject_index()][index(inner)]))];
          finite_present(rv, inner.plural);
          object_of(rv, !h.plural);
        } else {
          // centre_main: the innermost subject has the head's other number; centre_middle: the middle
          // verb's subject's other number.
          emit(rel_pronoun(inner));
          const Head deep{any_subject_class(), p == Paradigm::centre_main ? !h.plural : !inner.plural};
          np(deep.cls, deep.plural);
          finite_present(L_.verbs[static_cast<size_t>(pick(orel_for_[index(inner)][index(deep)]))], deep.plural);
          if (p == Paradigm::centre_middle) {
            mark(it, gap_verb, inner, false);
            main_tail(h);
            break;
          }
        }
        finite_present(gap_verb, inner.plural);
        slot_verb(it, h, verbs_for(h), false);
        break;
      }
      case Paradigm::coordination_pp: {
        const int c = any_subject_class();
        for (int k = 0; k < 2; ++k) {
          if (k == 1) emit("and");
          if (c == human_ && !L_.names.empty() && coin()) emit(L_.names[static_cast<size_t>(uniform(L_.names.size()))]);
          else np(c, false);
        }
        pp(false);
        slot_verb(it, Head{c, true}, verbs_for(Head{c, true}), false);
        break;
      }
      case Paradigm::unseen_pairing:
      case Paradigm::unseen_two_pp: {
        const Head h = subject_np();
        pp(!h.plural);
        if (p == Paradigm::unseen_two_pp) pp(!h.plural);
        slot_verb(it, h, foreign_for_[index(h)], false);
        break;
      }
      case Paradigm::long_story: throw mq::Error("benchmark: long_story items come from the story grammar");
    }
    emit(".");
    it.tokens = std::move(t_);
    it.sent_begin = begin;
    it.sent_end = static_cast<int32_t>(it.tokens.size());
    return it;
  }

 private:
  const Lexicon& L_;
  RandomChooser& rng_;
  int human_ = -1, animal_ = -1;
  std::vector<std::vector<int>> nouns_of_, adjs_of_;
  std::vector<int> attractor_classes_, present_front_, past_front_;
  std::vector<int> verbs_for_[2], foreign_for_[2];  // [0] human subjects, [1] animal subjects
  std::vector<int> orel_for_[2][2];                // [object class][subject class]: one-noun-phrase frames
  std::vector<std::string> t_;

  int uniform(size_t n) { return rng_.pick_uniform(static_cast<int>(n)); }
  bool coin(double p = 0.5) { return rng_.uniform01() < p; }
  int pick(const std::vector<int>& v) { return v[static_cast<size_t>(uniform(v.size()))]; }
  void emit(std::string_view w) { t_.emplace_back(w); }
  void cue(const std::vector<int>& list) {
    for (const auto& w : L_.cues[static_cast<size_t>(pick(list))].words) emit(w);
  }

  // determiner [adjective] noun, as the corpus writes them.
  void np(int cls, bool plural) {
    const bool indefinite = coin(plural ? 0.3 : 0.4);
    const size_t det = t_.size();
    emit(indefinite ? (plural ? "some" : "a") : "the");
    const auto& adjs = adjs_of_[static_cast<size_t>(cls)];
    if (!adjs.empty() && coin(0.25)) emit(L_.adjectives[static_cast<size_t>(pick(adjs))].word);
    const Noun& n = L_.nouns[static_cast<size_t>(pick(nouns_of_[static_cast<size_t>(cls)]))];
    emit(plural ? n.plural : n.singular);
    if (t_[det] == "a" && std::string_view("aeiou").find(t_[det + 1][0]) != std::string_view::npos) t_[det] = "an";
  }
  int any_subject_class() { return coin() ? human_ : animal_; }
  int any_subject_index() { return coin() ? 0 : 1; }
  int index(const Head& h) const { return h.cls == human_ ? 0 : 1; }
  const std::vector<int>& verbs_for(const Head& h) const { return verbs_for_[index(h)]; }
  const char* rel_pronoun(const Head& h) const { return h.cls == human_ ? "who" : "that"; }
  Head subject_np() {
    const Head h{any_subject_class(), coin()};
    np(h.cls, h.plural);
    return h;
  }
  void pp(bool plural) {
    emit(kBenchPreps[uniform(4)]);
    np(attractor_classes_[static_cast<size_t>(uniform(attractor_classes_.size()))], plural);
  }
  void finite_present(const Verb& v, bool plural) { emit(plural ? v.base : v.s3); }
  // A one-noun-phrase frame's object (the verbs of orel_for_ have one).
  void object_of(const Verb& v, bool plural) {
    for (const Frame& f : v.frames)
      if (f.size() == 1 && f[0].is_np) return np(f[0].cls, plural);
  }
  void complement(const Verb& v) {
    const Frame& f = v.frames[static_cast<size_t>(uniform(v.frames.size()))];
    if (f.empty()) {
      if (!L_.adverbs.empty() && coin(0.3)) emit(L_.adverbs[static_cast<size_t>(uniform(L_.adverbs.size()))]);
      return;
    }
    for (const auto& x : f) {
      if (!x.is_np) emit(x.word);
      else if (x.cls == human_ && !L_.names.empty() && coin(0.2)) emit(L_.names[static_cast<size_t>(uniform(L_.names.size()))]);
      else np(x.cls, coin());
    }
  }
  // The slot: a verb from `verbs` in the form the head (or, in the past, the cue) asks for.
  void mark(BenchmarkItem& it, const Verb& v, const Head& h, bool past) {
    it.forms = {v.base, v.s3, v.past};
    it.correct = past ? 2 : h.plural ? 0 : 1;
    it.pos = static_cast<int32_t>(t_.size());
    emit(it.forms[it.correct]);
  }
  void slot_verb(BenchmarkItem& it, const Head& h, const std::vector<int>& verbs, bool past) {
    const Verb& v = L_.verbs[static_cast<size_t>(pick(verbs))];
    mark(it, v, h, past);
    complement(v);
  }
  // The main verb after a relative whose verb was the slot: agrees with the head.
  void main_tail(const Head& h) {
    const Verb& v = L_.verbs[static_cast<size_t>(pick(verbs_for(h)))];
    finite_present(v, h.plural);
    complement(v);
  }
};

// long_story: the corpus grammar with 8 to 12 sentences (training's stories have 2 to 6) and no cue after the
// first, so the story's tense is set only there; the item is the last long_range slot after the seventh sentence.
bool long_story_item(const StoryGenerator& gen, RandomChooser& rng, int max_tokens, BenchmarkItem& out) {
  const Story st = gen.generate(rng);
  int sentence = 0;
  int32_t begin = 0;
  std::vector<int32_t> sent_start;  // first token of each sentence, in order
  for (size_t t = 0; t < st.tokens.size(); ++t) {
    if (t == 0 || st.tokens[t - 1] == "." || st.tokens[t - 1] == "?") sent_start.push_back(static_cast<int32_t>(t));
  }
  const VerbSlot* best = nullptr;
  for (const VerbSlot& s : st.slots) {
    if (s.kind != Construction::long_range || s.sent_end > max_tokens) continue;
    sentence = 0;
    for (int32_t b : sent_start) sentence += b <= s.sent_begin ? 1 : 0;
    if (sentence >= 8) {
      best = &s;
      begin = s.sent_begin;
    }
  }
  if (!best) return false;
  out.paradigm = Paradigm::long_story;
  out.tokens.assign(st.tokens.begin(), st.tokens.begin() + best->sent_end);
  out.pos = best->pos;
  out.sent_begin = begin;
  out.sent_end = best->sent_end;
  out.forms = best->forms;
  out.correct = best->correct;
  return true;
}

}  // namespace

std::vector<BenchmarkItem> generate_benchmark(const Lexicon& lex, const BenchmarkConfig& cfg) {
  if (cfg.per_half < 1 || cfg.per_half > 100'000) throw mq::UsageError("benchmark: per_half must lie in [1, 100000]");
  if (cfg.max_tokens < 16) throw mq::UsageError("benchmark: max_tokens must be at least 16");
  GrammarConfig long_cfg;
  long_cfg.min_sentences = 8;
  long_cfg.max_sentences = 12;
  long_cfg.p_front_cue_later = 0;
  long_cfg.p_mid_cue_later = 0;
  long_cfg.p_end_cue_later = 0;
  long_cfg.p_future = 0;  // a future story has no slot
  const StoryGenerator long_gen(lex, long_cfg);
  std::vector<BenchmarkItem> items;
  items.reserve(static_cast<size_t>(kNumParadigms) * 2 * static_cast<size_t>(cfg.per_half));
  std::unordered_set<uint64_t> seen;
  for (int p = 0; p < kNumParadigms; ++p) {
    for (int half = 0; half < 2; ++half) {  // test first, so its items never depend on the dev half
      RandomChooser rng(seed_mix(cfg.seed * 64 + static_cast<uint64_t>(2 * p + half) + 0x6e7e));
      ItemBuilder b(lex, rng);
      int made = 0;
      for (int64_t tries = 0; made < cfg.per_half; ++tries) {
        if (tries > 200LL * cfg.per_half)
          throw mq::Error(fmt::format("benchmark: paradigm {} could not draw {} distinct items that fit {} tokens",
                                      paradigm_name(static_cast<Paradigm>(p)), cfg.per_half, cfg.max_tokens));
        BenchmarkItem it;
        if (static_cast<Paradigm>(p) == Paradigm::long_story) {
          if (!long_story_item(long_gen, rng, cfg.max_tokens, it)) continue;
        } else {
          it = b.build(static_cast<Paradigm>(p));
          if (it.sent_end > cfg.max_tokens) continue;
        }
        if (!seen.insert(tokens_hash(it.tokens)).second) continue;
        it.test = half == 0;
        items.push_back(std::move(it));
        ++made;
      }
    }
  }
  return items;
}

}  // namespace minigpt
