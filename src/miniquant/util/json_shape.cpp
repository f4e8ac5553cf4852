// Structural checks of parsed JSON against a spec (json_shape.h).
#include "miniquant/util/json_shape.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include <fmt/core.h>

#include "miniquant/util/error.h"
#include "miniquant/util/json_checked.h"

namespace mq {
namespace {

using nlohmann::json;

bool is_type(const json& v, std::string_view t) {
  if (t == "any") return true;
  if (t == "number") return v.is_number() && std::isfinite(v.get<double>());
  if (t == "int" || t == "int64") {
    const int64_t lo = t == "int" ? INT32_MIN : INT64_MIN, hi = t == "int" ? INT32_MAX : INT64_MAX;
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(hi);
    return v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  }
  if (t == "bool") return v.is_boolean();
  if (t == "string") return v.is_string();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  throw Error(fmt::format("json shape: unknown type \"{}\" in a spec", t));  // a programming error, not the file's
}

// "a finite number", "an integer in int32", ... for messages.
std::string describe(std::string_view t) {
  if (t == "number") return "a finite number";
  if (t == "int") return "an integer that fits 32 bits";
  if (t == "int64") return "an integer that fits 64 bits";
  if (t == "bool") return "true or false";
  if (t == "object") return "an object";
  if (t == "array") return "an array";
  return std::string(t == "string" ? "a string" : t);
}

struct Mismatch {
  std::string path, what;
};

std::string child(const std::string& path, const std::string& key) { return path + "/" + clip_text(key, 40); }

// Returns the first mismatch, or nothing.
std::optional<Mismatch> mismatch(const json& v, const json& spec, const std::string& path) {
  if (spec.is_string()) {
    const std::string& types = spec.get_ref<const std::string&>();
    std::string wanted;
    size_t from = 0;
    while (true) {
      const size_t bar = types.find('|', from);
      const std::string_view t = std::string_view(types).substr(from, bar == std::string::npos ? std::string::npos : bar - from);
      if (is_type(v, t)) return std::nullopt;
      wanted += (wanted.empty() ? "" : " or ") + describe(t);
      if (bar == std::string::npos) break;
      from = bar + 1;
    }
    return Mismatch{path, fmt::format("expected {}, got {}", wanted, json_summary(v))};
  }
  if (spec.is_array()) {
    if (!v.is_array()) return Mismatch{path, fmt::format("expected an array, got {}", json_summary(v))};
    for (size_t i = 0; i < v.size(); ++i)
      if (auto m = mismatch(v[i], spec.at(0), path + "/" + std::to_string(i))) return m;
    return std::nullopt;
  }
  // An object spec: alternatives, or keys.
  if (spec.size() == 1 && spec.contains("|")) {
    std::optional<Mismatch> first;
    for (const json& alt : spec.at("|")) {
      auto m = mismatch(v, alt, path);
      if (!m) return std::nullopt;
      // Report the alternative that got furthest into the value (the longest path).
      if (!first || m->path.size() > first->path.size()) first = std::move(m);
    }
    return first;
  }
  if (!v.is_object()) return Mismatch{path, fmt::format("expected an object, got {}", json_summary(v))};
  const json* others = nullptr;
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    std::string key = it.key();
    if (key == "*") {
      others = &it.value();
      continue;
    }
    const bool optional = key.ends_with('?');
    if (optional) key.pop_back();
    const auto found = v.find(key);
    if (found == v.end()) {
      if (optional) continue;
      return Mismatch{path.empty() ? "/" : path, fmt::format("key \"{}\" is missing", key)};
    }
    if (auto m = mismatch(*found, it.value(), child(path, key))) return m;
  }
  if (others)
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (spec.contains(it.key()) || spec.contains(it.key() + "?")) continue;
      if (auto m = mismatch(it.value(), *others, child(path, it.key()))) return m;
    }
  return std::nullopt;
}

}  // namespace

void check_json_shape(const json& value, const json& spec, const std::string& file, const std::string& at) {
  if (auto m = mismatch(value, spec, at))
    throw Error(fmt::format("{}: {}: {}; the file is corrupt or not the one meant", file, m->path.empty() ? "/" : m->path, m->what));
}

}  // namespace mq
