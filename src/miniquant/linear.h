// QuantizedLinear: one Linear layer's weight stored in a scheme of the format table, owning its
// codes, scales and zero-points, and running y = x W^T through the fast kernels.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"

namespace mq {

class QuantizedLinear {
 public:
  // weight: (out, in) row-major fp32, quantized with quantize(). Throws UsageError when the scheme
  // cannot store the shape or the activation mode does not support the scheme, mq::Error for
  // weights the scheme cannot represent (NaN, beyond fp16).
  QuantizedLinear(const float* weight, int64_t out, int64_t in, const Scheme& s,
                  ActMode act = ActMode::weight_only, std::string_view name = "weight");
  // Takes a ready QTensor (e.g. GPTQ codes + scales); checks that its buffers have the sizes its
  // scheme and shape imply.
  explicit QuantizedLinear(QTensor w, ActMode act = ActMode::weight_only);

  int64_t in_features() const { return w_.cols; }
  int64_t out_features() const { return w_.rows; }
  const Scheme& scheme() const { return w_.scheme; }
  ActMode act_mode() const { return act_; }
  const QTensor& weight() const { return w_; }
  // Exact bytes of the format: codes + fp16 scales + packed zero-points.
  Storage storage() const { return w_.storage(); }
  // Dynamic mode also holds the codes in the kernels' 16-row block layout (blocked.h, the same
  // bytes permuted, plus row padding to 16): its size, 0 in weight-only mode.
  int64_t blocked_bytes() const { return blocked_ ? blocked_->bytes() : 0; }
  // 0: the kernels' default (set_default_threads / OMP_NUM_THREADS).
  void set_threads(int threads);

  // x: (n, in) row-major;  y: (n, out) row-major. n = 1 is one decode token.
  void forward(const float* x, int64_t n, float* y) const;

 private:
  void prepare();
  QTensor w_;  // (out, in)
  std::optional<BlockedCodes> blocked_;  // dynamic mode, when the scheme has a block layout
  ActMode act_ = ActMode::weight_only;
  int threads_ = 0;
};

}  // namespace mq
