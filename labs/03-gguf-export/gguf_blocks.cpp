// Lab 03 (see README.md next to this file): miniquant's quantized storage as ggml blocks. Replace each
// TODO body; keep the signatures (lab03.h). Grade with `miniquant lab check 03`.
// Call your own functions qualified (lab::encode(...)): with mq:: arguments an unqualified call also
// finds the library's function of the same name by argument-dependent lookup and is ambiguous.
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

// t.data for Q8_0: rows * cols / 32 blocks of {fp16 d, int8 qs[32]}, row by row.
void convert_q8_0(const mq::QTensor& q, mq::gguf::Tensor& t) {
  // TODO(lab 03 block A): qs[j] = code (field - 128), d = the scale of the block's group.
  (void)q, (void)t;
  throw std::logic_error("lab 03 block A: not implemented yet (convert_q8_0 in labs/03-gguf-export/gguf_blocks.cpp)");
}

// t.data for Q4_0: rows * cols / 32 blocks of {fp16 d, uint8 qs[16]}, ggml's nibble order.
void convert_q4_0(const mq::QTensor& q, mq::gguf::Tensor& t) {
  // TODO(lab 03 block B): nibble = field (code + 8); byte j = element j (low) | element j + 16 (high).
  (void)q, (void)t;
  throw std::logic_error("lab 03 block B: not implemented yet (convert_q4_0 in labs/03-gguf-export/gguf_blocks.cpp)");
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
  // TODO(lab 03 block C): Q8_0: d * qs[j]; Q4_0: d * ((qs[j] & 15) - 8) and d * ((qs[j] >> 4) - 8) at j + 16.
  (void)t;
  throw std::logic_error("lab 03 block C: not implemented yet (dequantize in labs/03-gguf-export/gguf_blocks.cpp)");
}

}  // namespace lab::gguf
