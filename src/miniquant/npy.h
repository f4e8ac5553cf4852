// Reading a 2-D matrix from a NumPy .npy file (so quant-report can look at real weights).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mq {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;  // (rows, cols) row-major
};

// Accepts format versions 1-3, little-endian float32 / float64 / float16, C or Fortran order,
// 1-D (read as one row) or 2-D. Anything else is an mq::Error saying what the file holds and
// what is accepted.
Matrix load_npy(const std::string& path);
// The same from bytes already in memory (`name` is for messages); what load_npy and the fuzzer call.
Matrix parse_npy(std::string_view bytes, const std::string& name);
// Writes float32, C order, format 1.0 (atomically: temp file + rename).
void save_npy(const std::string& path, const Matrix& m);

}  // namespace mq
