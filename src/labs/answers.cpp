// Written answers checked against the learner's run (see answers.h).
#include "labs/answers.h"

#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <fmt/core.h>

namespace mqlab {
namespace {

bool word_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }
bool digit(char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; }

// Characters that continue a scheme / config / Linear name: "int4-g64-gptq+a8", "h.3.mlp.c_proj", "auto-2417k".
bool name_char(char ch) { return word_char(ch) || ch == '-' || ch == '+' || ch == '.' || ch == '[' || ch == ']' || ch == '='; }

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
    out.push_back(c);
    i = j;
  }
  return out;
}

bool printed_as(const Cited& c, double v) {
  if (!std::isfinite(v)) return false;
  static const std::vector<double> plain = {1.0, 100.0, 1e3, 1e6, 1e9, 1e-6, 1.0 / 1024.0, 1.0 / 1048576.0};
  static const std::vector<double> percent = {100.0};  // the JSONs hold fractions, never percentages
  static const std::vector<double> times = {1.0};
  const std::vector<double>& scales = c.suffix == '%' ? percent : c.suffix == 'x' ? times : plain;
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

bool names(const std::string& text, const std::string& name) {
  if (name.empty()) return false;
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    // Before a name only a letter, digit or '_' continues it ("L3-mlp_down" and "h.3.mlp.c_proj" name "mlp_down"
    // and "mlp.c_proj"); after it any name character does ("int4-g64-gptq" does not name "int4-g64").
    const bool start = at == 0 || !word_char(text[at - 1]);
    const size_t end = at + name.size();
    // A name may end a sentence ("... int4-g64."): a '.' that is not followed by a name character ends it.
    const bool stop = end >= text.size() || !name_char(text[end]) ||
                      (text[end] == '.' && (end + 1 >= text.size() || !name_char(text[end + 1])));
    if (start && stop) return true;
  }
  return false;
}

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
  if (!r.mentions_any.empty()) {
    std::string low;
    for (char ch : text) low += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    bool found = false;
    for (const std::string& m : r.mentions_any) found = found || low.find(m) != std::string::npos;
    c.expect(found, fmt::format("answer {}: says {}", q, r.mentions_what), "as your run records it", found ? "said" : "not said");
    if (!r.claim_right.empty()) {
      // The first claim: the earliest of the words, skipping negated ones.
      size_t best = std::string::npos;
      bool right = false;
      for (int side = 0; side < 2; ++side)
        for (const std::string& w : side == 0 ? r.claim_right : r.claim_wrong)
          for (size_t at = low.find(w); at != std::string::npos; at = low.find(w, at + 1)) {
            const bool negated = (at >= 4 && low.compare(at - 4, 4, "not ") == 0) || (at >= 3 && low.compare(at - 3, 3, "no ") == 0);
            if (negated) continue;
            if (at < best) best = at, right = side == 0;
            break;
          }
      c.expect(best != std::string::npos && right, fmt::format("answer {}: its first claim", q), r.mentions_what,
               best == std::string::npos ? "no claim" : right ? "as your run records it" : "the opposite of what your run records");
    }
  }
}

}  // namespace mqlab
