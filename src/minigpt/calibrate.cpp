// Calibration windows and Hessian collection through the model's Linear hook.
#include "minigpt/calibrate.h"

#include <algorithm>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {

std::vector<std::vector<int32_t>> calibration_windows(const std::vector<int32_t>& stream, int count, int len, int first) {
  if (count <= 0 || len <= 0 || first < 0)
    throw mq::UsageError(fmt::format("calibration: need count > 0, len > 0 and first >= 0, got {}, {} and {}", count, len, first));
  const int64_t begin = static_cast<int64_t>(first) * len, need = begin + static_cast<int64_t>(count) * len;
  if (static_cast<int64_t>(stream.size()) < need)
    throw mq::UsageError(fmt::format("calibration: {} windows of {} tokens{} need {} tokens, the split has {}", count, len,
                                     first > 0 ? fmt::format(" from window {}", first) : "", need, stream.size()));
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i)
    out.emplace_back(stream.begin() + begin + static_cast<int64_t>(i) * len, stream.begin() + begin + static_cast<int64_t>(i + 1) * len);
  return out;
}

namespace {
// Thrown by the hook once the last wanted Linear has seen its input: the rest of that forward pass
// (later layers, the LM head) cannot change the Hessians, and skipping it makes sequential GPTQ,
// which collects one layer at a time, cost about half the forward passes instead of all of them.
struct StopForward {};
}  // namespace

std::map<std::string, mq::Hessian> collect_hessians(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                    const std::vector<std::string>& names) {
  std::map<std::string, mq::Hessian> hs;
  std::string last;  // the wanted Linear that runs last in a forward pass
  for (const LinearInfo& li : m.linears())
    if (names.empty() || std::find(names.begin(), names.end(), li.name) != names.end()) {
      hs.emplace(li.name, mq::Hessian(li.in));
      last = li.name;
    }
  // The hook runs outside any parallel region (Model::forward calls it before each projection), so
  // the exception unwinds ordinary code only.
  m.set_linear_hook([&](const std::string& name, const float* x, int n, int) {
    auto it = hs.find(name);
    if (it == hs.end()) return;
    it->second.add(x, n);
    if (name == last) throw StopForward{};
  });
  try {
    for (const auto& w : windows) {
      try {
        m.logits(w);
      } catch (const StopForward&) {
      }
    }
  } catch (...) {
    m.set_linear_hook({});
    throw;
  }
  m.set_linear_hook({});
  return hs;
}

}  // namespace minigpt
