// The default Projection: plain fp32 weights, the library's fp32 kernels (mq::gemm_fp32).
#pragma once
#include "minigpt/projection.h"

namespace minigpt {

// Views a weight it does not own (the model's flat parameter buffer), so training updates are
// seen at inference without a copy. The weight must outlive the projection.
class FloatProjection final : public Projection {
 public:
  FloatProjection(const float* weight, int out, int in) : w_(weight), out_(out), in_(in) {}
  int in_features() const override { return in_; }
  int out_features() const override { return out_; }
  void forward(const float* x, int n, float* y) const override;
  long long weight_bytes() const override { return 4LL * in_ * out_; }
  std::string format_name() const override { return "fp32"; }
  void relocate(const Rebase& rebase) override { w_ = rebase(w_); }

 private:
  const float* w_;  // (out, in) row-major
  int out_, in_;
};

}  // namespace minigpt
