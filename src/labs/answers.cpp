// Written answers checked against the learner's run (see answers.h).
#include "labs/answers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/core.h>

namespace mqlab {
namespace {

bool word_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }
bool digit(char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; }

// Characters that continue a scheme / config / Linear name: "int4-g64-gptq+a8", "h.3.mlp.c_proj", "auto-2417k".
bool name_char(char ch) { return word_char(ch) || ch == '-' || ch == '+' || ch == '.' || ch == '[' || ch == ']' || ch == '='; }


// The scale a unit printed at t[j] (after at most one space) implies against the run's base units (joules,
// seconds, bytes, FLOP): "mJ" 1e3, "us" / "µs" 1e6, "ns" 1e9, "kB" 1e-3, "MB" 1e-6, "GB/s" 1e-9, "KiB" 1/1024,
// "million" 1e-6; 0 for no unit or one without a prefix ("tokens/s", "J", "vs").
double unit_scale(const std::string& t, size_t j) {
  if (j < t.size() && t[j] == ' ') ++j;
  std::string u;
  bool micro = false;
  if (j + 1 < t.size() && ((static_cast<unsigned char>(t[j]) == 0xC2 && static_cast<unsigned char>(t[j + 1]) == 0xB5) ||
                           (static_cast<unsigned char>(t[j]) == 0xCE && static_cast<unsigned char>(t[j + 1]) == 0xBC)))
    micro = true, j += 2;  // "µ" (micro sign or Greek mu)
  while (j < t.size() && std::isalpha(static_cast<unsigned char>(t[j]))) u += t[j++];
  if (micro) return u.empty() ? 0 : 1e6;
  static const std::map<std::string, double> words = {{"thousand", 1e-3}, {"million", 1e-6}, {"billion", 1e-9}, {"percent", 100},
                                                      {"KiB", 1.0 / 1024}, {"MiB", 1.0 / 1048576}, {"GiB", 1.0 / 1073741824},
                                                      {"k", 1e-3}, {"K", 1e-3}, {"M", 1e-6}, {"G", 1e-9}};
  if (const auto w = words.find(u); w != words.end()) return w->second;
  static const std::map<char, double> prefix = {{'m', 1e3}, {'u', 1e6}, {'n', 1e9}, {'k', 1e-3}, {'K', 1e-3}, {'M', 1e-6}, {'G', 1e-9}};
  static const std::vector<std::string> base = {"J", "s", "W", "B", "Hz", "FLOP", "OP", "nats"};
  if (u.size() >= 2 && prefix.count(u[0]))
    for (const std::string& b : base)
      if (u.compare(1, std::string::npos, b) == 0) return prefix.at(u[0]);
  return 0;
}

// How far a span around a position reaches: to the nearest ". " or line break (a sentence), also "; " (a clause),
// also ", " outside brackets and parentheses ("(44.7% saved), against 0.928 [0.918, 0.947] in prefill" is two).
enum class Span { sentence, clause, comma };

std::pair<size_t, size_t> clause(const std::string& t, size_t at, Span span = Span::clause) {
  const auto ends = [&](size_t i) {  // whether t[i] ends the span
    const bool next_space = i + 1 >= t.size() || t[i + 1] == ' ' || t[i + 1] == '\n';
    const bool mark = t[i] == '.' || (span != Span::sentence && t[i] == ';') || (span == Span::comma && t[i] == ',');
    return t[i] == '\n' || (mark && next_space);
  };
  // Depth of brackets at each position, so a comma inside "[0.540, 0.563]" does not split.
  std::vector<int> depth(t.size() + 1, 0);
  for (size_t i = 0, d = 0; i < t.size(); ++i) {
    if (t[i] == '[' || t[i] == '(') ++d;
    depth[i] = static_cast<int>(d);
    if ((t[i] == ']' || t[i] == ')') && d > 0) --d;
    if (t[i] == '\n') d = 0;
  }
  const auto splits = [&](size_t i) { return ends(i) && (t[i] != ',' || depth[i] == 0); };
  size_t b = 0, e = t.size();
  for (size_t i = at; i > 0; --i)
    if (splits(i - 1)) {
      b = i;
      break;
    }
  for (size_t i = at; i < t.size(); ++i)
    if (splits(i)) {
      e = i;
      break;
    }
  return {b, e};
}

// Whether the mention of a name at [at, end) of `text` is a whole name (see names()).
bool whole_at(const std::string& text, size_t at, size_t end) {
  // Before a name only a letter, digit or '_' continues it ("L3-mlp_down" and "h.3.mlp.c_proj" name "mlp_down"
  // and "mlp.c_proj"); after it any name character does ("int4-g64-gptq" does not name "int4-g64").
  const bool start = at == 0 || !word_char(text[at - 1]);
  // A name may end a sentence ("... int4-g64."): a '.' that is not followed by a name character ends it.
  const bool stop = end >= text.size() || !name_char(text[end]) ||
                    (text[end] == '.' && (end + 1 >= text.size() || !name_char(text[end + 1])));
  return start && stop;
}

// Where `text` names any of `names` (whole names, any case) inside [b, e): (start, end) of each mention.
std::vector<std::pair<size_t, size_t>> mentions(const std::string& low, const std::vector<std::string>& names_, size_t b, size_t e) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const std::string& n : names_) {
    const std::string ln = lower(n);
    for (size_t at = low.find(ln, b); at != std::string::npos && at + ln.size() <= e; at = low.find(ln, at + 1))
      if (whole_at(low, at, at + ln.size())) out.emplace_back(at, at + ln.size());
  }
  return out;
}

