// The training forward pass with every activation kept, and its backward pass, for a batch of
// B sequences of T tokens over a flat parameter buffer (see params.h).
#pragma once
#include <cstdint>
#include <vector>

#include "minigpt/aligned.h"
#include "minigpt/config.h"
#include "minigpt/params.h"

namespace minigpt {

// Templated on the scalar so the whole-model gradient check runs in double; training uses float.
template <class S>
class TrainGraph {
 public:
  // Allocates activations for B sequences of T <= n_ctx tokens.
  TrainGraph(const ModelConfig& c, int B, int T);

  int batch() const { return B_; }

  // Mean cross-entropy of predicting targets (B,T) from inputs (B,T). Keeps what backward needs.
  double forward(const S* params, const int32_t* inputs, const int32_t* targets);
  // Adds d(mean loss)/d(params) of the last forward into grads (the caller zeroes them).
  void backward(const S* params, S* grads);

  const S* logits() const { return logits_.data(); }  // (B*T, vocab) of the last forward

 private:
  struct LayerActs {
    AlignedVector<S> res;                 // (N, d) residual stream entering the layer
    AlignedVector<S> ln1, ln1_mean, ln1_rstd;  // (N, d), (N), (N)
    AlignedVector<S> qkv;                 // (N, 3d)
    AlignedVector<S> probs;               // (B, H, T, T)
    AlignedVector<S> att;                 // (N, d) heads merged
    AlignedVector<S> mid;                 // (N, d) residual after attention
    AlignedVector<S> ln2, ln2_mean, ln2_rstd;  // (N, d), (N), (N)
    AlignedVector<S> fc;                  // (N, d_ff) before GELU
    AlignedVector<S> gelu;                // (N, d_ff)
  };

  ModelConfig c_;
  ParamLayout layout_;
  int B_, T_, N_;
  std::vector<int32_t> inputs_;                 // (N)
  std::vector<LayerActs> layers_;
  AlignedVector<S> res_final_;                    // (N, d) entering ln_f
  AlignedVector<S> lnf_, lnf_mean_, lnf_rstd_;    // (N, d), (N), (N)
  AlignedVector<S> logits_;                       // (N, V)
  AlignedVector<S> dlogits_;                      // (N, V) filled by forward
  // backward scratch
  AlignedVector<S> dres_, dln_, datt_, dqkv_;     // (N, d), (N, d), (N, d), (N, 3d)
  AlignedVector<S> dfc_, dgelu_;                  // (N, d_ff), (N, d_ff)
};

extern template class TrainGraph<float>;
extern template class TrainGraph<double>;

}  // namespace minigpt
