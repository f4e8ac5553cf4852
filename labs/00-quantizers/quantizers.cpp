// Lab 00 (see README.md next to this file): your quantizers. Replace each TODO body; keep the
// signatures (lab00.h). Grade with `miniquant lab check 00`.
// Call your own functions qualified (lab::encode(...)): with mq:: arguments an unqualified call also
// finds the library's function of the same name by argument-dependent lookup and is ambiguous.
#include "lab00.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/half.h"  // mq::f32_to_f16, mq::f16_to_f32

namespace lab {

mq::Grid symmetric_grid(float absmax, const mq::Scheme& s) {
  // TODO(lab 00 block A): scale = fp16(absmax / qmax), nudged up while it would clip; all-zero group.
  (void)absmax, (void)s;
  throw std::logic_error("lab 00 block A: not implemented yet (symmetric_grid in labs/00-quantizers/quantizers.cpp)");
}

uint8_t encode(float w, const mq::Grid& g, const mq::Scheme& s) {
  // TODO(lab 00 block B): round half to even, clamp to [-qmax, qmax], add the zero offset.
  (void)w, (void)g, (void)s;
  throw std::logic_error("lab 00 block B: not implemented yet (encode in labs/00-quantizers/quantizers.cpp)");
}

void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out) {
  // TODO(lab 00 block C): bits 8: one field per byte; bits 4: field 2j low nibble, 2j+1 high nibble.
  (void)fields, (void)n, (void)bits, (void)out;
  throw std::logic_error("lab 00 block C: not implemented yet (pack_fields in labs/00-quantizers/quantizers.cpp)");
}

mq::Storage storage_of(const mq::Scheme& s, int64_t rows, int64_t cols) {
  // TODO(lab 00 block D): code bytes (rows padded to whole bytes) + 2 bytes per scale (+ zero-points).
  (void)s, (void)rows, (void)cols;
  throw std::logic_error("lab 00 block D: not implemented yet (storage_of in labs/00-quantizers/quantizers.cpp)");
}

mq::QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, std::string_view name) {
  // TODO(lab 00 block E): one grid per tensor / row / group, encode every weight, pack each row.
  (void)w, (void)rows, (void)cols, (void)s, (void)name;
  throw std::logic_error("lab 00 block E: not implemented yet (quantize_ref in labs/00-quantizers/quantizers.cpp)");
}

mq::QuantStats measure_scheme(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, const std::string& name) {
  // TODO(lab 00 block F): quantize with your quantize_ref, dequantize, accumulate errors in double.
  (void)w, (void)rows, (void)cols, (void)s, (void)name;
  throw std::logic_error("lab 00 block F: not implemented yet (measure_scheme in labs/00-quantizers/quantizers.cpp)");
}

}  // namespace lab
