// Lab 02 (see README.md next to this file): the Pareto frontier and one decode step's traffic.
// Replace each TODO body; keep the signatures (lab02.h). Blocks C and D are the sweep you run and
// answers.md. Grade with `miniquant lab check 02`.
#include "lab02.h"

#include <cmath>
#include <stdexcept>

namespace lab {

std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& xy) {
  // TODO(lab 02 block A): a point is on the frontier when no other point is at least as good on both
  // axes and strictly better on one; NaN / Inf points are neither on it nor dominate.
  (void)xy;
  throw std::logic_error("lab 02 block A: not implemented yet (pareto_frontier in labs/02-pareto-curve/pareto.cpp)");
}

minigpt::DecodeTraffic decode_traffic(const minigpt::Model& m, int context) {
  // TODO(lab 02 block B): walk m.linears() (m.projection(name).weight_bytes(), in, out), the embedding
  // (m.embedding().bytes()), the config (n_layer, d_model, vocab_size); count every term.
  (void)m, (void)context;
  throw std::logic_error("lab 02 block B: not implemented yet (decode_traffic in labs/02-pareto-curve/pareto.cpp)");
}

}  // namespace lab
