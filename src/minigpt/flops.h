// FLOP counts of MiniGPT per token, the convention benchmarks and progress reports use.
#pragma once
#include "minigpt/config.h"

namespace minigpt {

// Weights that take part in a matmul: the 4 Linears per layer (12 d^2) and the tied LM head
// (vocab * d). Embedding lookups, LayerNorm, GELU, softmax and biases are not counted.
inline double matmul_params(const ModelConfig& c) {
  return 12.0 * c.n_layer * c.d_model * c.d_model + static_cast<double>(c.vocab_size) * c.d_model;
}

// Forward: 2 per matmul weight, plus attention scores and weighted sum, 2 * 2 * n_ctx * d per
// layer (full n_ctx x n_ctx, not halved for the causal mask, as in the PaLM/Kaplan convention).
inline double forward_flops_per_token(const ModelConfig& c) {
  return 2.0 * matmul_params(c) + 4.0 * c.n_layer * c.n_ctx * c.d_model;
}

// Training step: forward + backward (twice the forward's matmuls) = 6 N + 12 L T d.
inline double train_flops_per_token(const ModelConfig& c) { return 3.0 * forward_flops_per_token(c); }

}  // namespace minigpt
