// Inference forward of MiniGPT: embeddings, pre-LN blocks through Projections, KV cache, tied head.
#include "minigpt/model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <Eigen/Core>
#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/float_projection.h"
#include "minigpt/ops.h"

namespace minigpt {

namespace {
using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CStrided = Eigen::Map<const MatR, 0, Eigen::OuterStride<>>;
using Strided = Eigen::Map<MatR, 0, Eigen::OuterStride<>>;
constexpr int kLinearsPerLayer = kLinearKinds;
constexpr const char* kKindNames[kLinearKinds] = {"qkv", "attn_out", "mlp_up", "mlp_down"};
}  // namespace

const char* linear_kind_name(LinearKind k) { return kKindNames[static_cast<int>(k)]; }

std::optional<LinearKind> parse_linear_kind(const std::string& name) {
  for (int k = 0; k < kLinearKinds; ++k)
    if (name == kKindNames[k]) return static_cast<LinearKind>(k);
  return std::nullopt;
}

Model::Model(const ModelConfig& c, uint64_t seed) : c_(c), layout_(c) {
  validate(c);
  params_.resize(layout_.total());
  init_params(layout_, c.n_layer, seed, params_.data());
  for (int l = 0; l < c.n_layer; ++l) {
    const auto& L = layout_.layers[l];
    const int d = c.d_model, f = c.d_ff;
    auto add = [&](const char* s, size_t w, int out, int in) {
      linear_names_.push_back(fmt::format("h.{}.{}", l, s));
      proj_.push_back(std::make_unique<FloatProjection>(params_.data() + w, out, in));
    };
    add("attn.c_attn", L.attn_w, 3 * d, d);
    add("attn.c_proj", L.aproj_w, d, d);
    add("mlp.c_fc", L.fc_w, f, d);
    add("mlp.c_proj", L.mproj_w, d, f);
  }
  embedding_ = std::make_unique<FloatEmbedding>(params_.data() + layout_.wte, c.vocab_size, c.d_model);
  cache_ = make_cache();
}

void Model::set_embedding(std::unique_ptr<Embedding> e) {
  if (!e) throw mq::UsageError("set_embedding: null embedding");
  if (e->vocab_size() != c_.vocab_size || e->dim() != c_.d_model)
    throw mq::UsageError(fmt::format("set_embedding: model needs (vocab {}, d {}), got (vocab {}, d {})",
                                     c_.vocab_size, c_.d_model, e->vocab_size(), e->dim()));
  embedding_ = std::move(e);
}

float* Model::param(const std::string& name) { return params_.data() + layout_.at(name).offset; }
const float* Model::param(const std::string& name) const { return params_.data() + layout_.at(name).offset; }

std::vector<LinearInfo> Model::linears() const {
  std::vector<LinearInfo> out;
  for (size_t i = 0; i < linear_names_.size(); ++i) {
    const std::string& name = linear_names_[i];
    const auto& w = layout_.at(name + ".weight");
    const auto& b = layout_.at(name + ".bias");
    out.push_back({name, static_cast<int>(i) / kLinearsPerLayer, static_cast<LinearKind>(i % kLinearsPerLayer),
                   w.shape[1], w.shape[0], has_master(name) ? params_.data() + w.offset : nullptr,
                   params_.data() + b.offset});
  }
  return out;
}

int Model::linear_index(const std::string& name) const {
  auto it = std::find(linear_names_.begin(), linear_names_.end(), name);
  return it == linear_names_.end() ? -1 : static_cast<int>(it - linear_names_.begin());
}

void Model::set_projection(const std::string& name, std::unique_ptr<Projection> p) {
  const int i = linear_index(name);
  if (i < 0) throw mq::UsageError(fmt::format("set_projection: no Linear named \"{}\" (names look like h.0.attn.c_attn)", name));
  if (!p) throw mq::UsageError(fmt::format("set_projection: null projection for {}", name));
  if (p->in_features() != proj_[i]->in_features() || p->out_features() != proj_[i]->out_features())
    throw mq::UsageError(fmt::format("set_projection: {} needs (out {}, in {}), got (out {}, in {})", name,
                                     proj_[i]->out_features(), proj_[i]->in_features(), p->out_features(),
                                     p->in_features()));
  proj_[i] = std::move(p);
}

void Model::drop_master(const std::string& name) {
  if (name != "wte" && linear_index(name) < 0) throw mq::UsageError(fmt::format("drop_master: no Linear named \"{}\"", name));
  if (has_master(name)) dropped_.push_back(name);
}

bool Model::has_master(const std::string& name) const {
  return std::find(dropped_.begin(), dropped_.end(), name) == dropped_.end();
}

const Projection& Model::projection(const std::string& name) const {
  const int i = linear_index(name);
  if (i < 0) throw mq::UsageError(fmt::format("projection: no Linear named \"{}\"", name));
  return *proj_[i];
}

KVCache Model::make_cache() const {
  // Empty: forward() grows each layer's buffers to the positions actually used, so a model whose
  // config allows a long context costs no cache memory until it is fed a long input.
  KVCache k;
  k.k.resize(c_.n_layer);
  k.v.resize(c_.n_layer);
  return k;
}

void Model::reset_cache() { cache_.length = 0; }

void Model::relocate() {
  AlignedVector<float> moved(params_.begin(), params_.end());  // (layout_.total())
  const auto old_begin = reinterpret_cast<std::uintptr_t>(params_.data());
  const auto old_end = old_begin + params_.size() * sizeof(float);
  const Rebase rebase = [&](const float* p) -> const float* {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    if (at < old_begin || at >= old_end) return p;  // a view of memory the model does not own stays as it is
    return moved.data() + (at - old_begin) / sizeof(float);
  };
  for (auto& p : proj_) p->relocate(rebase);
  embedding_->relocate(rebase);
  params_.swap(moved);  // the old buffer leaves with `moved`
  for (auto* side : {&cache_.k, &cache_.v})
    for (AlignedVector<float>& layer : *side) layer = AlignedVector<float>(layer);  // same size: no growth in the next pass
}

const char* phase_name(Phase p) { return p == Phase::prefill ? "prefill" : "decode"; }

std::vector<float> Model::prefill(const std::vector<int32_t>& tokens, Outputs outputs) {
  reset_cache();
  const size_t rows = outputs == Outputs::last ? std::min<size_t>(1, tokens.size()) : tokens.size();
  std::vector<float> out(rows * c_.vocab_size);
  forward(cache_, tokens.data(), static_cast<int>(tokens.size()), out.data(), outputs);
  return out;
}

std::vector<float> Model::decode(int32_t token) {
  const PhaseGuard decoding = use_phase(Phase::decode);
  std::vector<float> out(c_.vocab_size);
  forward(cache_, &token, 1, out.data());
  return out;
}

std::vector<float> Model::logits(const std::vector<int32_t>& tokens) const {
  KVCache cache = make_cache();
  std::vector<float> out(tokens.size() * c_.vocab_size);
  forward(cache, tokens.data(), static_cast<int>(tokens.size()), out.data());
  return out;
}

double Model::score(const std::vector<int32_t>& tokens, int a, int b) const {
  const int n = static_cast<int>(tokens.size());
  if (a < 1 || a > b || b > n || b - 1 > c_.n_ctx)
    throw mq::UsageError(fmt::format("score: need 1 <= a <= b <= {} and b - 1 <= n_ctx {}, got a={} b={}", n,
                                     c_.n_ctx, a, b));
  if (a == b) return 0.0;
  const std::vector<int32_t> prefix(tokens.begin(), tokens.begin() + (b - 1));
  const std::vector<float> lg = logits(prefix);
  const int V = c_.vocab_size;
  double total = 0;
  for (int t = a; t < b; ++t) {
    total += ops::log_prob(lg.data() + static_cast<size_t>(t - 1) * V, V, tokens[t]);  // position t-1 predicts t
  }
  return total;
}

void Model::forward(KVCache& cache, const int32_t* tokens, int n, float* logits, Outputs outputs) const {
  const int p0 = cache.length;
  forward_impl(cache, tokens, n, logits, outputs, nullptr);
  if (!logits) return;
  // One vectorized pass over (rows, vocab) floats, ~1/d of the LM head's work: cheap enough for every call.
  const size_t count = static_cast<size_t>(outputs == Outputs::last ? 1 : n) * c_.vocab_size;
  if (ops::all_finite(logits, count)) return;
  for (size_t k = 0; k < count; ++k)
    if (!std::isfinite(logits[k])) {
      KVCache before = cache;  // the positions before this pass are unchanged; the trace refills the rest
      before.length = p0;
      throw_non_finite(before, tokens, n, static_cast<int>(k / c_.vocab_size), outputs);
    }
}

void Model::throw_non_finite(const KVCache& cache, const int32_t* tokens, int n, int row, Outputs outputs) const {
  const int p0 = cache.length;
  const int position = p0 + (outputs == Outputs::last ? n - 1 : row);
  std::string where;
  // The row of a step's output names the position where the value arose, which can differ from the
  // logit's: the attention multiplies masked (later) positions' values by 0, and 0 x NaN is NaN.
  const int first_row = outputs == Outputs::last ? n - 1 : 0;
  const StageHook trace = [&](int layer, const char* stage, const float* v, int rows, int width) {
    if (!where.empty()) return;
    for (size_t i = 0; i < static_cast<size_t>(rows) * width; ++i)
      if (!std::isfinite(v[i])) {
        const int at = p0 + (rows == 1 ? first_row : static_cast<int>(i / width));
        where = layer < 0 ? fmt::format("in {} at position {}", stage, at) : fmt::format("in layer {} ({}) at position {}", layer, stage, at);
        return;
      }
  };
  KVCache copy = cache;
  std::vector<float> lg(static_cast<size_t>(outputs == Outputs::last ? 1 : n) * c_.vocab_size);
  forward_impl(copy, tokens, n, lg.data(), outputs, &trace);
  if (where.empty()) where = "nowhere when the pass ran again checked (the values depend on how it ran)";
  throw mq::Error(fmt::format("non-finite logit at position {} (token id {}): the first non-finite value arose {}; the weights are "
                              "corrupt or overflow float range, so there is no result to report",
                              position, tokens[outputs == Outputs::last ? n - 1 : row], where));
}

void Model::forward_impl(KVCache& cache, const int32_t* tokens, int n, float* logits, Outputs outputs, const StageHook* trace) const {
  const int d = c_.d_model, f = c_.d_ff, V = c_.vocab_size, H = c_.n_head, hd = c_.head_dim();
  const int p0 = cache.length;
  if (n <= 0) throw mq::UsageError("forward: need at least one token");
  if (p0 + n > c_.n_ctx)
    throw mq::UsageError(fmt::format("forward: {} cached + {} new positions exceed n_ctx {}; reset the cache or "
                                     "shorten the input", p0, n, c_.n_ctx));
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= V)
      throw mq::UsageError(fmt::format("forward: token id {} at position {} is outside [0, {})", tokens[i], i, V));

