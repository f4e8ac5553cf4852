// Untrusted JSON (file headers, metadata, config files): a parse that bounds nesting depth and
// rejects duplicate keys, typed getters with range checks, and a bounded one-line summary of a
// value for error messages (dump() recurses per nesting level and can print megabytes).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mq {

// Deeper than any file of ours; deep enough that recursive nlohmann operations (copy, dump,
// comparison) on a parsed value stay far from the stack limit.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; throws mq::Error "<what>: ..." for invalid JSON, nesting deeper than max_depth,
// or a key repeated within one object (nlohmann would silently keep the last one).
nlohmann::json parse_json_checked(std::string_view text, const std::string& what, int max_depth = kMaxJsonDepth);

// One line describing `v` for a message: scalars as text (strings quoted and truncated to about
// max_chars), containers as "array of N elements" / "object with N keys". Never recurses.
std::string json_summary(const nlohmann::json& v, size_t max_chars = 40);

// `s` cut to about max_chars for a message ("abc... (40000 chars)"): keys and names from a file
// can be arbitrarily long.
std::string clip_text(std::string_view s, size_t max_chars = 60);

// An integer value in [lo, hi]; throws mq::Error "<what> must be an integer in [lo, hi], got ...".
int64_t json_int(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi);
// An unsigned integer (any uint64 value); throws mq::Error naming `what` otherwise.
uint64_t json_uint64(const nlohmann::json& v, const std::string& what);
// A finite number (integer or float); throws mq::Error naming `what` otherwise.
double json_finite(const nlohmann::json& v, const std::string& what);
// A string; throws mq::Error naming `what` otherwise.
std::string json_string(const nlohmann::json& v, const std::string& what);

}  // namespace mq
