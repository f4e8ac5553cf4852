// Lab 00: the functions you write, declared with the library's signatures (src/miniquant/quantize.h,
// pack.h, format.h, stats.h) in namespace `lab`. The grader (`miniquant lab check 00`) compares each
// with the library's and runs your quantizer inside the real MiniGPT. Do not edit this header.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "miniquant/format.h"
#include "miniquant/quantize.h"
#include "miniquant/stats.h"

namespace lab {

// Block A. The symmetric grid of one group whose largest |w| is `absmax`: s = fp16(absmax / qmax)
// with qmax = 2^(bits-1) - 1, zero = 2^(bits-1). See mq::symmetric_grid for the edge cases.
mq::Grid symmetric_grid(float absmax, const mq::Scheme& s);

// Block B. The stored field of one weight: q = clamp(round-half-even(w / scale), -qmax, qmax), field = q + zero.
uint8_t encode(float w, const mq::Grid& g, const mq::Scheme& s);

// Block C. Packs n fields of `bits` (8 or 4) into bytes: one little-endian bit stream (see mq::pack_fields).
void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out);

// Block D. Exact bytes of a (rows x cols) matrix in an integer scheme: codes + fp16 scales + zero-points.
mq::Storage storage_of(const mq::Scheme& s, int64_t rows, int64_t cols);

// Block E. Quantizes w (rows, cols) row-major in a symmetric int8 / int4 scheme (per-tensor,
// per-channel or per-group): scales, packed codes, as mq::quantize_ref does.
mq::QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, std::string_view name = "weight");

// Block F. Quantize, dequantize, and measure: bytes, bits per weight, max and RMS error, SQNR (dB).
mq::QuantStats measure_scheme(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, const std::string& name);

}  // namespace lab
