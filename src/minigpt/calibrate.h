// Calibration for GPTQ: held-out token windows, and per-Linear Hessians H = X X^T / n collected
// from the inputs each Linear sees while the model runs them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "miniquant/hessian.h"
#include "minigpt/model.h"

namespace minigpt {

// `count` consecutive, non-overlapping windows of `len` tokens from the start of `stream` (the
// validation split: disjoint from the training data and from the test split perplexity uses).
// mq::UsageError when the stream is too short.
std::vector<std::vector<int32_t>> calibration_windows(const std::vector<int32_t>& stream, int count, int len);

// Runs `m` on every window and accumulates one Hessian per Linear named in `names` (all Linears
// when empty). The model's hook is restored to none afterwards.
std::map<std::string, mq::Hessian> collect_hessians(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                    const std::vector<std::string>& names = {});

}  // namespace minigpt
