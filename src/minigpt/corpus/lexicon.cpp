// Reading and validating the lexicon files: strict, so a typo shows up as file:line, not as odd text.
#include "minigpt/corpus/lexicon.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {

const char* tense_name(Tense t) {
  switch (t) {
    case Tense::present: return "present";
    case Tense::past: return "past";
    case Tense::future: return "future";
  }
  return "?";
}

int Lexicon::class_id(std::string_view name) const {
  for (size_t i = 0; i < noun_classes.size(); ++i)
    if (noun_classes[i] == name) return static_cast<int>(i);
  return -1;
}

int Lexicon::irregular_count() const {
  int n = 0;
  for (const auto& v : verbs) n += v.irregular ? 1 : 0;
  return n;
}

namespace {

// One data line of a lexicon file, split on tabs, with its origin for error messages.
struct Line {
  std::string where;  // "dir/file:line"
  std::vector<std::string> cols;
};

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw mq::Error(fmt::format("{}: {}", where, what));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

// Lines that are neither blank nor '#' comments, each with exactly `ncols` tab-separated columns.
std::vector<Line> read_table(const std::string& dir, const std::string& file, size_t ncols) {
  const std::string path = dir + "/" + file;
  std::ifstream in(path);
  if (!in)
    throw mq::Error(fmt::format("cannot open lexicon file '{}': {}; point --lexicon at the data/lexicon directory",
                                path, std::strerror(errno)));
  std::vector<Line> lines;
  std::string s;
  int lineno = 0;
  while (std::getline(in, s)) {
    ++lineno;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    if (s.empty() || s[0] == '#') continue;
    Line l{fmt::format("{}:{}", path, lineno), split(s, '\t')};
    if (l.cols.size() != ncols)
      fail(l.where, fmt::format("expected {} tab-separated column(s), found {}; fix the line or comment it out with '#'",
                                ncols, l.cols.size()));
    lines.push_back(std::move(l));
  }
  if (lines.empty()) throw mq::Error(fmt::format("{}: no entries; the corpus needs at least one", path));
  return lines;
}

// Word forms are single lower-case ASCII words: the tokenizer relies on it.
void check_word(const Line& l, const std::string& w, const char* what) {
  bool ok = !w.empty();
  for (char c : w) ok = ok && c >= 'a' && c <= 'z';
  if (!ok) fail(l.where, fmt::format("{} '{}' must be one lower-case word (a-z only)", what, w));
}

std::vector<std::string> words_of(const Line& l, const std::string& phrase, const char* what) {
  auto ws = split(phrase, ' ');
  for (const auto& w : ws) check_word(l, w, what);
  return ws;
}

void load_nouns(Lexicon& lex, const std::string& dir) {
  std::set<std::string> seen;
  for (const auto& l : read_table(dir, "nouns.tsv", 3)) {
    Noun n{l.cols[0], l.cols[1], -1};
    check_word(l, n.singular, "singular");
    check_word(l, n.plural, "plural");
    check_word(l, l.cols[2], "noun class");
    if (n.singular == n.plural)
      fail(l.where, fmt::format("'{}' has the same singular and plural; number must be visible, drop invariant nouns", n.singular));
    for (const auto& w : {n.singular, n.plural})
      if (!seen.insert(w).second) fail(l.where, fmt::format("noun form '{}' appears twice; every noun form must be unique", w));
    n.cls = lex.class_id(l.cols[2]);
    if (n.cls < 0) {
      n.cls = static_cast<int>(lex.noun_classes.size());
      lex.noun_classes.push_back(l.cols[2]);
    }
    lex.nouns.push_back(std::move(n));
  }
  for (const char* need : {"human", "animal"})
    if (lex.class_id(need) < 0)
      throw mq::Error(fmt::format("{}/nouns.tsv: no noun of class '{}'; subjects are drawn from it", dir, need));
}

Frame parse_frame(const Lexicon& lex, const Line& l, const std::string& text) {
  Frame f;
  if (text == "-") return f;
  for (const auto& item : split(text, ' ')) {
    FrameItem it;
    if (!item.empty() && item[0] == '@') {
      it.is_np = true;
      it.cls = lex.class_id(item.substr(1));
      if (it.cls < 0) fail(l.where, fmt::format("frame '{}' names unknown noun class '{}'", text, item));
    } else {
      check_word(l, item, "frame word");
      it.word = item;
    }
    f.push_back(std::move(it));
  }
  return f;
}

void load_verbs(Lexicon& lex, const std::string& dir) {
  // A form shared by two verbs in the same slot would make the chosen verb invisible in the text.
  std::map<std::string, std::string> owner[5];
  for (const auto& l : read_table(dir, "verbs.tsv", 8)) {
    Verb v;
    v.base = l.cols[0], v.s3 = l.cols[1], v.past = l.cols[2], v.participle = l.cols[3], v.ing = l.cols[4];
    const std::string* forms[5] = {&v.base, &v.s3, &v.past, &v.participle, &v.ing};
    for (int k = 0; k < 5; ++k) {
      check_word(l, *forms[k], "verb form");
      auto [it, fresh] = owner[k].emplace(*forms[k], v.base);
      if (!fresh)
        fail(l.where, fmt::format("form '{}' of '{}' is also a form of '{}' in the same column; drop one of the verbs",
                                  *forms[k], v.base, it->second));
    }
    if (l.cols[5] != "reg" && l.cols[5] != "irr") fail(l.where, fmt::format("column 6 must be 'reg' or 'irr', not '{}'", l.cols[5]));
    v.irregular = l.cols[5] == "irr";
    if (l.cols[6] == "human") v.subject = SubjectClass::human;
    else if (l.cols[6] == "animal") v.subject = SubjectClass::animal;
    else if (l.cols[6] == "animate") v.subject = SubjectClass::animate;
    else fail(l.where, fmt::format("subject class must be human, animal or animate, not '{}'", l.cols[6]));
    std::set<std::string> alts;
    for (const auto& alt : split(l.cols[7], '|')) {
      if (!alts.insert(alt).second) fail(l.where, fmt::format("frame '{}' is listed twice", alt));
      v.frames.push_back(parse_frame(lex, l, alt));
    }
    lex.verbs.push_back(std::move(v));
  }
}

}  // namespace

