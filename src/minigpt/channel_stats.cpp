// collect_channel_stats(): one calibration pass, per-channel magnitudes and the second moment per Linear.
#include "minigpt/channel_stats.h"

#include <algorithm>
#include <cmath>

#include "miniquant/error.h"
#include "miniquant/hessian.h"

namespace minigpt {

double ChannelStats::outlier_ratio() const { return minigpt::outlier_ratio(max_abs); }

double outlier_ratio(const std::vector<float>& max_abs) {
  if (max_abs.empty()) return 1.0;
  std::vector<float> v = max_abs;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  const float median = v[v.size() / 2];
  const float top = *std::max_element(max_abs.begin(), max_abs.end());
  return median > 0 ? top / median : 1.0;
}

std::map<std::string, ChannelStats> collect_channel_stats(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                          const std::vector<std::string>& names) {
  if (windows.empty()) throw mq::UsageError("activation statistics need calibration windows; none were given");
  struct Acc {
    std::vector<double> sum_abs;
    std::vector<float> max_abs;
    mq::Hessian h;
    std::vector<float> kept;  // (kept rows, in) every kSampleStride-th row seen
    std::vector<float> whole;  // (windows * window, in) the first calls of one window length, up to kBlockRows rows
    int window = 0, windows = 0;
    int64_t seen = 0;
    bool keep_windows = false;  // keeps_windows(the Linear's kind)
    explicit Acc(int in, bool keep) : sum_abs(static_cast<size_t>(in)), max_abs(static_cast<size_t>(in)), h(in), keep_windows(keep) {}
  };
  std::map<std::string, Acc> acc;
  for (const LinearInfo& li : m.linears())
    if (names.empty() || std::find(names.begin(), names.end(), li.name) != names.end()) acc.emplace(li.name, Acc(li.in, keeps_windows(li.kind)));
  // The hook runs outside any parallel region (Model::forward calls it before each projection).
  m.set_linear_hook([&](const std::string& name, const float* x, int n, int in) {
    auto it = acc.find(name);
    if (it == acc.end()) return;
    Acc& a = it->second;
    for (int i = 0; i < n; ++i) {
      const float* row = x + static_cast<size_t>(i) * in;
      for (int j = 0; j < in; ++j) {
        const float v = std::fabs(row[j]);
        a.sum_abs[static_cast<size_t>(j)] += v;
        a.max_abs[static_cast<size_t>(j)] = std::max(a.max_abs[static_cast<size_t>(j)], v);
      }
      if (a.seen++ % kSampleStride == 0 && static_cast<int64_t>(a.kept.size()) < kSampleRows * in) a.kept.insert(a.kept.end(), row, row + in);
    }
    if (a.windows == 0) a.window = n;
    if (a.keep_windows && static_cast<int64_t>(a.windows + 1) * a.window <= kBlockRows && n == a.window) a.whole.insert(a.whole.end(), x, x + static_cast<size_t>(n) * in), ++a.windows;
    a.h.add(x, n);
  });
  try {
    for (const auto& w : windows) (void)m.logits(w);
  } catch (...) {
    m.set_linear_hook({});
    throw;
  }
  m.set_linear_hook({});
  std::map<std::string, ChannelStats> out;
  for (auto& [name, a] : acc) {
    ChannelStats s;
    s.samples = a.h.samples();
    s.h = a.h.matrix();
    s.mean_abs.resize(a.sum_abs.size());
    for (size_t j = 0; j < a.sum_abs.size(); ++j) s.mean_abs[j] = static_cast<float>(a.sum_abs[j] / static_cast<double>(s.samples));
    s.max_abs = std::move(a.max_abs);
    const int64_t in = static_cast<int64_t>(s.max_abs.size()), kept = in > 0 ? static_cast<int64_t>(a.kept.size()) / in : 0;
    s.rows = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(a.kept.data(), kept, in);
    s.window = a.window;
    s.window_rows = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        a.whole.data(), static_cast<int64_t>(a.windows) * a.window, in);
    out.emplace(name, std::move(s));
  }
  return out;
}

}  // namespace minigpt
