// The process-wide checksum policy and the shared messages.
#include "miniquant/util/integrity.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

#include <fmt/core.h>

namespace mq {
namespace {
std::atomic<bool> g_verify{true};
}  // namespace

void set_verify_checksums(bool on) { g_verify.store(on); }
bool verify_checksums() { return g_verify.load(); }

std::string checksum_mismatch(std::string_view tensor, std::string_view recorded, std::string_view computed) {
  return fmt::format("checksum mismatch in tensor '{}' (recorded sha256 {}..., computed {}...): the file is corrupt; re-copy it or "
                     "write it again (--no-verify loads it anyway)",
                     tensor, recorded.substr(0, 12), computed.substr(0, 12));
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void note_once(const std::string& key, const std::string& text) {
  static std::mutex mu;
  static std::set<std::string> said;
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (!said.insert(key).second) return;
  }
  fmt::print(stderr, "miniquant: note: {}\n", text);
}

}  // namespace mq
