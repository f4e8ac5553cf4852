// The generalization benchmark: verb-form minimal pairs built from the lexicon in constructions the
// training grammar never writes (several attractors, two levels of centre embedding, a modifier on a
// coordination or on a relative's subject, subject-verb pairings of the wrong class, stories longer
// than any in training). Like BLiMP, an item is scored by which form the model prefers; like the
// corpus's own slots, each is decided by the words before the verb. The slot set of the corpus
// (eval.h, "in-distribution constructions") measures what the model memorized; this one measures what
// it generalized, so a quantized model's losses show here before they show there.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "minigpt/corpus/lexicon.h"

namespace minigpt {

// Each paradigm's construction, with the slot "__" and the word that decides it in capitals. All but
// long_story and far_past_cue are in the present tense, set by a front time cue, so the number decides.
enum class Paradigm : uint8_t {
  two_pp,           // "the KEY near the boxes behind the chairs __": two attractors of the other number
  four_pp,          // four prepositional attractors: a subject longer than any in training
  pp_relative,      // "the DOG near the boys who feed the cats __": a relative clause on the attractor
  pp_orel,          // "the DOG near the boys that the girls feed __": an object relative on the attractor
  orel_pp,          // "the DOG that the boys near the cat feed __": a modifier inside an object relative
  orel_relative,    // "the DOG that the boys who like the cats feed __": a relative inside an object relative
  centre_main,      // "the DOG that the cats that the boys feed chase __": two levels of object relatives
  unseen_pairing,   // "the DOGS near the cat read ...": a verb never seen with that subject class
  unseen_two_pp,    // the same across two attractors
  long_story,       // a story of 8-12 sentences; the slot after the seventh, the tense set by the first only
  far_past_cue,     // "YESTERDAY , the girl near the dogs behind ... beside ... __": the tense 10+ words back
  // Diagnostics: constructions where the shipped model follows a wrong rule (below chance on the dev half,
  // it agrees with the nearest or the first noun). Quantization weakens such a rule and raises their
  // accuracy toward chance, which is not intelligence gained, so they are reported, never averaged in.
  centre_middle,    // "the dog that the CATS that the boy feeds __": the middle verb
  inner_pp,         // "the dog that the BOY near the cats __": a modifier on the relative's subject
  coordination_pp,  // "tom AND the girl near the cat __": a modified coordination of singulars (plural)
};
inline constexpr int kNumParadigms = 14;
const char* paradigm_name(Paradigm);
// One line on what the paradigm tests, for reports.
const char* paradigm_description(Paradigm);
// False for the diagnostics: the benchmark's accuracy is over the scored paradigms only.
bool paradigm_scored(Paradigm);

struct BenchmarkItem {
  Paradigm paradigm = Paradigm::two_pp;
  bool test = false;                   // the frozen test half (every report); false: the dev half
  std::vector<std::string> tokens;     // the context and the item's sentence, the true form at `pos`
  int32_t pos = 0;                     // the slot
  int32_t sent_begin = 0, sent_end = 0;  // the scored sentence [begin, end), final "." included
  std::array<std::string, 3> forms;    // base, 3rd singular, past: three distinct words
  uint8_t correct = 0;
};

struct BenchmarkConfig {
  uint64_t seed = 42;
  int per_half = 500;    // items per paradigm in each half
  int max_tokens = 127;  // an item (with the <sep> put in front) fits a context of max_tokens + 1
};

// Per paradigm, the test half and then the dev half, each from its own seeded stream; an item whose text
// repeats one drawn before it (either half) is redrawn, so the halves share no item. Throws mq::Error if
// the lexicon cannot build a paradigm (no verb for a relative, say).
std::vector<BenchmarkItem> generate_benchmark(const Lexicon& lex, const BenchmarkConfig& cfg = {});

}  // namespace minigpt
