// fp32 token embedding: row copy for lookups, the fp32 kernels (mq::gemm_fp32) for the tied LM head.
#include "minigpt/embedding.h"

#include <algorithm>
#include <cstring>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/half.h"

namespace minigpt {

void FloatEmbedding::lookup(int32_t token, float* out) const {
  const float* row = e_ + static_cast<long>(token) * d_;
  std::copy(row, row + d_, out);
}

// The LM head is one more fp32 product: the same kernels as the fp32 Linears (see float_projection.cpp).
void FloatEmbedding::logits(const float* h, int n, float* out) const { mq::gemm_fp32(e_, vocab_, d_, h, n, out); }

HalfEmbedding::HalfEmbedding(const float* table, int vocab, int d)
    : e_(table, vocab, d, mq::Scheme::fp16(), mq::ActMode::weight_only, "wte") {}

HalfEmbedding::HalfEmbedding(mq::QTensor table) : e_(std::move(table)) {
  if (e_.scheme().kind != mq::Kind::fp16)
    throw mq::UsageError("HalfEmbedding: the table must be fp16, not " + e_.scheme().name());
}

void HalfEmbedding::lookup(int32_t token, float* out) const {
  const uint8_t* row = e_.row_codes(token);  // d little-endian fp16 values
  for (int j = 0; j < dim(); ++j) {
    uint16_t h;
    std::memcpy(&h, row + 2 * j, 2);
    out[j] = mq::f16_to_f32(h);
  }
}

}  // namespace minigpt
