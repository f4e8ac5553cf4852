// fp32 projection: y = x W^T through the library's fp32 kernels on the model's own weights.
#include "minigpt/float_projection.h"

#include "miniquant/kernels/kernels.h"

namespace minigpt {

// mq::gemm_fp32 rather than an Eigen product: for 2-15 tokens Eigen packs the whole weight matrix on every
// call (a second pass over it), which made 4 sequences decode slower than one (experiments/28-energy); and
// Eigen's matrix-vector product runs on one thread.
void FloatProjection::forward(const float* x, int n, float* y) const { mq::gemm_fp32(w_, out_, in_, x, n, y); }

}  // namespace minigpt
