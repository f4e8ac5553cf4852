// Option checks with short, readable messages, and the one strict parser of numbers and lists in options
// (what it does not fully consume is refused). CLI11's PositiveNumber / NonNegativeNumber print their bound
// as the largest double (~310 digits) and let "nan" through; these do neither.
#pragma once
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "miniquant/error.h"

namespace mqcli {

namespace detail {
// A number >= lo (> lo when strict); the message names the bound as the user would write it.
inline CLI::Validator number_at_least(double lo, bool strict, const char* desc) {
  return CLI::Validator(
      [lo, strict, desc](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
          return fmt::format("'{}' is not a finite number", s);
        if (strict ? !(v > lo) : !(v >= lo)) return fmt::format("'{}' must be {}", s, desc);
        return {};
      },
      desc);
}
}  // namespace detail

inline const CLI::Validator Positive = detail::number_at_least(0.0, true, "a positive number");
inline const CLI::Validator NonNegative = detail::number_at_least(0.0, false, "a number >= 0");

// Scheme lists: each value may hold several names separated by commas and/or spaces, so
// `--schemes a,b`, `--schemes a b` and `--schemes "a, b"` all mean the same two schemes. A comma inside
// brackets belongs to its name: `q4_k[prefill=+a8,decode=weight-only]` is one phase split (as --splits
// reads it), not two halves.
inline std::vector<std::string> split_names(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::string cur;
    int depth = 0;
    for (char c : v) {
      if (c == '[') ++depth;
      if (c == ']' && depth > 0) --depth;
      if (depth == 0 && (c == ',' || std::isspace(static_cast<unsigned char>(c)))) {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

// split_names of a list the user gave explicitly: an empty one (`--schemes ""`, `--schemes ,`) is a usage
// error, not "the default list" and not "nothing to do".
inline std::vector<std::string> split_names_given(const std::vector<std::string>& values, const std::string& flag) {
  std::vector<std::string> out = split_names(values);
  if (out.empty()) throw mq::UsageError(fmt::format("{} is empty: name at least one", flag));
  return out;
}

// The one strict integer parser of the options: decimal digits only, all of `text` consumed (no sign, no
// space, no "0x", no leading zero, no trailing text), within [lo, hi]. std::stoi read `1x` as 1 and ` 0` as 0.
inline long parse_int_strict(const std::string& text, const std::string& what, long lo, long hi) {
  // No leading zero either ("01"): a value prints back as typed, as the Slurm scripts' checks also require.
  const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos &&
                      (text.size() == 1 || text[0] != '0');
  if (!digits) throw mq::UsageError(fmt::format("{} '{}': expected an integer (decimal digits only)", what, text));
  const long v = std::stol(text);
  if (v < lo || v > hi) throw mq::UsageError(fmt::format("{} {}: must be in [{}, {}]", what, text, lo, hi));
  return v;
}

// A shard "i/n": exactly two strict integers around one '/', n >= 1 and i < n.
inline std::pair<int, int> parse_shard(const std::string& text, const std::string& flag) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || text.find('/', slash + 1) != std::string::npos)
    throw mq::UsageError(fmt::format("{} '{}': expected i/n, e.g. 0/2", flag, text));
  // The messages name the whole value the user typed, then the part that is wrong.
  const int n = static_cast<int>(parse_int_strict(text.substr(slash + 1), fmt::format("{} '{}': n", flag, text), 1, 100000));
  const int i = static_cast<int>(parse_int_strict(text.substr(0, slash), fmt::format("{} '{}': i", flag, text), 0, n - 1));
  return {i, n};
}

// A folder the command reads (mixed --runs): given, existing, a folder. "" read as the current folder,
// a file or /dev/null as "no units" before.
inline void check_input_folder(const std::string& flag, const std::string& path) {
  if (path.empty()) throw mq::UsageError(fmt::format("{} is empty: give a folder", flag));
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw mq::UsageError(fmt::format("{} '{}': no such folder", flag, path));
  if (!std::filesystem::is_directory(path, ec)) throw mq::UsageError(fmt::format("{} '{}': not a folder", flag, path));
}

}  // namespace mqcli