bool any_of_names(const std::vector<std::string>& list, const std::string& low, std::pair<size_t, size_t> m) {
  const std::string got = low.substr(m.first, m.second - m.first);
  for (const std::string& n : list)
    if (lower(n) == got) return true;
  return false;
}

void numbers_under(const nlohmann::json& j, const std::vector<std::vector<std::string>>& paths, std::vector<std::string>& at,
                   std::vector<double>& out) {
  if (j.is_number()) {
    for (const auto& p : paths) {
      bool match = p.size() <= at.size();
      for (size_t i = 0; match && i < p.size(); ++i) match = p[i] == "*" || p[i] == at[i];
      if (match) {
        out.push_back(j.get<double>());
        return;
      }
    }
    return;
  }
  if (j.is_array()) {
    at.push_back("[]");
    for (const auto& v : j) numbers_under(v, paths, at, out);
    at.pop_back();
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "values" || k == "outliers") continue;
      at.push_back(k);
      numbers_under(v, paths, at, out);
      at.pop_back();
    }
  }
}

}  // namespace

std::map<int, std::string> answer_sections(const std::string& text, int questions) {
  std::map<int, std::string> out;
  std::istringstream in(text);
  std::string line;
  int current = 0;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      current = 0;
      if (line.rfind("## ", 0) == 0) {
        size_t i = 3, n = 0;
        int v = 0;
        while (i < line.size() && digit(line[i]) && n < 3) v = v * 10 + (line[i++] - '0'), ++n;
        if (n > 0 && i < line.size() && line[i] == '.' && v >= 1 && v <= questions) current = v;
      }
      continue;
    }
    if (current) out[current] += line + "\n";
  }
  for (int q = 1; q <= questions; ++q) out[q];  // every question present, "" when missing
  return out;
}