Lexicon Lexicon::load(const std::string& dir) {
  Lexicon lex;
  load_nouns(lex, dir);
  load_verbs(lex, dir);

  std::set<std::string> verb_forms;
  for (const auto& v : lex.verbs) verb_forms.insert({v.base, v.s3, v.past, v.participle, v.ing});
  for (const auto& n : lex.nouns)
    for (const auto& w : {n.singular, n.plural})
      if (verb_forms.count(w))
        throw mq::Error(fmt::format("{}/nouns.tsv: noun '{}' is spelled like a verb form; pick another noun so the "
                                    "text shows which word is the verb", dir, w));

  for (const auto& l : read_table(dir, "names.txt", 1)) {
    check_word(l, l.cols[0], "name");
    lex.names.push_back(l.cols[0]);
  }
  for (const auto& l : read_table(dir, "pronouns.tsv", 4)) {
    Pronoun p{l.cols[0], l.cols[1], 3, false};
    check_word(l, p.subject, "pronoun");
    check_word(l, p.object, "pronoun");
    if (l.cols[2] != "1" && l.cols[2] != "3") fail(l.where, "person must be 1 or 3");
    if (l.cols[3] != "sg" && l.cols[3] != "pl") fail(l.where, "number must be sg or pl");
    p.person = l.cols[2] == "1" ? 1 : 3;
    p.plural = l.cols[3] == "pl";
    lex.pronouns.push_back(std::move(p));
  }
  for (const auto& l : read_table(dir, "adjectives.tsv", 2)) {
    Adjective a{l.cols[0], {}};
    check_word(l, a.word, "adjective");
    for (const auto& c : split(l.cols[1], ',')) {
      int id = lex.class_id(c);
      if (id < 0) fail(l.where, fmt::format("unknown noun class '{}'", c));
      a.classes.push_back(id);
    }
    lex.adjectives.push_back(std::move(a));
  }
  for (const auto& l : read_table(dir, "adverbs.txt", 1)) {
    check_word(l, l.cols[0], "adverb");
    lex.adverbs.push_back(l.cols[0]);
  }
  for (const auto& l : read_table(dir, "time_cues.tsv", 3)) {
    TimeCue c;
    if (l.cols[0] == "present") c.tense = Tense::present;
    else if (l.cols[0] == "past") c.tense = Tense::past;
    else if (l.cols[0] == "future") c.tense = Tense::future;
    else fail(l.where, fmt::format("tense must be present, past or future, not '{}'", l.cols[0]));
    c.words = words_of(l, l.cols[1], "cue word");
    for (const auto& p : split(l.cols[2], ',')) {
      if (p == "front") c.front = true;
      else if (p == "end") c.end = true;
      else if (p == "mid") c.mid = true;
      else fail(l.where, fmt::format("cue position must be front, end or mid, not '{}'", p));
    }
    if (c.mid && c.words.size() != 1) fail(l.where, "a mid cue must be a single word");
    lex.cues.push_back(std::move(c));
  }
  // Every tense needs a cue that can open or close a sentence: the first sentence always shows one.
  for (Tense t : {Tense::present, Tense::past, Tense::future}) {
    bool ok = false;
    for (const auto& c : lex.cues) ok = ok || (c.tense == t && (c.front || c.end));
    if (!ok)
      throw mq::Error(fmt::format("{}/time_cues.tsv: no front or end cue for the {} tense; add one", dir, tense_name(t)));
  }
  return lex;
}

}  // namespace minigpt
