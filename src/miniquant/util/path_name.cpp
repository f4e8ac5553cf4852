// The one check for names that become path components.
#include "miniquant/util/path_name.h"

#include <fmt/core.h>

#include "miniquant/util/error.h"
#include "miniquant/util/json_checked.h"

namespace mq {
namespace {

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' ||
         c == '-' || c == '[' || c == ']' || c == '=' || c == ',';  // the last four: phase splits, int4-g64[prefill=+a8,decode=+bf16]
}

}  // namespace

std::string path_name_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > kMaxPathName) return fmt::format("it is {} characters long, more than {}", name.size(), kMaxPathName);
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos) return "it contains a path separator";
  if (name.find("..") != std::string_view::npos) return "it contains \"..\"";
  if (name.front() == '.') return "it starts with '.'";
  if (name.front() == '-') return "it starts with '-'";
  for (char c : name)
    if (!allowed(c)) {
      const unsigned char u = static_cast<unsigned char>(c);
      return u >= 0x20 && u < 0x7f ? fmt::format("it contains '{}'", c) : fmt::format("it contains the byte 0x{:02x}", u);
    }
  return {};
}

void check_path_name(std::string_view name, std::string_view what) {
  const std::string why = path_name_problem(name);
  if (why.empty()) return;
  throw UsageError(fmt::format("{} \"{}\" cannot name a file: {}; use 1-{} letters, digits, '.', '_', '+', '-', "
                               "'[', ']', '=' or ',', not starting with '.' or '-'",
                               what, clip_text(name, 40), why, kMaxPathName));
}

}  // namespace mq
