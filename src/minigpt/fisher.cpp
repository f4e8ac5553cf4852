// Empirical Fisher diagonal of the Linear weights through the training graph's backward pass (fisher.h).
#include "minigpt/fisher.h"

#include <algorithm>
#include <memory>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/graph.h"
#include "minigpt/model.h"

namespace minigpt {

std::map<std::string, std::vector<float>> collect_fisher(const Model& m, const std::vector<std::vector<int32_t>>& windows) {
  if (windows.empty()) throw mq::UsageError("Fisher information needs calibration windows; none were given");
  for (const LinearInfo& li : m.linears())
    if (!li.weight)
      throw mq::UsageError(fmt::format("Fisher information: {} has no fp32 weight (the model was loaded from a quantized checkpoint); "
                                       "quantize the fp32 checkpoint instead", li.name));
  const ModelConfig& c = m.config();
  for (const auto& w : windows)
    if (w.size() < 2 || w.size() > static_cast<size_t>(c.n_ctx) + 1)
      throw mq::UsageError(fmt::format("Fisher information: a calibration window of {} tokens (2 to {} are scored)", w.size(), c.n_ctx + 1));
  std::vector<float> grad(m.num_params()), sq(m.num_params(), 0.0f);  // (num_params) flat, layout order
  // One graph per window length (calibration windows share one length, so one graph in practice).
  std::map<int, std::unique_ptr<TrainGraph<float>>> graphs;
  for (const auto& w : windows) {
    const int t = static_cast<int>(w.size()) - 1;
    auto& g = graphs[t];
    if (!g) g = std::make_unique<TrainGraph<float>>(c, 1, t);
    std::fill(grad.begin(), grad.end(), 0.0f);
    g->forward(m.params(), w.data(), w.data() + 1);
    g->backward(m.params(), grad.data());
    for (size_t i = 0; i < grad.size(); ++i) sq[i] += grad[i] * grad[i];
  }
  std::map<std::string, std::vector<float>> out;
  for (const LinearInfo& li : m.linears()) {
    const ParamTensor& p = m.layout().at(li.name + ".weight");
    out[li.name].assign(sq.begin() + static_cast<std::ptrdiff_t>(p.offset), sq.begin() + static_cast<std::ptrdiff_t>(p.offset + p.size));
  }
  return out;
}

}  // namespace minigpt
