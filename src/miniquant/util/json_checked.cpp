// Depth- and duplicate-checked JSON parsing, bounded summaries and range-checked getters.
#include "miniquant/util/json_checked.h"

#include <cmath>
#include <set>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mq {
namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] " and may quote a whole
// (possibly huge) token after "last read:": keep the reason, drop the prefix, cap the length.
std::string short_reason(const char* what) {
  std::string s(what);
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  constexpr size_t kMax = 160;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

std::string truncated(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  return fmt::format("{}... ({} chars)", s.substr(0, max_chars), s.size());
}

}  // namespace

std::string clip_text(std::string_view s, size_t max_chars) { return truncated(s, max_chars); }

nlohmann::json parse_json_checked(std::string_view text, const std::string& what, int max_depth) {
  // One key set per open container (arrays get an unused one), so duplicates are found per object.
  std::vector<std::set<std::string>> keys;
  using E = nlohmann::json::parse_event_t;
  auto cb = [&](int depth, E event, nlohmann::json& parsed) -> bool {
    switch (event) {
      case E::object_start:
      case E::array_start:
        // Refuse before the parser builds anything deeper.
        if (depth >= max_depth)
          throw Error(fmt::format("{}: JSON nested deeper than {} levels; the data is corrupt", what, max_depth));
        keys.emplace_back();
        break;
      case E::object_end:
      case E::array_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case E::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          throw Error(fmt::format("{}: duplicate JSON key {}; each key may appear once", what,
                                  json_summary(parsed, 60)));
        break;
      case E::value:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), cb);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON ({})", what, short_reason(e.what())));
  }
}

std::string json_summary(const nlohmann::json& v, size_t max_chars) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: return fmt::format("an object with {} keys", v.size());
    case nlohmann::json::value_t::array: return fmt::format("an array of {} elements", v.size());
    case nlohmann::json::value_t::string: return fmt::format("\"{}\"", truncated(v.get_ref<const std::string&>(), max_chars));
    case nlohmann::json::value_t::binary: return "binary data";
    case nlohmann::json::value_t::discarded: return "a discarded value";
    default: return truncated(v.dump(), max_chars);  // null, boolean, number: scalars, dump() does not recurse
  }
}

int64_t json_int(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi) {
  auto fail = [&] {
    return Error(fmt::format("{} must be an integer in [{}, {}], got {}", what, lo, hi, json_summary(v)));
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX) || static_cast<int64_t>(u) > hi || static_cast<int64_t>(u) < lo) throw fail();
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer()) throw fail();
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) throw fail();
  return i;
}

uint64_t json_uint64(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  throw Error(fmt::format("{} must be a non-negative integer, got {}", what, json_summary(v)));
}

double json_finite(const nlohmann::json& v, const std::string& what) {
  // nlohmann parses overflowing literals such as 1e999 to inf: refuse those too.
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw Error(fmt::format("{} must be a finite number, got {}", what, json_summary(v)));
  return v.get<double>();
}

std::string json_string(const nlohmann::json& v, const std::string& what) {
  if (!v.is_string()) throw Error(fmt::format("{} must be a string, got {}", what, json_summary(v)));
  return v.get<std::string>();
}

}  // namespace mq
