// Calibration windows and Hessian collection through the model's Linear hook.
#include "minigpt/calibrate.h"

#include <algorithm>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {

std::vector<std::vector<int32_t>> calibration_windows(const std::vector<int32_t>& stream, int count, int len) {
  if (count <= 0 || len <= 0) throw mq::UsageError(fmt::format("calibration: need count > 0 and len > 0, got {} and {}", count, len));
  const int64_t need = static_cast<int64_t>(count) * len;
  if (static_cast<int64_t>(stream.size()) < need)
    throw mq::UsageError(fmt::format("calibration: {} windows of {} tokens need {} tokens, the split has {}", count, len,
                                     need, stream.size()));
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i)
    out.emplace_back(stream.begin() + static_cast<int64_t>(i) * len, stream.begin() + static_cast<int64_t>(i + 1) * len);
  return out;
}

std::map<std::string, mq::Hessian> collect_hessians(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                    const std::vector<std::string>& names) {
  std::map<std::string, mq::Hessian> hs;
  for (const LinearInfo& li : m.linears())
    if (names.empty() || std::find(names.begin(), names.end(), li.name) != names.end()) hs.emplace(li.name, mq::Hessian(li.in));
  m.set_linear_hook([&](const std::string& name, const float* x, int n, int) {
    auto it = hs.find(name);
    if (it != hs.end()) it->second.add(x, n);
  });
  try {
    for (const auto& w : windows) m.logits(w);
  } catch (...) {
    m.set_linear_hook({});
    throw;
  }
  m.set_linear_hook({});
  return hs;
}

}  // namespace minigpt
