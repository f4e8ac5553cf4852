// Training forward/backward of the whole GPT: chains the ops in ops.h over one batch.
#include "minigpt/graph.h"

#include <algorithm>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/ops.h"

namespace minigpt {

template <class S>
TrainGraph<S>::TrainGraph(const ModelConfig& c, int B, int T) : c_(c), layout_(c), B_(B), T_(T), N_(B * T) {
  if (B <= 0 || T <= 0 || T > c.n_ctx)
    throw mq::UsageError(fmt::format("training batch {}x{} must be positive with T <= n_ctx {}", B, T, c.n_ctx));
  const size_t N = N_, d = c.d_model, f = c.d_ff;
  inputs_.resize(N);
  layers_.resize(c.n_layer);
  for (auto& L : layers_) {
    L.res.resize(N * d);
    L.ln1.resize(N * d);
    L.ln1_mean.resize(N);
    L.ln1_rstd.resize(N);
    L.qkv.resize(N * 3 * d);
    L.probs.resize(static_cast<size_t>(B) * c.n_head * T * T);
    L.att.resize(N * d);
    L.mid.resize(N * d);
    L.ln2.resize(N * d);
    L.ln2_mean.resize(N);
    L.ln2_rstd.resize(N);
    L.fc.resize(N * f);
    L.gelu.resize(N * f);
  }
  res_final_.resize(N * d);
  lnf_.resize(N * d);
  lnf_mean_.resize(N);
  lnf_rstd_.resize(N);
  logits_.resize(N * c.vocab_size);
  dlogits_.resize(N * c.vocab_size);
  dres_.resize(N * d);
  dln_.resize(N * d);
  datt_.resize(N * d);
  dqkv_.resize(N * 3 * d);
  dfc_.resize(N * f);
  dgelu_.resize(N * f);
}

template <class S>
double TrainGraph<S>::forward(const S* p, const int32_t* inputs, const int32_t* targets) {
  const int N = N_, d = c_.d_model, f = c_.d_ff, V = c_.vocab_size;
  for (int i = 0; i < N; ++i) {
    if (inputs[i] < 0 || inputs[i] >= V || targets[i] < 0 || targets[i] >= V)
      throw mq::UsageError(fmt::format("token id out of range [0, {}) at batch position {}", V, i));
  }
  std::copy(inputs, inputs + N, inputs_.begin());
  ops::embedding_forward(inputs, B_, T_, d, p + layout_.wte, p + layout_.wpe,
                         c_.n_layer ? layers_[0].res.data() : res_final_.data());
  for (int l = 0; l < c_.n_layer; ++l) {
    auto& A = layers_[l];
    const auto& P = layout_.layers[l];
    ops::layernorm_forward(A.res.data(), N, d, p + P.ln1_w, p + P.ln1_b, A.ln1.data(), A.ln1_mean.data(), A.ln1_rstd.data());
    ops::linear_forward(A.ln1.data(), N, d, p + P.attn_w, 3 * d, p + P.attn_b, A.qkv.data());
    ops::attention_forward(A.qkv.data(), B_, T_, d, c_.n_head, A.att.data(), A.probs.data());
    ops::linear_forward(A.att.data(), N, d, p + P.aproj_w, d, p + P.aproj_b, A.mid.data());
    for (size_t i = 0; i < A.mid.size(); ++i) A.mid[i] += A.res[i];
    ops::layernorm_forward(A.mid.data(), N, d, p + P.ln2_w, p + P.ln2_b, A.ln2.data(), A.ln2_mean.data(), A.ln2_rstd.data());
    ops::linear_forward(A.ln2.data(), N, d, p + P.fc_w, f, p + P.fc_b, A.fc.data());
    ops::gelu_forward(A.fc.data(), static_cast<long>(N) * f, A.gelu.data());
    S* next = l + 1 < c_.n_layer ? layers_[l + 1].res.data() : res_final_.data();
    ops::linear_forward(A.gelu.data(), N, f, p + P.mproj_w, d, p + P.mproj_b, next);
    for (size_t i = 0; i < A.mid.size(); ++i) next[i] += A.mid[i];
  }
  ops::layernorm_forward(res_final_.data(), N, d, p + layout_.lnf_w, p + layout_.lnf_b, lnf_.data(), lnf_mean_.data(), lnf_rstd_.data());
  ops::linear_forward(lnf_.data(), N, d, p + layout_.wte, V, static_cast<const S*>(nullptr), logits_.data());
  return ops::cross_entropy(logits_.data(), targets, N, V, dlogits_.data());
}

template <class S>
void TrainGraph<S>::backward(const S* p, S* g) {
  const int N = N_, d = c_.d_model, f = c_.d_ff, V = c_.vocab_size;
  auto zero = [](AlignedVector<S>& v) { std::fill(v.begin(), v.end(), S(0)); };
  zero(dln_);
  // Tied LM head: its weight gradient lands in wte next to the embedding's.
  ops::linear_backward(dlogits_.data(), lnf_.data(), N, d, p + layout_.wte, V, dln_.data(), g + layout_.wte, static_cast<S*>(nullptr));
  zero(dres_);
  ops::layernorm_backward(dln_.data(), res_final_.data(), N, d, p + layout_.lnf_w, lnf_mean_.data(), lnf_rstd_.data(),
                          dres_.data(), g + layout_.lnf_w, g + layout_.lnf_b);
  for (int l = c_.n_layer - 1; l >= 0; --l) {
    auto& A = layers_[l];
    const auto& P = layout_.layers[l];
    // MLP branch; dres_ holds d(residual out) and passes straight through the residual add.
    zero(dgelu_);
    ops::linear_backward(dres_.data(), A.gelu.data(), N, f, p + P.mproj_w, d, dgelu_.data(), g + P.mproj_w, g + P.mproj_b);
    zero(dfc_);
    ops::gelu_backward(dgelu_.data(), A.fc.data(), static_cast<long>(N) * f, dfc_.data());
    zero(dln_);
    ops::linear_backward(dfc_.data(), A.ln2.data(), N, d, p + P.fc_w, f, dln_.data(), g + P.fc_w, g + P.fc_b);
    ops::layernorm_backward(dln_.data(), A.mid.data(), N, d, p + P.ln2_w, A.ln2_mean.data(), A.ln2_rstd.data(),
                            dres_.data(), g + P.ln2_w, g + P.ln2_b);
    // Attention branch.
    zero(datt_);
    ops::linear_backward(dres_.data(), A.att.data(), N, d, p + P.aproj_w, d, datt_.data(), g + P.aproj_w, g + P.aproj_b);
    zero(dqkv_);
    ops::attention_backward(datt_.data(), A.qkv.data(), A.probs.data(), B_, T_, d, c_.n_head, dqkv_.data());
    zero(dln_);
    ops::linear_backward(dqkv_.data(), A.ln1.data(), N, d, p + P.attn_w, 3 * d, dln_.data(), g + P.attn_w, g + P.attn_b);
    ops::layernorm_backward(dln_.data(), A.res.data(), N, d, p + P.ln1_w, A.ln1_mean.data(), A.ln1_rstd.data(),
                            dres_.data(), g + P.ln1_w, g + P.ln1_b);
  }
  ops::embedding_backward(inputs_.data(), B_, T_, d, dres_.data(), g + layout_.wte, g + layout_.wpe);
}

template class TrainGraph<float>;
template class TrainGraph<double>;

}  // namespace minigpt
