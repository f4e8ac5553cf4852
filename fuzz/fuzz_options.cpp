// libFuzzer target: the one strict parser of command-line options (tools/validators.h) on arbitrary text:
// parse_shard, parse_int_strict, split_names / split_names_given. Properties, not only "no crash": what
// parse_shard accepts prints back to exactly the input (nothing unconsumed, no sign, space or "0x") with
// 0 <= i < n; split_names yields no empty name and no separator outside brackets. Any exception other than
// mq::Error (std::stol's out_of_range, say), any crash or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "validators.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto [i, n] = mqcli::parse_shard(text, "--shard");
    if (fmt::format("{}/{}", i, n) != text || i < 0 || i >= n) std::abort();
  } catch (const mq::Error&) {
  }
  try {
    const long v = mqcli::parse_int_strict(text, "--count", 0, 1000000);
    if (std::to_string(v) != text || v < 0 || v > 1000000) std::abort();
  } catch (const mq::Error&) {
  }
  try {
    for (const std::string& name : mqcli::split_names_given({text}, "--schemes")) {
      if (name.empty()) std::abort();
      int depth = 0;
      for (char c : name) {
        if (c == '[') ++depth;
        if (c == ']' && depth > 0) --depth;
        if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n')) std::abort();
      }
    }
  } catch (const mq::Error&) {
  }
  return 0;
}
