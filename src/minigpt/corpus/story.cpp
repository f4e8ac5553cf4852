// The verb grammar: builds one story token by token, charging each choice's log-probability to
// the token where the choice first shows, and recording the verb slots the context decides.
#include "minigpt/corpus/story.h"

#include <cmath>
#include <string_view>

#include "miniquant/error.h"

namespace minigpt {

const char* construction_name(Construction c) {
  switch (c) {
    case Construction::agreement: return "agreement";
    case Construction::local_time_cue: return "local_time_cue";
    case Construction::attractor: return "attractor";
    case Construction::long_range: return "long_range";
    case Construction::coordination: return "coordination";
    case Construction::object_relative: return "object_relative";
    case Construction::relative_inner: return "relative_inner";
  }
  return "?";
}

int RandomChooser::pick(std::span<const double> weights) {
  double total = 0;
  for (double w : weights) total += w;
  const double u = uniform01() * total;
  double cum = 0;
  int last = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    cum += weights[i];
    last = static_cast<int>(i);
    if (u < cum) return last;
  }
  if (last < 0) throw mq::Error("grammar: a choice point has no option of positive weight; check GrammarConfig");
  return last;  // u rounded up to total
}

int RandomChooser::pick_uniform(int n) {
  int i = static_cast<int>(uniform01() * n);
  return i < n ? i : n - 1;
}

struct GrammarTables {
  int human = -1, animal = -1;
  std::vector<int> verbs_for[2];                   // [0] human subjects, [1] animal subjects
  std::vector<std::pair<int, int>> rel_for[2];     // (verb, frame) whose frame is one noun phrase
  // Object relatives "the <head> that the <inner> <verb>": [head][inner] (0 human, 1 animal) lists the
  // (verb, frame) whose subject may be the inner noun and whose frame is one noun phrase of the head's class.
  std::vector<std::pair<int, int>> orel_for[2][2];
  std::vector<std::vector<int>> nouns_of;          // per class
  std::vector<std::vector<int>> adjs_of;           // per class
  std::vector<int> attractor_classes;              // classes a subject's PP may name
  std::vector<int> cues[3][3];                     // [tense][front, end, mid]
};

namespace {

constexpr const char* kConj[] = {"when", "after", "before", "because"};
constexpr const char* kPreps[] = {"near", "with", "behind", "beside"};

// Agreement class of a subject: "i" takes the base form like a plural, but "am"/"was".
enum class Agr : uint8_t { sg1, sg3, pl };

// Which hard construction a verb slot belongs to when the story is in the present tense.
enum class Hard : uint8_t { none, coordination, object_relative, relative_inner };

struct Subject {
  Agr agr = Agr::sg3;
  int cls = 0;            // human or animal class id
  bool attractor = false;  // a noun of the other number stands between head and verb
  Hard hard = Hard::none;  // coordinated subject, or a head with an object relative
};

// A verb position recorded during the sentence; its category is known only once the sentence ends.
struct SlotDraft {
  int32_t pos;
  const std::string *base, *s3, *past;
  uint8_t correct;
  bool attractor;
  Hard hard;
};

bool starts_with_vowel(const std::string& w) {
  return !w.empty() && std::string_view("aeiou").find(w[0]) != std::string_view::npos;
}

class Builder {
 public:
  Builder(const Lexicon& lex, const GrammarConfig& g, const GrammarTables& t, Chooser& ch)
      : L_(lex), g_(g), T_(t), ch_(ch) {}

  Story run() {
    const double tw[3] = {g_.p_present, g_.p_past, g_.p_future};
    tense_ = static_cast<Tense>(pick(tw));
    for (int k = 1;; ++k) {
      sentence(k == 1);
      if (k < g_.min_sentences) continue;
      if (k >= g_.max_sentences) break;
      if (coin(g_.p_stop)) break;  // log p(stop) lands on the separator, log p(go on) on the next sentence
    }
    emit(kSeparator);
    // Doubling growth leaves ~40% of each vector unused; 5 million tokens make that worth trimming.
    st_.tokens.shrink_to_fit();
    st_.logp.shrink_to_fit();
    st_.slots.shrink_to_fit();
    return std::move(st_);
  }

