// A MiniGPT Projection backed by mq::QuantizedLinear: how quantize_model() and the quantized
// checkpoint loader run a stored weight.
#pragma once
#include <string>

#include "miniquant/layers/linear.h"
#include "minigpt/projection.h"

namespace minigpt {

class QuantizedProjection final : public Projection {
 public:
  explicit QuantizedProjection(mq::QuantizedLinear linear) : l_(std::move(linear)) {}
  int in_features() const override { return static_cast<int>(l_.in_features()); }
  int out_features() const override { return static_cast<int>(l_.out_features()); }
  // x: (n, in), y: (n, out) row-major.
  void forward(const float* x, int n, float* y) const override { l_.forward(x, n, y); }
  long long weight_bytes() const override { return l_.storage().total(); }
  // The scheme's name (the activation mode is not part of the storage format).
  std::string format_name() const override { return l_.scheme().name(); }
  mq::ActMode act() const override { return l_.act(); }
  const mq::QuantizedLinear& linear() const { return l_; }
  // A copy owns new buffers; assigning it frees the old ones.
  void relocate(const Rebase&) override { l_ = mq::QuantizedLinear(l_); }

 private:
  mq::QuantizedLinear l_;
};

}  // namespace minigpt
