// Quantized MiniGPT checkpoints: the fp32 checkpoint's tensors, except that each quantized Linear
// weight is stored as its codes (U8, or the float dtype of a float scheme), fp16 scales (F16) and packed
// zero-points (U8), an fp16 embedding as one F16 tensor, and a "quantization" metadata entry records the
// whole plan and each Linear's scheme. Loading one rebuilds exactly the model quantize_model() produced,
// without any dequantized fp32 weight; every tensor is checked against its scheme before anything is
// allocated (tensor_checks.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "minigpt/checkpoint.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"
#include "minigpt/safetensors.h"

namespace minigpt {

inline constexpr const char* kMetaQuantization = "quantization";

// `m` is the model quantize_model(m, plan) produced. `info` (a JSON object: seed, report...) is
// stored beside the plan.
void save_quantized_model(const std::string& path, const Model& m, const QuantPlan& plan, const CheckpointMeta& meta,
                          const nlohmann::json& info = nlohmann::json::object());

// Loads an fp32 or a quantized checkpoint. Quantized Linears run on QuantizedProjection in their
// recipe's activation mode and have no fp32 master weight (Model::has_master is false). `plan`
// receives the recorded plan (the identity plan for an fp32 checkpoint).
Model load_any_model(const std::string& path, const std::string& expected_vocab_hash = "",
                     CheckpointMeta* meta = nullptr, QuantPlan* plan = nullptr);
// The same from a file already read (`path` is for messages); the fuzzer's entry point.
Model load_any_model_from(TensorFile f, const std::string& path, const std::string& expected_vocab_hash = "",
                          CheckpointMeta* meta = nullptr, QuantPlan* plan = nullptr);

}  // namespace minigpt