 private:
  const Lexicon& L_;
  const GrammarConfig& g_;
  const GrammarTables& T_;
  Chooser& ch_;
  Story st_;
  double pending_ = 0;  // log-prob of choices not yet visible in the text
  Tense tense_ = Tense::present;
  bool first_ = true;
  int32_t cue_pos_ = -1;  // first token of this sentence's time cue, -1 if none so far
  std::vector<SlotDraft> drafts_;

  // --- choices and output --------------------------------------------------------------------
  int pick(std::span<const double> w) {
    if (ch_.abandon(st_.tokens)) throw StoryAbandoned{};
    double total = 0;
    for (double x : w) total += x;
    const int i = ch_.pick(w);
    pending_ += std::log(w[i] / total);
    return i;
  }
  int pick(std::initializer_list<double> w) { return pick(std::span<const double>(w.begin(), w.size())); }
  int uniform(size_t n) {
    if (n == 0) throw mq::Error("grammar: empty word list; the lexicon check should have caught this");
    if (n == 1) return 0;
    if (ch_.abandon(st_.tokens)) throw StoryAbandoned{};
    pending_ -= std::log(static_cast<double>(n));
    return ch_.pick_uniform(static_cast<int>(n));
  }
  // A coin with p in {0, 1} is no choice at all: the chooser is not asked and nothing is charged.
  bool coin(double p) {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return pick({1 - p, p}) == 1;
  }
  int32_t emit(std::string_view tok) {
    st_.tokens.emplace_back(tok);
    st_.logp.push_back(pending_);
    pending_ = 0;
    return static_cast<int32_t>(st_.tokens.size() - 1);
  }
  int32_t here() const { return static_cast<int32_t>(st_.tokens.size()); }

  // --- sentence --------------------------------------------------------------------------------
  void sentence(bool first) {
    first_ = first;
    cue_pos_ = -1;
    drafts_.clear();
    const int32_t begin = here();
    const int ti = static_cast<int>(tense_);
    // The first sentence must show a cue: with no end cue for this tense, the front one is forced.
    const double front = !first ? g_.p_front_cue_later : T_.cues[ti][1].empty() ? 1.0 : g_.p_front_cue_first;
    if (!T_.cues[ti][0].empty() && coin(front)) {
      cue(0);
      emit(",");
    }
    const double sub = tense_ == Tense::future ? 0.0 : g_.p_fronted_sub;  // "when he will ..." is not English
    const int kind = pick({g_.p_question, sub, 1 - g_.p_question - g_.p_fronted_sub});
    if (kind == 0) {
      question();
    } else if (kind == 1) {
      emit(kConj[uniform(4)]);
      clause(false);
      emit(",");
      clause(true);
    } else {
      clause(true);
      if (coin(g_.p_because)) {
        emit("because");
        clause(false);
      }
    }
    if (cue_pos_ < 0 && !T_.cues[ti][1].empty() && coin(first ? 1.0 : g_.p_end_cue_later)) cue(1);
    emit(kind == 0 ? "?" : ".");
    finish_slots(begin, here());
  }

  void cue(int where) {
    const auto& list = T_.cues[static_cast<int>(tense_)][where];
    const TimeCue& c = L_.cues[list[uniform(list.size())]];
    cue_pos_ = here();
    for (const auto& w : c.words) emit(w);
  }

  void finish_slots(int32_t begin, int32_t end) {
    for (const auto& d : drafts_) {
      Construction kind;
      const bool decided = (cue_pos_ >= 0 && cue_pos_ < d.pos) || (!first_ && cue_pos_ < 0);
      if (decided && d.hard != Hard::none && tense_ == Tense::present) {
        // Number is all that is left to decide, and the easy rules read it from the wrong noun.
        kind = d.hard == Hard::coordination      ? Construction::coordination
               : d.hard == Hard::object_relative ? Construction::object_relative
                                                 : Construction::relative_inner;
      } else if (cue_pos_ >= 0 && cue_pos_ < d.pos) {
        if (tense_ == Tense::past) kind = Construction::local_time_cue;
        else kind = d.attractor ? Construction::attractor : Construction::agreement;
      } else if (!first_ && cue_pos_ < 0) {
        kind = Construction::long_range;
      } else {
        continue;  // the deciding cue comes after the verb: the left context does not decide it
      }
      if (*d.base == *d.s3 || *d.base == *d.past || *d.s3 == *d.past) continue;  // put/puts/put
      st_.slots.push_back(VerbSlot{d.pos, begin, end, {*d.base, *d.s3, *d.past}, d.correct, kind});
    }
  }