  // Grow the cache to hold `total` positions: doubling (capped at n_ctx) keeps decode amortised O(1).
  const size_t need = static_cast<size_t>(p0 + n) * d;
  if (cache.k.size() != static_cast<size_t>(c_.n_layer)) {
    cache.k.resize(c_.n_layer);
    cache.v.resize(c_.n_layer);
  }
  for (int l = 0; l < c_.n_layer; ++l)
    if (cache.k[l].size() < need || cache.v[l].size() < need) {
      const size_t grown = std::min(static_cast<size_t>(c_.n_ctx) * d, 2 * cache.k[l].size());
      cache.k[l].resize(std::max(need, grown));
      cache.v[l].resize(std::max(need, grown));
    }

  const float* p = params_.data();
  AlignedVector<float> x(static_cast<size_t>(n) * d);  // (n, d) residual stream
  AlignedVector<float> h(static_cast<size_t>(n) * d);  // (n, d) LayerNorm output
  AlignedVector<float> mean(n), rstd(n);               // (n), (n)
  AlignedVector<float> wide(static_cast<size_t>(n) * std::max(3 * d, f));  // (n, 3d) qkv or (n, d_ff) MLP hidden
  AlignedVector<float> act(static_cast<size_t>(n) * f);  // (n, d_ff) GELU output
  AlignedVector<float> att(static_cast<size_t>(n) * d);  // (n, d) attention output, heads merged
  AlignedVector<float> y(static_cast<size_t>(n) * d);    // (n, d) projection output

