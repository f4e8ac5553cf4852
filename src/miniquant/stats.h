// Error statistics of one scheme on one matrix: what quant-report prints and the tests check.
#pragma once
#include <cstdint>
#include <string>

#include "miniquant/format.h"

namespace mq {

struct QuantStats {
  Scheme scheme;
  int64_t rows = 0, cols = 0;
  Storage storage;
  double bits_per_weight = 0.0;
  double max_abs_error = 0.0;  // max |w - w'|
  double rms_error = 0.0;      // sqrt(mean (w - w')^2)
  double sqnr_db = 0.0;        // 10 log10(sum w^2 / sum (w - w')^2); +inf when lossless
  double quantize_seconds = 0.0;
};

// w: (rows, cols) row-major. Quantizes with the optimized quantizer and dequantizes; errors are
// accumulated in double.
QuantStats measure_scheme(const float* w, int64_t rows, int64_t cols, const Scheme& s, const std::string& name);

}  // namespace mq
