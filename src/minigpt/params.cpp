// Parameter layout in GPT-2 naming and the seeded GPT-2 initialisation.
#include "minigpt/params.h"

#include <cmath>
#include <numbers>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {

ParamLayout::ParamLayout(const ModelConfig& c) {
  const int d = c.d_model, f = c.d_ff;
  wte = add("wte", {c.vocab_size, d}, ParamKind::Embedding);
  wpe = add("wpe", {c.n_ctx, d}, ParamKind::Embedding);
  for (int i = 0; i < c.n_layer; ++i) {
    auto p = [i](const char* s) { return fmt::format("h.{}.{}", i, s); };
    Layer L;
    L.ln1_w = add(p("ln_1.weight"), {d}, ParamKind::LayerNorm);
    L.ln1_b = add(p("ln_1.bias"), {d}, ParamKind::LayerNorm);
    L.attn_w = add(p("attn.c_attn.weight"), {3 * d, d}, ParamKind::LinearWeight);
    L.attn_b = add(p("attn.c_attn.bias"), {3 * d}, ParamKind::LinearBias);
    L.aproj_w = add(p("attn.c_proj.weight"), {d, d}, ParamKind::LinearWeight);
    L.aproj_b = add(p("attn.c_proj.bias"), {d}, ParamKind::LinearBias);
    L.ln2_w = add(p("ln_2.weight"), {d}, ParamKind::LayerNorm);
    L.ln2_b = add(p("ln_2.bias"), {d}, ParamKind::LayerNorm);
    L.fc_w = add(p("mlp.c_fc.weight"), {f, d}, ParamKind::LinearWeight);
    L.fc_b = add(p("mlp.c_fc.bias"), {f}, ParamKind::LinearBias);
    L.mproj_w = add(p("mlp.c_proj.weight"), {d, f}, ParamKind::LinearWeight);
    L.mproj_b = add(p("mlp.c_proj.bias"), {d}, ParamKind::LinearBias);
    layers.push_back(L);
  }
  lnf_w = add("ln_f.weight", {d}, ParamKind::LayerNorm);
  lnf_b = add("ln_f.bias", {d}, ParamKind::LayerNorm);
}

size_t ParamLayout::add(std::string name, std::vector<int> shape, ParamKind kind) {
  size_t n = 1;
  for (int s : shape) n *= static_cast<size_t>(s);
  tensors_.push_back({std::move(name), std::move(shape), total_, n, kind});
  total_ += n;
  return total_ - n;
}

const ParamTensor* ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const ParamTensor& ParamLayout::at(const std::string& name) const {
  if (auto* t = find(name)) return *t;
  throw mq::UsageError(fmt::format("no parameter named \"{}\"", name));
}

double NormalSampler::next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // u1 in (0, 1] so log(u1) is finite; u2 in [0, 1).
  const double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(a);
  has_spare_ = true;
  return r * std::cos(a);
}

template <class S>
void init_params(const ParamLayout& layout, int n_layer, uint64_t seed, S* out) {
  NormalSampler normal(seed);
  const double resid_std = 0.02 / std::sqrt(2.0 * n_layer);
  for (const auto& t : layout.tensors()) {
    S* p = out + t.offset;
    const bool is_resid_proj = t.name.ends_with("attn.c_proj.weight") || t.name.ends_with("mlp.c_proj.weight");
    switch (t.kind) {
      case ParamKind::Embedding:
      case ParamKind::LinearWeight: {
        const double std = is_resid_proj ? resid_std : 0.02;
        for (size_t i = 0; i < t.size; ++i) p[i] = static_cast<S>(std * normal.next());
        break;
      }
      case ParamKind::LinearBias:
        for (size_t i = 0; i < t.size; ++i) p[i] = S(0);
        break;
      case ParamKind::LayerNorm: {
        const S v = t.name.ends_with(".weight") ? S(1) : S(0);
        for (size_t i = 0; i < t.size; ++i) p[i] = v;
        break;
      }
    }
  }
}

template void init_params<float>(const ParamLayout&, int, uint64_t, float*);
template void init_params<double>(const ParamLayout&, int, uint64_t, double*);

}  // namespace minigpt
