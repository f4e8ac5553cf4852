// One comparison setup: a pair (pairs.h) on one weight shape, hot or from DRAM. Builds both sides from the same
// fp32 weights, checks each against its own dequantized reference at every batch size and thread count (and
// refuses to time on a miss), measures the same-run read bandwidth, then times them in interleaved rounds:
// per round and per cell (batch n, threads), one batch of ggml calls and one of ours, the order alternating
// between rounds, each batch after a settle pause and one untimed call.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml_side.h"
#include "pairs.h"

namespace vsggml {

struct RunOptions {
  std::vector<int64_t> batches{1, 64};
  std::vector<int> threads{1, 2};
  int rounds = 30;
  double batch_seconds = 0.02;   // each side's timed batch lasts about this long (at least one call)
  double settle_seconds = 0.01;  // pause before each batch: the other side's idle workers stop spinning
};

struct Setup {
  int64_t out = 0, in = 0;
  bool dram = false;  // false: hot (one weight copy, called again and again); true: cycled copies (mqbench::cold_copies), from DRAM
};

// Runs one setup; returns one JSON cell per (n, threads). mq::Error when a side fails its check.
std::vector<nlohmann::json> compare(GgmlBackend& be, const Pair& pair, const Setup& s, const std::vector<float>& w,
                                    const RunOptions& o);

}  // namespace vsggml
