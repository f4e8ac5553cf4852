// See wait_policy.h for why a timing study chooses how OpenMP threads wait.
#include "miniquant/util/wait_policy.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "miniquant/util/io.h"

namespace mq {
namespace {
constexpr const char* kChoiceVar = "MQ_OMP_WAIT_CHOICE";

}  // namespace

int parse_running_entities(std::string_view text) {
  size_t pos = 0;
  for (int field = 0; field < 3; ++field) {
    pos = text.find(' ', pos);
    if (pos == std::string_view::npos) return -1;
    ++pos;
  }
  int n = 0, digits = 0;
  for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && digits < 9; ++pos, ++digits) n = n * 10 + (text[pos] - '0');
  return digits > 0 && pos < text.size() && text[pos] == '/' ? n : -1;
}

int other_runnable_threads(int samples, int spacing_ms) {
  std::vector<int> seen;
  for (int i = 0; i < samples; ++i) {
    const ReadResult r = try_read_file("/proc/loadavg", 4096);
    const int n = r.ok ? parse_running_entities(r.text) : -1;
    if (n >= 1) seen.push_back(n - 1);  // the reader itself is running
    if (i + 1 < samples) std::this_thread::sleep_for(std::chrono::milliseconds(spacing_ms));
  }
  if (seen.empty()) return -1;
  std::nth_element(seen.begin(), seen.begin() + seen.size() / 2, seen.end());
  return seen[seen.size() / 2];
}

void settle_wait_policy(char** argv) {
  if (std::getenv(kChoiceVar)) return;  // already chosen (this is the re-executed process)
  if (const char* p = std::getenv("OMP_WAIT_POLICY")) {
    setenv(kChoiceVar, fmt::format("the user (OMP_WAIT_POLICY={})", p).c_str(), 1);
    return;
  }
  const int others = other_runnable_threads();
  if (others < 1) {
    setenv(kChoiceVar, others < 0 ? "default: /proc/loadavg unreadable" : "default: no other runnable thread at start", 1);
    return;
  }
  setenv(kChoiceVar, fmt::format("load: {} other runnable thread{} at start", others, others == 1 ? "" : "s").c_str(), 1);
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
  // Only on failure: keep the default and say so in the manifest.
  unsetenv("OMP_WAIT_POLICY");
  setenv(kChoiceVar, fmt::format("default: {} other runnable threads at start, but re-executing failed", others).c_str(), 1);
}

WaitPolicy wait_policy() {
  WaitPolicy w;
  const char* p = std::getenv("OMP_WAIT_POLICY");
  std::string v = p ? p : "";
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  w.policy = v == "passive" || v == "active" ? v : "default (spin, then sleep)";
  const char* c = std::getenv(kChoiceVar);
  w.chosen_by = c ? c : "default: not chosen by load (this command does not time)";
  return w;
}

}  // namespace mq
