// Batched decode through Model's public pieces (projections, embedding, layout), so Model itself
// is unchanged: the same pre-LN block as Model::forward, with B rows from B sequences.
#include "minigpt/batched_decode.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Core>
#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/ops.h"

namespace minigpt {
namespace {
using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CStrided = Eigen::Map<const MatR, 0, Eigen::OuterStride<>>;
using VecC = Eigen::Map<const Eigen::VectorXf>;
}  // namespace

KVCache make_cache(const Model& m, int capacity) {
  const ModelConfig& c = m.config();
  if (capacity < 1 || capacity > c.n_ctx)
    throw mq::UsageError(fmt::format("make_cache: capacity {} must be in [1, n_ctx {}]", capacity, c.n_ctx));
  KVCache k;
  const size_t sz = static_cast<size_t>(capacity) * c.d_model;
  k.k.assign(c.n_layer, AlignedVector<float>(sz));
  k.v.assign(c.n_layer, AlignedVector<float>(sz));
  return k;
}

void decode_batch(const Model& m, const std::vector<KVCache*>& caches, const int32_t* tokens, float* logits) {
  const ModelConfig& c = m.config();
  const int d = c.d_model, f = c.d_ff, V = c.vocab_size, H = c.n_head, hd = c.head_dim(), L = c.n_layer;
  const int B = static_cast<int>(caches.size());
  if (B < 1) throw mq::UsageError("decode_batch: no sequences");
  for (int b = 0; b < B; ++b) {
    const KVCache* kc = caches[b];
    if (!kc || static_cast<int>(kc->k.size()) != L || static_cast<int>(kc->v.size()) != L)
      throw mq::UsageError(fmt::format("decode_batch: cache {} does not have the model's {} layers", b, L));
    const int cap = static_cast<int>(kc->k[0].size() / static_cast<size_t>(d));
    if (kc->length < 0 || kc->length >= std::min(cap, c.n_ctx))
      throw mq::UsageError(fmt::format("decode_batch: cache {} holds {} of {} positions (n_ctx {}); no room for one more",
                                       b, kc->length, cap, c.n_ctx));
    if (tokens[b] < 0 || tokens[b] >= V)
      throw mq::UsageError(fmt::format("decode_batch: token id {} of sequence {} is outside [0, {})", tokens[b], b, V));
  }
  const Model::PhaseGuard decoding = m.use_phase(Phase::decode);
  const ParamLayout& lay = m.layout();
  const float* p = m.params();
  const std::vector<LinearInfo> lin = m.linears();  // 4 per layer: c_attn, attn c_proj, c_fc, mlp c_proj
  std::vector<const Projection*> proj;
  for (const auto& li : lin) proj.push_back(&m.projection(li.name));

  AlignedVector<float> x(static_cast<size_t>(B) * d);  // (B, d) residual stream
  AlignedVector<float> h(static_cast<size_t>(B) * d);  // (B, d) LayerNorm output
  AlignedVector<float> mean(B), rstd(B);
  AlignedVector<float> wide(static_cast<size_t>(B) * std::max(3 * d, f));  // (B, 3d) qkv or (B, d_ff)
  AlignedVector<float> act(static_cast<size_t>(B) * f);                   // (B, d_ff) GELU output
  AlignedVector<float> att(static_cast<size_t>(B) * d);                   // (B, d) heads merged
  AlignedVector<float> y(static_cast<size_t>(B) * d);                     // (B, d) projection output

  for (int b = 0; b < B; ++b) {
    float* xb = x.data() + static_cast<size_t>(b) * d;
    m.embedding().lookup(tokens[b], xb);
    const float* pe = p + lay.wpe + static_cast<size_t>(caches[b]->length) * d;
    for (int j = 0; j < d; ++j) xb[j] += pe[j];
  }
  auto project = [&](int idx, const float* in, float* out) {
    proj[idx]->forward(in, B, out);  // the batched kernel: B rows at once
    const int ow = proj[idx]->out_features();
    const float* bias = lin[idx].bias;
    for (int i = 0; i < B; ++i)
      for (int j = 0; j < ow; ++j) out[static_cast<size_t>(i) * ow + j] += bias[j];
  };
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int l = 0; l < L; ++l) {
    const auto& Ly = lay.layers[l];
    ops::layernorm_forward(x.data(), B, d, p + Ly.ln1_w, p + Ly.ln1_b, h.data(), mean.data(), rstd.data());
    project(4 * l + 0, h.data(), wide.data());
    for (int b = 0; b < B; ++b) {
      const float* row = wide.data() + static_cast<size_t>(b) * 3 * d;
      const size_t pos = static_cast<size_t>(caches[b]->length);
      std::copy(row + d, row + 2 * d, caches[b]->k[l].data() + pos * d);
      std::copy(row + 2 * d, row + 3 * d, caches[b]->v[l].data() + pos * d);
    }
    // One (sequence, head) pair per iteration: each reads only its own cache.
#pragma omp parallel for schedule(dynamic) if (B * H > 1 && static_cast<long>(B) * (caches[0]->length + 1) * d >= (1L << 14))
    for (int bh = 0; bh < B * H; ++bh) {
      const int b = bh / H, hh = bh % H;
      const int total = caches[b]->length + 1;  // the cached positions and this one
      const VecC q(wide.data() + static_cast<size_t>(b) * 3 * d + hh * hd, hd);
      const CStrided Kh(caches[b]->k[l].data() + hh * hd, total, hd, Eigen::OuterStride<>(d));
      const CStrided Vh(caches[b]->v[l].data() + hh * hd, total, hd, Eigen::OuterStride<>(d));
      Eigen::VectorXf s = (Kh * q) * scale;  // (total)
      const float mx = s.maxCoeff();
      s = (s.array() - mx).exp();
      s /= s.sum();
      Eigen::Map<Eigen::VectorXf>(att.data() + static_cast<size_t>(b) * d + hh * hd, hd).noalias() = Vh.transpose() * s;
    }
    project(4 * l + 1, att.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    ops::layernorm_forward(x.data(), B, d, p + Ly.ln2_w, p + Ly.ln2_b, h.data(), mean.data(), rstd.data());
    project(4 * l + 2, h.data(), wide.data());
    ops::gelu_forward(wide.data(), static_cast<long>(B) * f, act.data());
    project(4 * l + 3, act.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }
  for (auto* kc : caches) ++kc->length;
  ops::layernorm_forward(x.data(), B, d, p + lay.lnf_w, p + lay.lnf_b, h.data(), mean.data(), rstd.data());
  m.embedding().logits(h.data(), B, logits);
  // As Model::forward: a non-finite logit is an error, located by one checked single-sequence pass.
  if (ops::all_finite(logits, static_cast<size_t>(B) * V)) return;
  for (size_t k = 0; k < static_cast<size_t>(B) * V; ++k)
    if (!std::isfinite(logits[k])) {
      const int b = static_cast<int>(k / static_cast<size_t>(V));
      KVCache before = *caches[b];
      --before.length;
      m.throw_non_finite(before, tokens + b, 1, 0, Outputs::all);
    }
}

}  // namespace minigpt