  // --- clauses ---------------------------------------------------------------------------------
  // Subject + verb phrase. `main` clauses may take any verb-phrase kind; subordinate ones are simple.
  void clause(bool main) {
    Subject s = subject(true);
    int vp = 0;
    if (main) {
      const auto& p = g_.p_vp;
      vp = first_ ? pick({p[0], p[1], 0.0, 0.0}) : pick(p);
    }
    const Verb* v = nullptr;
    switch (vp) {
      case 0: {
        if (main && tense_ == Tense::present && cue_pos_ < 0 && !T_.cues[0][2].empty() &&
            coin(first_ ? g_.p_mid_cue_first : g_.p_mid_cue_later))
          cue(2);
        v = &verb_for(s);
        finite(s, v->base, v->s3, v->past, &v->base);
        break;
      }
      case 1: {
        static const std::string kDo = "do", kDoes = "does", kDid = "did";
        v = &verb_for(s);
        finite(s, kDo, kDoes, kDid, nullptr);
        emit("not");
        emit(v->base);
        break;
      }
      case 2: {
        v = &verb_for(s);
        if (tense_ == Tense::future) {
          emit("will");
          emit("be");
        } else if (tense_ == Tense::present) {
          emit(s.agr == Agr::sg1 ? "am" : s.agr == Agr::sg3 ? "is" : "are");
        } else {
          emit(s.agr == Agr::pl ? "were" : "was");
        }
        emit(v->ing);
        break;
      }
      default: {
        static const std::string kHave = "have", kHas = "has", kHad = "had";
        v = &verb_for(s);
        finite(s, kHave, kHas, kHad, &kHave);
        emit(v->participle);
        break;
      }
    }
    complement(*v);
  }

  // Emits the tensed word and drafts a slot for it. In the future the tense sits on "will", which
  // is followed by `after_will` (the lexical base, "have", or nothing for "will not").
  void finite(const Subject& s, const std::string& base, const std::string& s3, const std::string& past,
              const std::string* after_will) {
    if (tense_ == Tense::future) {
      emit("will");
      if (after_will) emit(*after_will);
      return;
    }
    const uint8_t correct = tense_ == Tense::past ? 2 : s.agr == Agr::sg3 ? 1 : 0;
    const std::string& w = correct == 2 ? past : correct == 1 ? s3 : base;
    const int32_t pos = emit(w);
    drafts_.push_back({pos, &base, &s3, &past, correct, s.attractor, s.hard});
  }

  void question() {
    const int32_t aux = emit("");  // filled once the subject (and its number) is known
    Subject s = subject(false);
    if (tense_ == Tense::future) st_.tokens[aux] = "will";
    else if (tense_ == Tense::past) st_.tokens[aux] = "did";
    else st_.tokens[aux] = s.agr == Agr::sg3 ? "does" : "do";
    if (tense_ == Tense::past) {
      // Only "did" is decided by what precedes it; "do"/"does" hang on the subject that follows.
      static const std::string kDo = "do", kDoes = "does", kDid = "did";
      drafts_.push_back({aux, &kDo, &kDoes, &kDid, 2, false, Hard::none});
    }
    const Verb& v = verb_for(s);
    emit(v.base);
    complement(v);
  }

  const Verb& verb_for(const Subject& s) {
    const auto& list = T_.verbs_for[s.cls == T_.human ? 0 : 1];
    return L_.verbs[list[uniform(list.size())]];
  }

  void complement(const Verb& v) {
    const Frame& f = v.frames[uniform(v.frames.size())];
    if (f.empty()) {
      if (!L_.adverbs.empty() && coin(g_.p_adverb)) emit(L_.adverbs[uniform(L_.adverbs.size())]);
      return;
    }
    for (const auto& it : f) {
      if (it.is_np) object(it.cls);
      else emit(it.word);
    }
  }