std::vector<Cited> cited_numbers(const std::string& t) {
  std::vector<Cited> out;
  const size_t n = t.size();
  size_t i = 0;
  while (i < n) {
    if (!digit(t[i])) {
      ++i;
      continue;
    }
    // Digits that continue a name (int4, g64, h.3, e2m8l2, 2024-05-01's later parts) are not a number.
    const char prev = i > 0 ? t[i - 1] : ' ';
    const bool in_name = word_char(prev) || prev == '.' || (prev == '-' && i > 1 && word_char(t[i - 2]));
    size_t j = i;
    while (j < n && digit(t[j])) ++j;
    if (in_name) {
      while (j < n && (word_char(t[j]) || t[j] == '.')) ++j;
      i = j;
      continue;
    }
    int decimals = 0;
    if (j + 1 < n && t[j] == '.' && digit(t[j + 1])) {
      ++j;
      while (j < n && digit(t[j])) ++j, ++decimals;
    }
    const size_t mantissa_end = j;
    int exponent = 0;
    if (j + 1 < n && (t[j] == 'e' || t[j] == 'E')) {
      size_t k = j + 1;
      if (k < n && (t[k] == '-' || t[k] == '+')) ++k;
      if (k < n && digit(t[k])) {
        while (k < n && digit(t[k])) ++k;
        exponent = std::stoi(t.substr(j + 1, k - j - 1));
        j = k;
      }
    }
    Cited c;
    c.at = i;
    c.text = t.substr(i, j - i);
    c.value = std::stod(c.text);
    c.unit = std::pow(10.0, exponent - decimals);
    // Significant digits of the mantissa: from its first non-zero digit; an integer's trailing zeros do not count.
    std::string m = t.substr(i, mantissa_end - i);
    std::string ds;
    for (char ch : m)
      if (digit(ch)) ds += ch;
    const size_t first = ds.find_first_not_of('0');
    if (first == std::string::npos) {
      c.significant = 0;
    } else {
      std::string sig = ds.substr(first);
      if (decimals == 0) {
        const size_t last = sig.find_last_not_of('0');
        sig = sig.substr(0, last + 1);
      }
      c.significant = static_cast<int>(sig.size());
    }
    if (j < n && t[j] == '%') {
      c.suffix = '%';
      ++j;
    } else if (j < n && t[j] == 'x' && (j + 1 >= n || !word_char(t[j + 1]))) {
      c.suffix = 'x';
      ++j;
    } else if (j + 1 < n && static_cast<unsigned char>(t[j]) == 0xC3 && static_cast<unsigned char>(t[j + 1]) == 0x97) {  // "×"
      c.suffix = 'x';
      j += 2;
    }
    if (!c.suffix) c.scale = unit_scale(t, j);
    out.push_back(c);
    i = j;
  }
  return out;
}

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool printed_as(const Cited& c, double v) {
  if (!std::isfinite(v)) return false;
  // The JSONs hold fractions, never percentages; joules, seconds and bytes, never milli- or mega-.
  // A printed prefix is taken at its word: "2.72 MB" is 2.72e6 bytes, never a ratio of 2.72.
  const std::vector<double> scales = c.suffix == '%' ? std::vector<double>{100.0}
                                     : c.scale > 0   ? std::vector<double>{c.scale}
                                                     : std::vector<double>{1.0};
  // Rounded (within half a unit of the last digit either way) or truncated (up to a unit above it).
  const double slack = 1e-9 * c.unit;
  for (double k : scales) {
    const double x = std::fabs(v) * k, p = std::fabs(c.value);
    if (x >= p - 0.5 * c.unit - slack && x < p + c.unit - slack) return true;
  }
  return false;
}

void json_numbers(const nlohmann::json& j, std::vector<double>& out) {
  if (j.is_number()) {
    out.push_back(j.get<double>());
  } else if (j.is_object() || j.is_array()) {
    for (const auto& v : j) json_numbers(v, out);
  }
}

std::vector<CitedInterval> cited_intervals(const std::string& t) {
  std::vector<CitedInterval> out;
  for (size_t open = t.find('['); open != std::string::npos; open = t.find('[', open + 1)) {
    const size_t close = t.find(']', open);
    if (close == std::string::npos) break;
    const std::string inner = t.substr(open + 1, close - open - 1);
    const size_t comma = inner.find(',');
    if (comma == std::string::npos || inner.find(',', comma + 1) != std::string::npos) continue;
    // Each side: one number, signed by a '-' (or U+2212) before it.
    const auto side = [&](const std::string& s, Cited& c) {
      const std::vector<Cited> n = cited_numbers(s);
      if (n.size() != 1) return false;
      c = n[0];
      const std::string before = s.substr(0, n[0].at);
      if (before.find('-') != std::string::npos || before.find("\xE2\x88\x92") != std::string::npos) c.value = -c.value;
      return before.find_first_not_of(" +-\xE2\x88\x92") == std::string::npos;
    };
    CitedInterval iv;
    if (side(inner.substr(0, comma), iv.lo) && side(inner.substr(comma + 1), iv.hi)) out.push_back(iv);
  }
  return out;
}

double copied_share(const std::string& text, const std::string& reference) {
  const auto words = [](const std::string& s) {
    std::vector<std::string> w;
    std::string cur;
    for (char ch : lower(s)) {
      if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-') {
        cur += ch;
      } else if (!cur.empty()) {
        w.push_back(cur);
        cur.clear();
      }
    }
    if (!cur.empty()) w.push_back(cur);
    for (std::string& x : w)  // "these." is "these"; "15.27" keeps its point
      while (!x.empty() && x.back() == '.') x.pop_back();
    return w;
  };
  const auto runs = [](const std::vector<std::string>& w) {
    std::set<std::string> r;
    for (size_t i = 0; i + 8 <= w.size(); ++i) {
      std::string k;
      for (size_t j = i; j < i + 8; ++j) k += w[j] + ' ';
      r.insert(k);
    }
    return r;
  };
  const std::set<std::string> ref = runs(words(reference)), mine = runs(words(text));
  if (ref.empty()) return 0;
  size_t shared = 0;
  for (const std::string& k : ref) shared += mine.count(k);
  return static_cast<double>(shared) / static_cast<double>(ref.size());
}


