// A learner-style solution of lab 03 (GGUF export), written from the handout alone on 2026-11-29
// (labs/03-gguf-export/README.md, lab03.h, the starter and the library headers it names).
// Graded by the test suite's grader (target lab03_solution), not the course's reference solution.
// Blocks: A convert_q8_0, B convert_q4_0 (ggml's split-half nibble order), C dequantize.
#include "lab03.h"

#include <cstring>
#include <stdexcept>

#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"  // mq::gguf::type_for: which ggml type a scheme exports to
#include "miniquant/half.h"
#include "miniquant/pack.h"          // mq::field_at

namespace lab::gguf {
namespace {

using mq::gguf::BlockQ4_0;
using mq::gguf::BlockQ8_0;
using mq::gguf::kQK;

// The fp16 scale bits of the group holding column c of row r.
uint16_t scale_bits(const mq::QTensor& q, int64_t r, int64_t c) {
  const int64_t gw = q.scheme.group_width(q.cols);
  const int64_t gpr = q.cols / gw;
  return q.scales[static_cast<size_t>(r * gpr + c / gw)];
}

// t.data for Q8_0: rows * cols / 32 blocks of {fp16 d, int8 qs[32]}, row by row.
void convert_q8_0(const mq::QTensor& q, mq::gguf::Tensor& t) {
  const int64_t nb = q.cols / kQK;
  t.data.assign(static_cast<size_t>(q.rows * nb) * sizeof(BlockQ8_0), 0);
  uint8_t* out = t.data.data();
  for (int64_t r = 0; r < q.rows; ++r) {
    const uint8_t* row = q.row_codes(r);
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0 blk{};
      blk.d = scale_bits(q, r, b * kQK);
      for (int j = 0; j < kQK; ++j) {
        const int field = mq::field_at(row, b * kQK + j, 8);
        blk.qs[j] = static_cast<int8_t>(field - 128);
      }
      std::memcpy(out, &blk, sizeof blk);
      out += sizeof blk;
    }
  }
}

// t.data for Q4_0: rows * cols / 32 blocks of {fp16 d, uint8 qs[16]}, ggml's nibble order.
void convert_q4_0(const mq::QTensor& q, mq::gguf::Tensor& t) {
  const int64_t nb = q.cols / kQK;
  t.data.assign(static_cast<size_t>(q.rows * nb) * sizeof(BlockQ4_0), 0);
  uint8_t* out = t.data.data();
  for (int64_t r = 0; r < q.rows; ++r) {
    const uint8_t* row = q.row_codes(r);
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ4_0 blk{};
      blk.d = scale_bits(q, r, b * kQK);
      for (int j = 0; j < kQK / 2; ++j) {
        const uint8_t lo = mq::field_at(row, b * kQK + j, 4);
        const uint8_t hi = mq::field_at(row, b * kQK + j + kQK / 2, 4);
        blk.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
      }
      std::memcpy(out, &blk, sizeof blk);
      out += sizeof blk;
    }
  }
}

}  // namespace

mq::gguf::Tensor from_qtensor(const mq::QTensor& q, std::string name) {
  const mq::gguf::TensorType type = mq::gguf::type_for(q.scheme);  // UsageError for what GGUF cannot store
  mq::gguf::Tensor t{std::move(name), {q.cols, q.rows}, type, {}};
  if (q.cols % kQK != 0) throw mq::UsageError(t.name + ": columns are not a multiple of the GGUF block size 32");
  if (type == mq::gguf::TensorType::Q8_0) {
    convert_q8_0(q, t);
  } else if (type == mq::gguf::TensorType::Q4_0) {
    convert_q4_0(q, t);
  } else {
    throw mq::UsageError(t.name + ": lab 03 converts Q8_0 and Q4_0 only (" + q.scheme.name() + " is outside it)");
  }
  return t;
}

std::vector<float> dequantize(const mq::gguf::Tensor& t) {
  if (t.ne.empty()) return {};
  const int64_t ne0 = t.ne[0];
  const int64_t rows = t.rows();
  if (ne0 % kQK != 0) throw mq::UsageError(t.name + ": ne[0] is not a multiple of 32");
  const int64_t nb = rows * (ne0 / kQK);
  std::vector<float> y(static_cast<size_t>(rows * ne0));
  if (t.type == mq::gguf::TensorType::Q8_0) {
    if (t.data.size() != static_cast<size_t>(nb) * sizeof(BlockQ8_0))
      throw mq::UsageError(t.name + ": Q8_0 data has the wrong size");
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0 blk;
      std::memcpy(&blk, t.data.data() + b * sizeof(BlockQ8_0), sizeof blk);
      const float d = mq::f16_to_f32(blk.d);
      for (int j = 0; j < kQK; ++j) y[static_cast<size_t>(b * kQK + j)] = d * static_cast<float>(blk.qs[j]);
    }
  } else if (t.type == mq::gguf::TensorType::Q4_0) {
    if (t.data.size() != static_cast<size_t>(nb) * sizeof(BlockQ4_0))
      throw mq::UsageError(t.name + ": Q4_0 data has the wrong size");
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ4_0 blk;
      std::memcpy(&blk, t.data.data() + b * sizeof(BlockQ4_0), sizeof blk);
      const float d = mq::f16_to_f32(blk.d);
      for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (blk.qs[j] & 15) - 8;
        const int hi = (blk.qs[j] >> 4) - 8;
        y[static_cast<size_t>(b * kQK + j)] = d * static_cast<float>(lo);
        y[static_cast<size_t>(b * kQK + j + kQK / 2)] = d * static_cast<float>(hi);
      }
    }
  } else {
    throw mq::UsageError(t.name + ": lab 03 dequantizes Q8_0 and Q4_0 only");
  }
  return y;
}

}  // namespace lab::gguf