  // --- noun phrases ----------------------------------------------------------------------------
  Subject subject(bool allow_modifier) {
    if (allow_modifier && coin(g_.p_coordination)) return coordinated();
    Subject s;
    const int kind = pick({L_.pronouns.empty() ? 0.0 : g_.p_subj_pronoun, L_.names.empty() ? 0.0 : g_.p_subj_name,
                           g_.p_subj_noun});
    s.cls = T_.human;
    if (kind == 0) {
      const Pronoun& p = L_.pronouns[uniform(L_.pronouns.size())];
      emit(p.subject);
      s.agr = p.plural ? Agr::pl : p.person == 1 ? Agr::sg1 : Agr::sg3;
      return s;
    }
    if (kind == 1) {
      emit(L_.names[uniform(L_.names.size())]);
      return s;
    }
    const bool plural = coin(g_.p_plural);
    s.agr = plural ? Agr::pl : Agr::sg3;
    const double nh = static_cast<double>(T_.nouns_of[T_.human].size());
    const double na = static_cast<double>(T_.nouns_of[T_.animal].size());
    s.cls = pick({nh, na}) == 0 ? T_.human : T_.animal;  // uniform over all subject nouns
    noun_phrase(s.cls, plural);
    if (!allow_modifier || !coin(g_.p_modifier)) return s;
    const Modified m = modifier(s.cls, plural, 0);
    s.attractor = plural ? m.singular : m.plural;
    s.hard = m.object_relative ? Hard::object_relative : Hard::none;
    return s;
  }

  // The numbers of the nouns a modifier wrote, and whether it was an object relative (whose head is
  // the object of the verb inside, so the head's own verb must reach across a clause).
  struct Modified {
    bool singular = false, plural = false;
    bool object_relative = false;
    void add(bool pl) { (pl ? plural : singular) = true; }
    void add(const Modified& o) {
      singular |= o.singular;
      plural |= o.plural;
    }
  };

  // A modifier on a noun of class `cls` and number `plural`: a prepositional phrase or, on a human or
  // animal noun, a subject or object relative; its noun has the other number with p_attractor_other.
  // `depth` counts the modifiers this one sits inside: a modifier's own noun takes one more with
  // p_nested_modifier while depth < max_nesting ("the key near the boxes behind the chairs",
  // "the dog that the boys near the cat feed"). With p_nested_modifier 0 no choice is asked, so the
  // default corpus is the one without nesting, token for token.
  Modified modifier(int cls, bool plural, int depth) {
    Modified m;
    const bool animate = cls == T_.human || cls == T_.animal;
    const int hc = cls == T_.human ? 0 : 1;
    const bool rel = animate && !T_.rel_for[hc].empty() && coin(g_.p_modifier_rel);
    const bool object_rel =
        rel && (!T_.orel_for[hc][0].empty() || !T_.orel_for[hc][1].empty()) && coin(g_.p_object_rel);
    if (object_rel) {
      // "the dog that the boys feed __": the relative's verb agrees with its own subject (a slot of
      // kind relative_inner), the main verb with the head across it (object_relative).
      emit(cls == T_.human ? "who" : "that");
      const double nh = T_.orel_for[hc][0].empty() ? 0.0 : static_cast<double>(T_.nouns_of[T_.human].size());
      const double na = T_.orel_for[hc][1].empty() ? 0.0 : static_cast<double>(T_.nouns_of[T_.animal].size());
      const int ic = pick({nh, na});
      const int inner_cls = ic == 0 ? T_.human : T_.animal;
      const bool other = coin(g_.p_attractor_other);
      const bool inner_plural = other ? !plural : plural;
      noun_phrase(inner_cls, inner_plural);
      m.add(inner_plural);
      const Modified n = nested(inner_cls, inner_plural, depth);
      m.add(n);
      const auto& [vi, fi] = T_.orel_for[hc][ic][uniform(T_.orel_for[hc][ic].size())];
      (void)fi;  // the frame's one noun phrase is the gap the head fills
      const Verb& v = L_.verbs[vi];
      // Its attractors: the head before it, and the nouns of a modifier on its own subject.
      const bool inner_attr = plural != inner_plural || (inner_plural ? n.singular : n.plural);
      Subject inner{inner_plural ? Agr::pl : Agr::sg3, inner_cls, inner_attr, Hard::relative_inner};
      finite(inner, v.base, v.s3, v.past, &v.base);
      m.object_relative = true;
    } else if (rel) {
      emit(cls == T_.human ? "who" : "that");
      const auto& [vi, fi] = T_.rel_for[hc][uniform(T_.rel_for[hc].size())];
      const Verb& v = L_.verbs[vi];
      finite(Subject{plural ? Agr::pl : Agr::sg3, cls, false}, v.base, v.s3, v.past, &v.base);
      const bool noun_plural = coin(g_.p_attractor_other) ? !plural : plural;
      const int oc = v.frames[fi][0].cls;
      noun_phrase(oc, noun_plural);
      m.add(noun_plural);
      m.add(nested(oc, noun_plural, depth));
    } else {
      emit(kPreps[uniform(4)]);
      std::vector<double> w;
      for (int c : T_.attractor_classes) w.push_back(static_cast<double>(T_.nouns_of[c].size()));
      const int c = T_.attractor_classes[pick(w)];
      const bool noun_plural = coin(g_.p_attractor_other) ? !plural : plural;
      noun_phrase(c, noun_plural);
      m.add(noun_plural);
      m.add(nested(c, noun_plural, depth));
    }
    return m;
  }

