// A MiniGPT Projection backed by mq::QuantizedLinear, and the helper that swaps every Linear of a
// model to one scheme.
#pragma once
#include <string>

#include "miniquant/linear.h"
#include "minigpt/model.h"
#include "minigpt/projection.h"
#include "minigpt/quantize_model.h"

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
  const mq::QuantizedLinear& linear() const { return l_; }

 private:
  mq::QuantizedLinear l_;
};

// The factory quantize_linears() takes: each layer's storage run by the kernels in `mode`.
ProjectionFactory quantized_projections(mq::ActMode mode = mq::ActMode::weight_only);

// Replaces every Linear of `m` (model.linears()) by a QuantizedProjection of its current fp32 weight
// in scheme `s`. The fp32 master weights in m.params() are left as they are (training still reads
// them); later edits to them are not seen by the quantized layers. Returns the total weight bytes.
long long quantize_model(Model& m, const mq::Scheme& s, mq::ActMode mode = mq::ActMode::weight_only);

}  // namespace minigpt
