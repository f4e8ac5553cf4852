// Quantized MiniGPT checkpoints: the fp32 checkpoint's tensors, except that each quantized
// Linear weight is stored as its codes (U8), fp16 scales (F16) and packed zero-points (U8), and a
// "quantization" metadata entry says which scheme each Linear uses.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "miniquant/quantize.h"
#include "minigpt/checkpoint.h"
#include "minigpt/model.h"

namespace minigpt {

inline constexpr const char* kMetaQuantization = "quantization";

// `layers`: (Linear name, its quantized weight) for the Linears stored quantized; `info` is a JSON
// object describing the method (scheme, GPTQ options...), stored with the per-layer schemes.
void save_quantized_model(const std::string& path, const Model& m,
                          const std::vector<std::pair<std::string, mq::QTensor>>& layers, const CheckpointMeta& meta,
                          const std::string& info_json);

// Loads an fp32 or a quantized checkpoint. Quantized Linears run on QuantizedProjection (their
// fp32 master weights are set to the dequantized values, so both views agree). `quant_info`
// receives the "quantization" metadata ("" for an fp32 checkpoint).
Model load_any_model(const std::string& path, const std::string& expected_vocab_hash = "",
                     CheckpointMeta* meta = nullptr, std::string* quant_info = nullptr);
// The same from a file already read (`path` is for messages); the fuzzer's entry point.
Model load_any_model_from(TensorFile f, const std::string& path, const std::string& expected_vocab_hash = "",
                          CheckpointMeta* meta = nullptr, std::string* quant_info = nullptr);

}  // namespace minigpt
