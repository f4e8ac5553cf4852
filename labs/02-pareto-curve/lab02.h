// Lab 02: the functions you write, declared with the library's signatures (src/experiments/pareto.h,
// src/minigpt/throughput.h) in namespace `lab`; then the sweep you run and the answers you write
// (README.md next to this file). Grade with `miniquant lab check 02`. Do not edit this header.
#pragma once
#include <utility>
#include <vector>

#include "minigpt/model.h"
#include "minigpt/throughput.h"

namespace lab {

// Block A. on[i] is true when no point j has x_j <= x_i and y_j <= y_i with one of them strict;
// points with a non-finite coordinate (failed schemes) are never on it and never dominate.
std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& xy);

// Block B. One decode step of `m` at cache length `context`: FLOPs and the bytes it moves, term by
// term (weights as stored, the embedding the LM head reads, biases / LayerNorms / one position row,
// activations, the KV cache read for `context` positions and written for one).
minigpt::DecodeTraffic decode_traffic(const minigpt::Model& m, int context);

}  // namespace lab
