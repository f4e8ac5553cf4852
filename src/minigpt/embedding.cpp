// fp32 token embedding: row copy for lookups, Eigen GEMM for the tied LM head.
#include "minigpt/embedding.h"

#include <algorithm>

#include <Eigen/Core>

namespace minigpt {

void FloatEmbedding::lookup(int32_t token, float* out) const {
  const float* row = e_ + static_cast<long>(token) * d_;
  std::copy(row, row + d_, out);
}

void FloatEmbedding::logits(const float* h, int n, float* out) const {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<M>(out, n, vocab_).noalias() =
      Eigen::Map<const M>(h, n, d_) * Eigen::Map<const M>(e_, vocab_, d_).transpose();
}

}  // namespace minigpt
