// Learner-style solution of lab 02 (blocks A and B), written from the handout alone on 2026-11-29
// (labs/02-pareto-curve/README.md, lab02.h, the starter and the library headers it names).
// Graded by the test suite (lab02_solution --block AB), not the course's reference implementation;
// blocks C and D (the sweep and answers.md) are not part of this file.
#include "lab02.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace lab {

std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& xy) {
  // Both axes are minimised (bytes, perplexity). Point j dominates i when x_j <= x_i and y_j <= y_i
  // with at least one of the two strict; equal points (duplicates) do not dominate each other.
  // A point with a non-finite coordinate is never on the frontier and never dominates.
  const size_t n = xy.size();
  std::vector<bool> finite(n);
  for (size_t i = 0; i < n; ++i) finite[i] = std::isfinite(xy[i].first) && std::isfinite(xy[i].second);

  std::vector<bool> on(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!finite[i]) continue;
    const double xi = xy[i].first, yi = xy[i].second;
    bool dominated = false;
    for (size_t j = 0; j < n && !dominated; ++j) {
      if (j == i || !finite[j]) continue;
      const double xj = xy[j].first, yj = xy[j].second;
      if (xj <= xi && yj <= yi && (xj < xi || yj < yi)) dominated = true;
    }
    on[i] = !dominated;
  }
  return on;
}

minigpt::DecodeTraffic decode_traffic(const minigpt::Model& m, int context) {
  if (context < 0) throw std::invalid_argument("decode_traffic: context must be >= 0, got " + std::to_string(context));
  const minigpt::ModelConfig& c = m.config();
  const double d = c.d_model, vocab = c.vocab_size, L = c.n_layer;
  const double ctx = context;
  constexpr double f32 = 4.0;

  minigpt::DecodeTraffic t;
  double bias_params = 0;
  for (const minigpt::LinearInfo& li : m.linears()) {
    const double in = li.in, out = li.out;
    t.flops += 2.0 * in * out;                                   // one multiply-add per weight
    t.weight_bytes += static_cast<double>(m.projection(li.name).weight_bytes());  // codes + scales + zero-points
    t.activation_bytes += f32 * (in + out);                      // input and output vectors
    bias_params += out;                                          // one fp32 bias per output
  }
  // Tied LM head: logits = h E^T reads the whole table, one multiply-add per entry.
  t.flops += 2.0 * d * vocab;
  t.embedding_bytes = static_cast<double>(m.embedding().bytes());
  t.activation_bytes += f32 * vocab;  // the logits
  // Attention per layer: q.k over `context` positions (context * d MACs) and the weighted sum of V
  // (context * d MACs): 4 * context * d FLOPs.
  t.flops += L * 4.0 * ctx * d;

  // Biases, LayerNorms (ln_1, ln_2 per layer, ln_f: weight + bias each), one position row (wpe).
  const double ln_params = L * 2.0 * 2.0 * d + 2.0 * d;
  t.other_param_bytes = f32 * (bias_params + ln_params + d);

  // KV cache (fp32): K and V read for `context` positions and written for the new one, per layer.
  t.kv_bytes = L * 2.0 * d * f32 * (ctx + 1.0);
  return t;
}

}  // namespace lab