std::vector<double> json_numbers_under(const nlohmann::json& j, const std::vector<std::string>& paths) {
  std::vector<std::vector<std::string>> split;
  for (const std::string& p : paths) {
    std::vector<std::string> parts;
    size_t b = 0;
    for (size_t e = p.find('.'); ; e = p.find('.', b)) {
      parts.push_back(p.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    split.push_back(parts);
  }
  std::vector<double> out;
  std::vector<std::string> at;
  numbers_under(j, split, at, out);
  return out;
}

std::vector<double> json_numbers_under(const std::vector<const nlohmann::json*>& of, const std::vector<std::string>& paths) {
  std::vector<double> out;
  for (const nlohmann::json* j : of) {
    const std::vector<double> v = json_numbers_under(*j, paths);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

std::vector<std::pair<double, double>> json_intervals(const std::vector<const nlohmann::json*>& of) {
  std::vector<std::pair<double, double>> out;
  const auto walk = [&](const auto& self, const nlohmann::json& j) -> void {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        if (k.size() > 4 && k.compare(k.size() - 4, 4, "_low") == 0 && it->is_number()) {
          const std::string hi = k.substr(0, k.size() - 4) + "_high";
          if (j.contains(hi) && j[hi].is_number()) out.emplace_back(it->get<double>(), j[hi].get<double>());
        }
        if (k.size() >= 4 && k.compare(k.size() - 4, 4, "ci95") == 0 && it->is_array() && it->size() == 2 && (*it)[0].is_number() &&
            (*it)[1].is_number())
          out.emplace_back((*it)[0].get<double>(), (*it)[1].get<double>());
        self(self, *it);
      }
    } else if (j.is_array()) {
      for (const nlohmann::json& v : j) self(self, v);
    }
  };
  for (const nlohmann::json* j : of) walk(walk, *j);
  return out;
}

size_t first_named_at(const std::string& text_any_case, const std::string& name_any_case) {
  if (name_any_case.empty()) return std::string::npos;
  const std::string text = lower(text_any_case), name = lower(name_any_case);
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1))
    if (whole_at(text, at, at + name.size())) return at;
  return std::string::npos;
}

bool names(const std::string& text, const std::string& name) { return first_named_at(text, name) != std::string::npos; }

