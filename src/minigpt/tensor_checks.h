// Checks of loaded tensors against what they claim to be: finite values, and the dtype and shape
// each quantized Linear's tensors must have under the scheme its metadata names. Kept apart from
// the loaders so every loader (fp32, quantized, future formats) calls the same checks.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "miniquant/quantize.h"
#include "minigpt/safetensors.h"

namespace minigpt {

// Throws mq::Error "checkpoint <path>: tensor <name> holds a NaN/Inf at element i" for a
// non-finite F32, F16 or BF16 value; other dtypes hold no floats and pass.
void check_finite(const NamedTensor& t, const std::string& path);

// The scheme stored for one Linear in a quantized file's metadata; a value that is not a known
// scheme name is a corrupt file (mq::Error naming the file and layer), not a usage error.
mq::Scheme stored_scheme(const nlohmann::json& v, const std::string& layer, const std::string& path);

// Checks the tensors of one quantized Linear weight `weight` (e.g. "h.0.mlp.c_fc.weight", shape
// (rows, cols)) against `scheme`, then returns them as a QTensor. Throws mq::Error naming the file,
// the tensor and what it should be:
//   integer schemes: <weight>.codes U8 [rows, row_code_bytes], <weight>.scales F16 [scale_count]
//                    (all finite), <weight>.zeros U8 [zero_bytes] exactly when asymmetric;
//   K families:      <weight>.codes U8 [rows, row_code_bytes] (the super-blocks, every fp16 factor
//                    finite), no scales or zeros;
//   fp32/fp16/bf16:  <weight>.codes F32/F16/BF16 [rows, cols] (all finite), no zeros, and scales
//                    either absent or F16 [0].
mq::QTensor quantized_tensor_from_file(const TensorFile& f, const std::string& weight, const mq::Scheme& scheme,
                                       int64_t rows, int64_t cols, const std::string& path);

}  // namespace minigpt
