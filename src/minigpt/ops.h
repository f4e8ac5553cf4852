// Training ops with hand-written backward passes, templated on the scalar so the gradient
// checks can run them in double precision. Row-major throughout; N = B*T token rows.
//
// Convention: every backward ADDS into its gradient outputs (dx, dW, db); the caller zeroes
// them. That lets the residual stream and the tied embedding accumulate without extra copies.
// Results are deterministic for a fixed thread count: static OpenMP schedules, every output
// element written by one thread, reductions over rows done in a fixed order.
#pragma once
#include <cstddef>
#include <cstdint>

namespace minigpt::ops {

inline constexpr double kLayerNormEps = 1e-5;

// out(N,d) = wte[tokens] + wpe[position]; tokens (B,T), wte (V,d), wpe (>=T,d).
template <class S>
void embedding_forward(const int32_t* tokens, int B, int T, int d, const S* wte, const S* wpe, S* out);
template <class S>
void embedding_backward(const int32_t* tokens, int B, int T, int d, const S* dout, S* dwte, S* dwpe);

// y(N,d) = (x - mean) * rstd * w + b; mean, rstd (N) kept for backward.
template <class S>
void layernorm_forward(const S* x, int N, int d, const S* w, const S* b, S* y, S* mean, S* rstd);
template <class S>
void layernorm_backward(const S* dy, const S* x, int N, int d, const S* w, const S* mean,
                        const S* rstd, S* dx, S* dw, S* db);

// y(N,out) = x(N,in) W(out,in)^T + b(out); b may be null (the tied LM head has none).
template <class S>
void linear_forward(const S* x, int N, int in, const S* W, int out, const S* b, S* y);
// db may be null.
template <class S>
void linear_backward(const S* dy, const S* x, int N, int in, const S* W, int out, S* dx, S* dW, S* db);

// GPT-2's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class S>
void gelu_forward(const S* x, long n, S* y);
template <class S>
void gelu_backward(const S* dy, const S* x, long n, S* dx);

// Causal multi-head attention on a fused qkv(N, 3d) = [q | k | v], head h owning columns
// [h*hd, (h+1)*hd) of each. out(N,d) has the heads merged back in the same column order;
// probs (B, H, T, T) keeps the softmax (zeros above the diagonal) for backward.
template <class S>
void attention_forward(const S* qkv, int B, int T, int d, int H, S* out, S* probs);
template <class S>
void attention_backward(const S* dout, const S* qkv, const S* probs, int B, int T, int d, int H, S* dqkv);

// log softmax(row)[target] for one row of V logits, summed in double: the per-token term of
// Model::score, perplexity and the verb-tense scorer.
double log_prob(const float* row, int V, int32_t target);

// Whether all n floats are finite: a test of the exponent bits OR-ed over the array, which vectorizes
// (no early exit, no float reduction), so every forward pass can check its logits for ~1/d of the
// LM head's work.
bool all_finite(const float* v, size_t n);

// Mean over N rows of -log softmax(logits)[target]. If dlogits is not null it is WRITTEN (not
// added) with d(mean loss)/d(logits) = (softmax - onehot) / N.
template <class S>
double cross_entropy(const S* logits, const int32_t* targets, int N, int V, S* dlogits);

}  // namespace minigpt::ops
