// fold_input_scale(): see scale_fold.h for which producer takes each Linear kind's scale.
#include "minigpt/scale_fold.h"

#include <cmath>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {

bool input_scale_folds(LinearKind kind) { return kind != LinearKind::mlp_down; }

void fold_input_scale(Model& m, const LinearInfo& li, const std::vector<float>& s) {
  if (!input_scale_folds(li.kind))
    throw mq::UsageError(fmt::format("{}: an input scale does not fold into what feeds it (GELU sits before it)", li.name));
  if (!li.weight || !m.has_master(li.name)) throw mq::UsageError(fmt::format("{} has no fp32 weight to scale", li.name));
  if (static_cast<int>(s.size()) != li.in) throw mq::Error(fmt::format("{}: {} scales for {} inputs", li.name, s.size(), li.in));
  for (size_t j = 0; j < s.size(); ++j)
    if (!(s[j] > 0.0f) || !std::isfinite(s[j])) throw mq::Error(fmt::format("{}: input scale {} is {} (must be positive and finite)", li.name, j, s[j]));
  const std::string layer = fmt::format("h.{}.", li.layer);
  // The fp32 projections view the master buffer (float_projection.h); a quantized one holds its own codes, which
  // a rescaled master would no longer match.
  std::vector<std::string> touched = {li.name};
  if (li.kind == LinearKind::attn_out) touched.push_back(layer + "attn.c_attn");  // its V rows take 1/s
  for (const std::string& name : touched)
    if (m.projection(name).format_name() != "fp32")
      throw mq::UsageError(fmt::format("{}: {} already runs {}; scales fold into fp32 weights before quantizing", li.name, name,
                                       m.projection(name).format_name()));
  float* w = m.param(li.name + ".weight");  // (out, in)
  for (int r = 0; r < li.out; ++r)
    for (int j = 0; j < li.in; ++j) w[static_cast<size_t>(r) * li.in + j] *= s[static_cast<size_t>(j)];
  if (li.kind == LinearKind::qkv || li.kind == LinearKind::mlp_up) {
    const std::string ln = layer + (li.kind == LinearKind::qkv ? "ln_1" : "ln_2");
    float* g = m.param(ln + ".weight");  // (d)
    float* b = m.param(ln + ".bias");    // (d)
    for (int j = 0; j < li.in; ++j) g[j] /= s[static_cast<size_t>(j)], b[j] /= s[static_cast<size_t>(j)];
    return;
  }
  // attn_out: c_attn's output rows [2d, 3d) are V; channel j of the attention output is a convex mix of V_j.
  const int d = li.in;
  if (!m.has_master(layer + "attn.c_attn"))
    throw mq::UsageError(fmt::format("{}: c_attn has no fp32 weight to take the scale", li.name));
  float* wa = m.param(layer + "attn.c_attn.weight");  // (3d, d)
  float* ba = m.param(layer + "attn.c_attn.bias");    // (3d)
  for (int j = 0; j < d; ++j) {
    const float inv = 1.0f / s[static_cast<size_t>(j)];
    float* row = wa + static_cast<size_t>(2 * d + j) * d;
    for (int c = 0; c < d; ++c) row[c] *= inv;
    ba[2 * d + j] *= inv;
  }
}

}  // namespace minigpt
