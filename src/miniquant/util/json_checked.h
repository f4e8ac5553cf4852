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

// What a parsed document may cost in memory, per byte of its text (plus 1 MiB): the parse estimates
// the bytes of every value it builds (a value 32, an object member 96 plus a long key, a container
// 96, a long string its length; a text of empty arrays "[[],[],..." measured 84 bytes per "[],") and
// stops at the budget. Our files stay at or below ~11x (a safetensors header entry ~11x, pretty-printed
// results far less); hostile texts such as "[[],[],..." or {"a":0,...} reach 18-32x and are refused, so
// memory stays near 16x the file's size cap (an 80 MB header once took 2.07 GB).
inline constexpr size_t kJsonBytesPerTextByte = 16;
// The largest JSON file read by default: the biggest we write (experiments/27-mixed-epi/results.json)
// is 0.8 MB. Readers of smaller files pass smaller caps.
inline constexpr size_t kMaxJsonFileBytes = size_t{16} << 20;

// Parses `text`; throws mq::Error "<what>: ..." for invalid JSON, nesting deeper than max_depth,
// a key repeated within one object (nlohmann would silently keep the last one), or a document
// whose estimated memory exceeds max_dom_bytes (0: kJsonBytesPerTextByte x text size + 1 MiB).
nlohmann::json parse_json_checked(std::string_view text, const std::string& what, int max_depth = kMaxJsonDepth,
                                  size_t max_dom_bytes = 0);

// The one way a JSON file is read: the path checked (a readable regular file, so a FIFO cannot
// block), refused above max_bytes before anything is read, parsed by parse_json_checked; every
// error is one line naming the path.
nlohmann::json read_json_file(const std::string& path, size_t max_bytes = kMaxJsonFileBytes);

// Runs `read`, which interprets JSON that came from `file`: a library exception it lets through (a
// key missing, a value of the wrong type) becomes mq::Error "<file>: <reason>". Readers check the
// shape first (json_shape.h) so that such reasons are rare and name the key; this is the backstop.
[[noreturn]] void throw_json_access_error(const std::string& file, const nlohmann::json::exception& e);
template <class F>
decltype(auto) interpret_json(const std::string& file, F&& read) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    throw_json_access_error(file, e);
  }
}

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