  // The modifier, if any, on a noun phrase a modifier just wrote.
  Modified nested(int cls, bool plural, int depth) {
    if (depth + 1 > g_.max_nesting || !coin(g_.p_nested_modifier)) return {};
    return modifier(cls, plural, depth + 1);
  }

  // "tom and the girl", "the cat and some dogs": two conjuncts of one class, always plural. Neither
  // conjunct takes a modifier, so "and" can only join the two (no "the man near the dog and ...").
  Subject coordinated() {
    Subject s;
    s.agr = Agr::pl;
    s.hard = Hard::coordination;
    const double nh = static_cast<double>(T_.nouns_of[T_.human].size());
    const double na = static_cast<double>(T_.nouns_of[T_.animal].size());
    s.cls = pick({nh, na}) == 0 ? T_.human : T_.animal;
    for (int k = 0; k < 2; ++k) {
      if (k == 1) emit("and");
      const bool name = s.cls == T_.human && !L_.names.empty() && pick({g_.p_subj_name, g_.p_subj_noun}) == 0;
      if (name) emit(L_.names[uniform(L_.names.size())]);
      else noun_phrase(s.cls, coin(g_.p_coord_plural));
    }
    return s;
  }

  void object(int cls) {
    if (cls == T_.human) {
      const int kind = pick({L_.pronouns.empty() ? 0.0 : g_.p_obj_pronoun, L_.names.empty() ? 0.0 : g_.p_obj_name,
                             1 - g_.p_obj_pronoun - g_.p_obj_name});
      if (kind == 0) {
        emit(L_.pronouns[uniform(L_.pronouns.size())].object);
        return;
      }
      if (kind == 1) {
        emit(L_.names[uniform(L_.names.size())]);
        return;
      }
    }
    noun_phrase(cls, coin(g_.p_plural));
  }

  // determiner [adjective] noun; "a" becomes "an" before a vowel, which is spelling, not a choice.
  void noun_phrase(int cls, bool plural) {
    const bool indefinite = coin(plural ? g_.p_some : g_.p_article_a);
    // "a" or "an" is written once the next word is known; "" marks it undecided meanwhile.
    const int32_t det = emit(indefinite ? (plural ? "some" : "") : "the");
    const auto& adjs = T_.adjs_of[cls];
    if (!adjs.empty() && coin(g_.p_adjective)) {
      const std::string& a = L_.adjectives[adjs[uniform(adjs.size())]].word;
      emit(a);
    }
    const auto& nouns = T_.nouns_of[cls];
    const Noun& n = L_.nouns[nouns[uniform(nouns.size())]];
    emit(plural ? n.plural : n.singular);
    if (st_.tokens[det].empty()) st_.tokens[det] = starts_with_vowel(st_.tokens[det + 1]) ? "an" : "a";
  }
};

}  // namespace