  for (int i = 0; i < n; ++i) {
    float* xi = x.data() + static_cast<size_t>(i) * d;
    embedding_->lookup(tokens[i], xi);
    const float* pe = p + layout_.wpe + static_cast<size_t>(p0 + i) * d;
    for (int j = 0; j < d; ++j) xi[j] += pe[j];
  }
  // A traced pass reports each step's output (rows x width values).
  const auto step = [&](int layer, const char* stage, const float* v, int rows, int width) {
    if (trace) (*trace)(layer, stage, v, rows, width);
  };
  step(-1, "the token and position embeddings", x.data(), n, d);
  // `rows` input rows: n, or 1 in the last layer's MLP under Outputs::last.
  auto project = [&](int idx, const float* in, int rows, int in_w, const float* bias, float* out) {
    if (hook_) hook_(linear_names_[idx], in, rows, in_w);
    const Projection& pr = *proj_[idx];
    pr.forward(in, rows, out);
    const int ow = pr.out_features();
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < ow; ++j) out[static_cast<size_t>(i) * ow + j] += bias[j];
  };
  const bool last_only = outputs == Outputs::last && logits != nullptr;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int total = p0 + n;

  for (int l = 0; l < c_.n_layer; ++l) {
    const auto& L = layout_.layers[l];
    ops::layernorm_forward(x.data(), n, d, p + L.ln1_w, p + L.ln1_b, h.data(), mean.data(), rstd.data());
    step(l, "ln_1", h.data(), n, d);
    project(kLinearsPerLayer * l + 0, h.data(), n, d, p + L.attn_b, wide.data());
    step(l, "attn.c_attn: q, k, v", wide.data(), n, 3 * d);
    float* K = cache.k[l].data();
    float* Vc = cache.v[l].data();
    for (int i = 0; i < n; ++i) {
      const float* row = wide.data() + static_cast<size_t>(i) * 3 * d;
      std::copy(row + d, row + 2 * d, K + static_cast<size_t>(p0 + i) * d);
      std::copy(row + 2 * d, row + 3 * d, Vc + static_cast<size_t>(p0 + i) * d);
    }
#pragma omp parallel for schedule(static) if (static_cast<long>(n) * total * d >= (1L << 15))
    for (int hh = 0; hh < H; ++hh) {
      CStrided Q(wide.data() + hh * hd, n, hd, Eigen::OuterStride<>(3 * d));
      CStrided Kh(K + hh * hd, total, hd, Eigen::OuterStride<>(d));
      CStrided Vh(Vc + hh * hd, total, hd, Eigen::OuterStride<>(d));
      MatR S = (Q * Kh.transpose()) * scale;  // (n, total)
      for (int i = 0; i < n; ++i) {
        const int last = p0 + i;  // query i sees keys [0, last]
        float mx = S(i, 0);
        for (int j = 1; j <= last; ++j) mx = std::max(mx, S(i, j));
        float sum = 0;
        for (int j = 0; j <= last; ++j) {
          S(i, j) = std::exp(S(i, j) - mx);
          sum += S(i, j);
        }
        for (int j = 0; j <= last; ++j) S(i, j) /= sum;
        for (int j = last + 1; j < total; ++j) S(i, j) = 0;
      }
      Strided(att.data() + hh * hd, n, hd, Eigen::OuterStride<>(d)).noalias() = S * Vh;
    }
    step(l, "attention", att.data(), n, d);
    project(kLinearsPerLayer * l + 1, att.data(), n, d, p + L.aproj_b, y.data());
    step(l, "attn.c_proj", y.data(), n, d);
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    step(l, "the residual after attention", x.data(), n, d);
    // Outputs::last: from here the last layer needs only the last position (the residual stream
    // of the others feeds nothing after it), so it moves to row 0 and the rest runs on one row.
    int m = n;
    if (last_only && l == c_.n_layer - 1) {
      if (n > 1) std::copy(x.data() + static_cast<size_t>(n - 1) * d, x.data() + static_cast<size_t>(n) * d, x.data());
      m = 1;
    }
    const size_t md = static_cast<size_t>(m) * d;
    ops::layernorm_forward(x.data(), m, d, p + L.ln2_w, p + L.ln2_b, h.data(), mean.data(), rstd.data());
    step(l, "ln_2", h.data(), m, d);
    project(kLinearsPerLayer * l + 2, h.data(), m, d, p + L.fc_b, wide.data());
    step(l, "mlp.c_fc", wide.data(), m, f);
    ops::gelu_forward(wide.data(), static_cast<long>(m) * f, act.data());
    step(l, "GELU", act.data(), m, f);
    project(kLinearsPerLayer * l + 3, act.data(), m, f, p + L.mproj_b, y.data());
    step(l, "mlp.c_proj", y.data(), m, d);
    for (size_t i = 0; i < md; ++i) x[i] += y[i];
    step(l, "the residual after the MLP", x.data(), m, d);
  }
  cache.length = total;
  if (!logits) return;
  const int rows = last_only ? 1 : n;
  ops::layernorm_forward(x.data(), rows, d, p + layout_.lnf_w, p + layout_.lnf_b, h.data(), mean.data(), rstd.data());
  step(-1, "ln_f", h.data(), rows, d);
  embedding_->logits(h.data(), rows, logits);
  step(-1, "the LM head (tied embedding)", logits, rows, c_.vocab_size);
}

}  // namespace minigpt
