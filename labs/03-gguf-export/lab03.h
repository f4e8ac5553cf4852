// Lab 03: the functions you write, declared with the library's signatures (src/miniquant/gguf/convert.h)
// in namespace `lab::gguf`: miniquant's int8 / int4 storage as ggml's Q8_0 / Q4_0 blocks, and back.
// Grade with `miniquant lab check 03`. Do not edit this header.
#pragma once
#include <string>
#include <vector>

#include "miniquant/gguf/types.h"
#include "miniquant/quantize.h"

namespace lab::gguf {

// Blocks A (Q8_0: int8 symmetric per-channel / g32 / g64 / g128) and B (Q4_0: int4 symmetric, same
// groupings): q's storage as a GGUF tensor named `name`, ne = {cols, rows}, bit for bit what
// mq::gguf::from_qtensor writes. Other schemes are outside the lab: throw mq::UsageError.
mq::gguf::Tensor from_qtensor(const mq::QTensor& q, std::string name);

// Block C. What ggml's dequantize_row_q8_0 / q4_0 compute: (rows, ne[0]) row-major floats.
std::vector<float> dequantize(const mq::gguf::Tensor& t);

}  // namespace lab::gguf