StoryGenerator::StoryGenerator(const Lexicon& lex, const GrammarConfig& cfg)
    : lex_(lex), cfg_(cfg), tables_(std::make_unique<GrammarTables>()) {
  if (cfg.min_sentences < 1 || cfg.max_sentences < cfg.min_sentences)
    throw mq::UsageError("grammar: need 1 <= min_sentences <= max_sentences");
  if (cfg.max_nesting < 0 || cfg.max_nesting > 4) throw mq::UsageError("grammar: max_nesting must be 0-4");
  const double probs[] = {cfg.p_stop, cfg.p_present, cfg.p_past, cfg.p_future, cfg.p_front_cue_first,
                          cfg.p_front_cue_later, cfg.p_mid_cue_first, cfg.p_mid_cue_later, cfg.p_end_cue_later,
                          cfg.p_question, cfg.p_fronted_sub, cfg.p_because, cfg.p_subj_pronoun, cfg.p_subj_name,
                          cfg.p_subj_noun, cfg.p_obj_pronoun, cfg.p_obj_name, cfg.p_plural, cfg.p_modifier,
                          cfg.p_modifier_rel, cfg.p_attractor_other, cfg.p_nested_modifier, cfg.p_object_rel, cfg.p_coordination,
                          cfg.p_coord_plural, cfg.p_adjective, cfg.p_adverb,
                          cfg.p_article_a, cfg.p_some, cfg.p_vp[0], cfg.p_vp[1], cfg.p_vp[2], cfg.p_vp[3]};
  for (double p : probs)
    if (!(p >= 0 && p <= 1)) throw mq::UsageError("grammar: every GrammarConfig probability must lie in [0, 1]");
  // Options drawn together must leave room for the rest ("main clause", "noun phrase object").
  if (cfg.p_question + cfg.p_fronted_sub > 1 || cfg.p_obj_pronoun + cfg.p_obj_name > 1 ||
      cfg.p_present + cfg.p_past + cfg.p_future <= 0 || cfg.p_vp[0] + cfg.p_vp[1] <= 0 ||
      cfg.p_subj_noun <= 0)
    throw mq::UsageError("grammar: GrammarConfig option probabilities do not form a distribution");
  GrammarTables& t = *tables_;
  t.human = lex.class_id("human");
  t.animal = lex.class_id("animal");
  if (t.human < 0 || t.animal < 0) throw mq::Error("grammar: the lexicon needs nouns of class 'human' and 'animal'");
  t.nouns_of.resize(lex.noun_classes.size());
  t.adjs_of.resize(lex.noun_classes.size());
  for (size_t i = 0; i < lex.nouns.size(); ++i) t.nouns_of[lex.nouns[i].cls].push_back(static_cast<int>(i));
  for (size_t i = 0; i < lex.adjectives.size(); ++i)
    for (int c : lex.adjectives[i].classes) t.adjs_of[c].push_back(static_cast<int>(i));
  for (size_t i = 0; i < lex.verbs.size(); ++i) {
    const Verb& v = lex.verbs[i];
    for (int h = 0; h < 2; ++h) {
      const bool fits = v.subject == SubjectClass::animate || (h == 0) == (v.subject == SubjectClass::human);
      if (!fits) continue;
      t.verbs_for[h].push_back(static_cast<int>(i));
      for (size_t f = 0; f < v.frames.size(); ++f) {
        if (v.frames[f].size() != 1 || !v.frames[f][0].is_np) continue;
        t.rel_for[h].push_back({static_cast<int>(i), static_cast<int>(f)});
        // The same verb with subject class h, its object the head: "the <head> that the <h-noun> <verb>".
        const int obj = v.frames[f][0].cls;
        if (obj == t.human || obj == t.animal) t.orel_for[obj == t.human ? 0 : 1][h].push_back({static_cast<int>(i), static_cast<int>(f)});
      }
    }
  }
  if (t.verbs_for[0].empty() || t.verbs_for[1].empty())
    throw mq::Error("grammar: the lexicon needs verbs for human and for animal subjects");
  for (const char* name : {"human", "animal", "thing", "furniture"}) {
    int c = lex.class_id(name);
    if (c >= 0 && !t.nouns_of[c].empty()) t.attractor_classes.push_back(c);
  }
  for (size_t i = 0; i < lex.cues.size(); ++i) {
    const TimeCue& c = lex.cues[i];
    const int ti = static_cast<int>(c.tense);
    if (c.front) t.cues[ti][0].push_back(static_cast<int>(i));
    if (c.end) t.cues[ti][1].push_back(static_cast<int>(i));
    if (c.mid && c.tense == Tense::present) t.cues[ti][2].push_back(static_cast<int>(i));
  }
}

StoryGenerator::~StoryGenerator() = default;

Story StoryGenerator::generate(Chooser& chooser) const {
  return Builder(lex_, cfg_, *tables_, chooser).run();
}

}  // namespace minigpt
