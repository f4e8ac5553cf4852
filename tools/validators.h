// Option checks with short, readable messages. CLI11's PositiveNumber / NonNegativeNumber print
// their bound as the largest double (~310 digits) and let "nan" through; these do neither.
#pragma once
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
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
// `--schemes a,b`, `--schemes a b` and `--schemes "a, b"` all mean the same two schemes.
inline std::vector<std::string> split_names(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::string cur;
    for (char c : v) {
      if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
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

// split_names of a list the user gave explicitly: an empty one (`--schemes ""`) is a usage error, not
// "the default list" and not "nothing to do".
inline std::vector<std::string> split_names_given(const std::vector<std::string>& values, const std::string& flag) {
  std::vector<std::string> out = split_names(values);
  if (out.empty()) throw mq::UsageError(fmt::format("{} is empty: name at least one", flag));
  return out;
}

}  // namespace mqcli
