// A strong fp32 baseline, checked in the run that uses it: every saving of 28-energy is stated against fp32,
// so its kernels must be as fast as a well-kept GEMM library on the same shapes. This times mq::gemm_fp32 (what
// MiniGPT's fp32 Linears and LM head run) beside Eigen's own product on each model's Linear shapes at each
// batch size, in interleaved rounds, after checking that both compute the same product.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "minigpt/config.h"

namespace mqexp {

// One row per (model shape, Linear shape, batch): our and Eigen's median microseconds per call and the paired
// ratio Eigen / ours with its 95% interval (above 1: ours faster). mq::Error when the two products differ by
// more than fp32 summation-order rounding.
nlohmann::json fp32_kernel_check(const std::vector<const minigpt::ModelConfig*>& models, const std::vector<int>& batches, int threads);

}  // namespace mqexp
