// The verb corpus's word lists (verbs with all their forms and frames, nouns, names, cues), read from data/lexicon.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace minigpt {

enum class Tense : uint8_t { present, past, future };
const char* tense_name(Tense);

// Which subjects a verb accepts; the grammar draws the subject first, then a verb that fits it.
enum class SubjectClass : uint8_t { human, animal, animate };

// One element of a complement frame: a literal word, or a noun phrase of a noun class.
struct FrameItem {
  bool is_np = false;
  int cls = -1;      // noun class id when is_np
  std::string word;  // the literal when !is_np
};
using Frame = std::vector<FrameItem>;  // empty frame = no complement

struct Verb {
  std::string base, s3, past, participle, ing;
  bool irregular = false;
  SubjectClass subject = SubjectClass::animate;
  std::vector<Frame> frames;  // alternatives; the grammar picks one uniformly
};

struct Noun {
  std::string singular, plural;
  int cls = -1;  // index into Lexicon::noun_classes
};

struct Pronoun {
  std::string subject, object;
  int person = 3;  // 1 or 3
  bool plural = false;
};

struct Adjective {
  std::string word;
  std::vector<int> classes;  // noun classes it may modify
};

struct TimeCue {
  Tense tense = Tense::present;
  std::vector<std::string> words;  // "last week" -> {"last", "week"}
  bool front = false, end = false, mid = false;
};

struct Lexicon {
  std::vector<std::string> noun_classes;  // class names in order of first appearance in nouns.tsv
  std::vector<Verb> verbs;
  std::vector<Noun> nouns;
  std::vector<std::string> names;
  std::vector<Pronoun> pronouns;
  std::vector<Adjective> adjectives;
  std::vector<std::string> adverbs;
  std::vector<TimeCue> cues;

  int class_id(std::string_view name) const;  // -1 if unknown
  int irregular_count() const;

  // Reads verbs.tsv, nouns.tsv, names.txt, pronouns.tsv, adjectives.tsv, adverbs.txt and
  // time_cues.tsv from `dir`. A missing file, a malformed line or an inconsistent entry (unknown
  // noun class, a word form shared by two verbs, a noun spelled like a verb) throws mq::Error
  // naming the file and line.
  static Lexicon load(const std::string& dir);
};

}  // namespace minigpt
