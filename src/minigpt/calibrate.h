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

// `count` consecutive, non-overlapping windows of `len` tokens from `stream` (the validation split: disjoint
// from the training data and from the test split perplexity uses), starting at window `first` (0: the
// stream's start, what every experiment calibrates on; calibration_draws.h takes later ones to see how much
// a calibrated scheme's quality depends on which text calibrated it). mq::UsageError when the stream is too short.
std::vector<std::vector<int32_t>> calibration_windows(const std::vector<int32_t>& stream, int count, int len, int first = 0);

// Runs `m` on every window and accumulates one Hessian per Linear named in `names` (all Linears
// when empty). The model's hook is restored to none afterwards.
std::map<std::string, mq::Hessian> collect_hessians(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                                    const std::vector<std::string>& names = {});

}  // namespace minigpt
