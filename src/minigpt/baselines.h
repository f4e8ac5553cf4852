// Rule-based baselines for the verb-tense minimal pairs: what a slot costs without a language model.
// They read only the story's text (and, for the bigram, the train split), never the grammar's own
// bookkeeping, so a construction they solve is one a model can solve by the same shallow rule.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "minigpt/corpus/lexicon.h"
#include "minigpt/corpus/story.h"
#include "minigpt/eval.h"

namespace minigpt {

struct BaselineScore {
  std::string name;  // two_line_rule, nearest_noun, bigram
  std::string rule;  // the rule in one sentence, for tables
  ConstructionScore overall;
  std::array<ConstructionScore, kNumConstructions> by_kind;  // indexed by Construction
};

// Each baseline picks one of a slot's three forms (base, 3rd singular, past):
//  - two_line_rule: tense from the nearest earlier time cue or unambiguous verb form ("ate", "walks",
//    "was", "has", "will"...); in the present, number from the first noun, name or pronoun after the
//    last clause boundary (sentence start, ",", when/after/before/because). It decides every slot of
//    the four easy constructions; the hard three are built so that it reads the wrong noun.
//  - nearest_noun: the same tense; number from the nearest noun, name or pronoun before the blank.
//  - bigram: add-one-smoothed word bigram counted on `train`; the form whose two bigrams (previous
//    word -> form -> next word) are most probable, the same sentence score the model is judged by,
//    cut to the words a bigram sees.
// Slots are the test stories' in story order, the first `max_slots` of them (0: all), as
// verb_tense_accuracy counts them. Ties pick the lowest form index, as the model's scoring does.
std::vector<BaselineScore> rule_baselines(const Lexicon& lex, const std::vector<Story>& train,
                                          const std::vector<Story>& test, int64_t max_slots = 0);

}  // namespace minigpt