void check_answer(Checks& c, const std::string& lab_block, int q, const std::string& text, const AnswerRules& r) {
  if (text.find("TODO") != std::string::npos)
    throw std::runtime_error(fmt::format("{}: not implemented yet: answer {} still says TODO", lab_block, q));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    c.expect(false, fmt::format("answer {}", q), "an answer under its heading", "empty or missing");
    return;
  }
  const std::vector<Cited> nums = cited_numbers(text);
  const auto known = [&](const Cited& x) {
    if (r.leaves)
      for (double v : *r.leaves)
        if (printed_as(x, v)) return true;
    for (const Fact& f : r.derived)
      if (printed_as(x, f.value)) return true;
    for (const auto& [what, facts] : r.wanted)
      for (const Fact& f : facts)
        if (printed_as(x, f.value)) return true;
    return false;
  };
  std::string unknown;
  int checked = 0;
  for (const Cited& x : nums) {
    if (x.significant < 3) continue;  // "5%", "2 threads": too coarse to tell a measured number from another
    ++checked;
    if (!known(x) && unknown.empty()) unknown = x.text;
  }
  c.expect(unknown.empty() && (!nums.empty() || !r.require_number), fmt::format("answer {}: the numbers it cites", q),
           "numbers from your run, rounded as printed (every one with 3 or more significant digits is looked up)",
           nums.empty() ? (r.require_number ? "no number cited" : "none cited")
           : unknown.empty()
               ? fmt::format("{} cited, {} looked up, all found", nums.size(), checked)
               : fmt::format("{} is not in your run's JSON nor one of the quantities the question asks for", unknown));
  if (!r.run_intervals.empty()) {
    std::string bad;
    for (const CitedInterval& iv : cited_intervals(text)) {
      bool ok = false;
      for (const auto& [lo, hi] : r.run_intervals) ok = ok || (printed_as(iv.lo, lo) && printed_as(iv.hi, hi));
      if (!ok && bad.empty()) bad = fmt::format("[{}, {}]", iv.lo.text, iv.hi.text);
    }
    c.expect(bad.empty(), fmt::format("answer {}: the intervals it cites", q), "intervals of your run, both ends as printed",
             bad.empty() ? "all found" : bad + " is not an interval of the rows the question asks about");
  }
  for (const auto& [what, facts] : r.wanted) {
    bool found = false;
    for (const Cited& x : nums)
      for (const Fact& f : facts) found = found || (x.significant >= 2 && printed_as(x, f.value));
    c.expect(found, fmt::format("answer {}: {}", q, what), "cited from your run (2 or more significant digits)",
             found ? "cited" : "not cited");
  }
  if (!r.names_all.empty() || !r.names_any.empty()) {
    // Counts, not the names: the answer is for the learner to read off the run, not off the grader.
    int named = 0;
    for (const std::string& n : r.names_all) named += names(text, n);
    bool any = r.names_any.empty();
    for (const std::string& n : r.names_any) any = any || names(text, n);
    const bool ok = named == static_cast<int>(r.names_all.size()) && any;
    std::string got = ok ? "named" : "";
    if (named < static_cast<int>(r.names_all.size())) got = fmt::format("names {} of the {} {}", named, r.names_all.size(), r.names_what);
    if (!any) got += std::string(got.empty() ? "" : "; ") + "does not name the " + r.names_what;
    c.expect(ok, fmt::format("answer {}: names {}", q, r.names_what), "named as your run's data says", got);
  }
  const std::string low = lower(text);
  if (!r.mentions_any.empty()) {
    bool found = false;
    for (const std::string& m : r.mentions_any) found = found || low.find(m) != std::string::npos;
    c.expect(found, fmt::format("answer {}: says {}", q, r.mentions_what), "as your run records it", found ? "said" : "not said");
  }
  if (!r.claim_right.empty()) {
    // The first claim: the earliest of the words, skipping negated ones.
    size_t best = std::string::npos;
    bool right = false;
    for (int side = 0; side < 2; ++side)
      for (const std::string& w : side == 0 ? r.claim_right : r.claim_wrong)
        for (size_t at = low.find(w); at != std::string::npos; at = low.find(w, at + 1)) {
          const bool negated = (at >= 4 && low.compare(at - 4, 4, "not ") == 0) || (at >= 3 && low.compare(at - 3, 3, "no ") == 0);
          if (negated || (at > 0 && word_char(low[at - 1]))) continue;
          if (at < best) best = at, right = side == 0;
          break;
        }
    const std::string what = r.claim_what.empty() ? r.mentions_what : r.claim_what;
    c.expect(best != std::string::npos && right, fmt::format("answer {}: its first claim", q), what,
             best == std::string::npos ? "no claim"
             : right                   ? "as your run records it"
                                       : fmt::format("\"{}\": the opposite of what your run records", low.substr(best, 24)));
  }
  if (!r.intervals.empty()) {
    bool found = false;
    for (const CitedInterval& iv : cited_intervals(text))
      for (const auto& [lo, hi] : r.intervals)
        found = found || (printed_as(iv.lo, lo) && printed_as(iv.hi, hi) && (iv.lo.value < 0) == (lo < 0) && (iv.hi.value < 0) == (hi < 0));
    c.expect(found, fmt::format("answer {}: {}", q, r.interval_what), "cited as [low, high] from your run",
             found ? "cited" : cited_intervals(text).empty() ? "no interval cited" : "an interval that is not this one");
  }
  if (!r.attributions.empty()) {
    // Each cited number that is one of an attribution's facts: the name nearest to it in its clause.
    std::vector<std::string> all;
    for (const Attribution& a : r.attributions) all.insert(all.end(), a.right.begin(), a.right.end()), all.insert(all.end(), a.wrong.begin(), a.wrong.end());
    std::string bad;
    for (const Cited& x : nums) {
      if (x.significant < 2) continue;
      // The nearest name in its comma clause; else the nearest before it in its sentence, else after it.
      const auto dist = [&](std::pair<size_t, size_t> m) { return m.second <= x.at ? x.at - m.second : m.first - x.at + 1; };
      const auto [cb, ce] = clause(text, x.at, Span::comma);
      auto ms = mentions(low, all, cb, ce);
      if (ms.empty()) {
        const auto [b, e] = clause(text, x.at);
        ms = mentions(low, all, b, e);
        const auto before_x = [&](std::pair<size_t, size_t> m) { return m.second <= x.at; };
        if (std::any_of(ms.begin(), ms.end(), before_x)) ms.erase(std::remove_if(ms.begin(), ms.end(), [&](auto m) { return !before_x(m); }), ms.end());
      }
      if (ms.empty()) continue;
      std::pair<size_t, size_t> near = ms.front();
      for (const auto& m : ms)
        if (dist(m) < dist(near)) near = m;
      bool ok_somewhere = false, wrong_somewhere = false;
      for (const Attribution& a : r.attributions) {
        bool is_fact = false;
        for (const Fact& f : a.facts) is_fact = is_fact || printed_as(x, f.value);
        if (!is_fact) continue;
        ok_somewhere = ok_somewhere || any_of_names(a.right, low, near);
        wrong_somewhere = wrong_somewhere || any_of_names(a.wrong, low, near);
      }
      if (wrong_somewhere && !ok_somewhere && bad.empty())
        bad = fmt::format("{} is given to {}, whose number it is not in your run", x.text, text.substr(near.first, near.second - near.first));
    }
    c.expect(bad.empty(), fmt::format("answer {}: whose numbers", q), "each cited number next to the name it belongs to", bad.empty() ? "as your run says" : bad);
  }
  if (!r.better.empty() && !r.worse.empty()) {
    // "A beats B": the name before the verb, in its clause.
    static const std::vector<std::pair<std::string, bool>> verbs = {
        {"beats", true}, {"outperforms", true}, {"is better than", true}, {"better than", true}, {"wins over", true},
        {"improves on", true}, {"improves over", true}, {"is worse than", false}, {"worse than", false}, {"loses to", false},
        {"trails", false}};
    std::vector<std::string> both = r.better;
    both.insert(both.end(), r.worse.begin(), r.worse.end());
    std::string bad;
    for (const auto& [v, says_better] : verbs)
      for (size_t at = low.find(v); at != std::string::npos && bad.empty(); at = low.find(v, at + 1)) {
        if ((at > 0 && word_char(low[at - 1])) || (at >= 4 && low.compare(at - 4, 4, "not ") == 0)) continue;
        const auto [b, e] = clause(text, at);
        const auto ms = mentions(low, both, b, at);
        if (ms.empty()) continue;
        std::pair<size_t, size_t> subject = ms.front();
        for (const auto& m : ms)
          if (m.second > subject.second) subject = m;
        if (any_of_names(says_better ? r.worse : r.better, low, subject))
          bad = fmt::format("\"{} {}\": your run says the opposite", text.substr(subject.first, subject.second - subject.first), v);
      }
    c.expect(bad.empty(), fmt::format("answer {}: which is better", q), "as your run says", bad.empty() ? "no claim against your run" : bad);
  }
  if (!r.owners.empty()) {
    std::string bad;
    for (const Cited& x : nums) {
      if (x.significant < 3 || !bad.empty()) continue;
      const auto [b, e] = clause(text, x.at);
      bool named_any = false, of_named = false;
      std::string whose;
      for (const auto& [name, values] : r.owners) {
        bool mine = false;
        for (double v : values) mine = mine || printed_as(x, v);
        const bool named = !mentions(low, {name}, b, e).empty();
        named_any = named_any || named;
        of_named = of_named || (named && mine);
        if (mine && !named && whose.empty()) whose = name;
      }
      if (named_any && !of_named && !whose.empty())
        bad = fmt::format("{} is {}'s, which its clause does not name", x.text, whose);
    }
    c.expect(bad.empty(), fmt::format("answer {}: whose rows", q), "each number from the row of a name in its clause",
             bad.empty() ? "as your run says" : bad);
  }
  if (!r.names_only_negated.empty()) {
    static const std::vector<std::string> negations = {"not ", "n't", "dominated", "beaten", "outside", "off the", "behind", "worse",
                                                       "excluded", "no "};
    std::string bad;
    for (const std::string& n : r.names_only_negated)
      for (const auto& m : mentions(low, {n}, 0, low.size())) {
        // The sentence, not the clause: "Beaten on both: fp32 (...) by int8; fp16 (...) by int8." is one claim.
        const auto [b, e] = clause(text, m.first, Span::sentence);
        const std::string sentence = low.substr(b, e - b);
        bool negated = false;
        for (const std::string& w : negations) negated = negated || sentence.find(w) != std::string::npos;
        if (!negated && bad.empty()) bad = fmt::format("names {} without saying it is not one", text.substr(m.first, m.second - m.first));
      }
    c.expect(bad.empty(), fmt::format("answer {}: no {}", q, r.negated_what), "named only as not one (dominated, not on it)",
             bad.empty() ? "none" : bad);
  }
}

}  // namespace mqlab
