// One story of the verb grammar: tokens, the log-probability of each generator choice, and the
// verb slots whose form the context decides. Choices go through a Chooser so a test can enumerate them.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "minigpt/corpus/lexicon.h"

namespace minigpt {

inline constexpr const char* kSeparator = "<sep>";

// The first four are decided by a two-line rule (tense from the nearest earlier cue, number from the
// first noun after the clause boundary). The hard three are present-tense number slots that rule
// (and "agree with the nearest noun") gets wrong on purpose:
//   coordination      "tom and the girl __"           two singular conjuncts take the plural
//   object_relative   "the dog that the boys feed __"  the head, not the relative's subject
//   relative_inner    "the dog that the boys __"       the relative's own subject, not the head
enum class Construction : uint8_t {
  agreement,
  local_time_cue,
  attractor,
  long_range,
  coordination,
  object_relative,
  relative_inner
};
inline constexpr int kNumConstructions = 7;
inline constexpr int kNumEasyConstructions = 4;  // the first four; the rest are the hard set
const char* construction_name(Construction);
inline bool is_hard(Construction c) { return static_cast<int>(c) >= kNumEasyConstructions; }

// A minimal pair (triple): the verb at `pos` could be written in any of `forms`
// (base, 3rd singular, past); only forms[correct] continues the story grammatically.
struct VerbSlot {
  int32_t pos = 0;                     // token index in the story
  int32_t sent_begin = 0, sent_end = 0;  // the sentence [begin, end), final punctuation included
  std::array<std::string, 3> forms;
  uint8_t correct = 0;
  Construction kind = Construction::agreement;
};

struct Story {
  std::vector<std::string> tokens;  // lower-case words and punctuation, last one is kSeparator
  std::vector<double> logp;         // per token: natural log-prob of the choices revealed there
  std::vector<VerbSlot> slots;
};

// Probabilities of the grammar's choice points (see the Corpus section of README.md).
struct GrammarConfig {
  int min_sentences = 2, max_sentences = 6;
  double p_stop = 0.35;  // after min_sentences, chance to end the story after each sentence
  double p_present = 0.4, p_past = 0.4, p_future = 0.2;
  double p_front_cue_first = 0.35, p_front_cue_later = 0.12;
  double p_mid_cue_first = 0.6, p_mid_cue_later = 0.08;  // present tense, simple verb, no cue yet
  double p_end_cue_later = 0.08;                          // the first sentence's end cue is forced
  double p_question = 0.08, p_fronted_sub = 0.12, p_because = 0.1;
  // Verb phrase kinds: simple, negation, progressive, perfect. The first sentence uses only the
  // first two (renormalized), so its cue never meets "has eaten" / "is eating".
  std::array<double, 4> p_vp{0.55, 0.15, 0.15, 0.15};
  double p_subj_pronoun = 0.15, p_subj_name = 0.15, p_subj_noun = 0.7;
  double p_obj_pronoun = 0.15, p_obj_name = 0.2;  // human objects; the rest are noun phrases
  double p_plural = 0.5;
  double p_modifier = 0.5, p_modifier_rel = 0.4;  // subject noun gets a PP / relative clause
  double p_attractor_other = 0.8;                 // the modifier's noun has the other number
  // A noun inside a modifier takes a modifier of its own, up to max_nesting levels below the subject's:
  // "the key near the boxes behind the chairs", "the dog that the boys near the cat feed". 0: never.
  double p_nested_modifier = 0;
  int max_nesting = 2;
  double p_object_rel = 0.5;     // a relative modifier is an object relative: "the dog that the boys feed"
  double p_coordination = 0.1;   // a clause subject is two conjuncts: "tom and the girl", "the cat and the dogs"
  double p_coord_plural = 0.25;  // each conjunct noun phrase is plural (mostly singular: the "and" decides)
  double p_adjective = 0.25, p_adverb = 0.3;
  double p_article_a = 0.4, p_some = 0.3;
};

// Draws one option from unnormalized weights; must never return an option of weight 0.
class Chooser {
 public:
  virtual ~Chooser() = default;
  virtual int pick(std::span<const double> weights) = 0;
  virtual int pick_uniform(int n) = 0;
  // Asked before every choice with the tokens written so far ("" marks a word not yet decided);
  // true abandons the story: generate() throws StoryAbandoned. Lets a test search for every
  // derivation of a given text instead of trusting that there is only one.
  virtual bool abandon(const std::vector<std::string>& written) {
    (void)written;
    return false;
  }
};

struct StoryAbandoned {};

// mt19937_64 with our own uniform and categorical sampling: std:: distributions differ between
// standard libraries, and the corpus must be the same everywhere.
class RandomChooser final : public Chooser {
 public:
  explicit RandomChooser(uint64_t seed) : rng_(seed) {}
  int pick(std::span<const double> weights) override;
  int pick_uniform(int n) override;
  double uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 rng_;
};

struct GrammarTables;  // lexicon indexed for the grammar (compatible verbs, nouns per class...)

class StoryGenerator {
 public:
  StoryGenerator(const Lexicon& lex, const GrammarConfig& cfg);
  ~StoryGenerator();
  StoryGenerator(const StoryGenerator&) = delete;
  StoryGenerator& operator=(const StoryGenerator&) = delete;
  Story generate(Chooser& chooser) const;

 private:
  const Lexicon& lex_;
  GrammarConfig cfg_;
  std::unique_ptr<GrammarTables> tables_;
};

}  // namespace minigpt
