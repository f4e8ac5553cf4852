// fp32 projection: y = x W^T through Eigen on row-major maps.
#include "minigpt/float_projection.h"

#include <Eigen/Core>

namespace minigpt {

void FloatProjection::forward(const float* x, int n, float* y) const {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<M>(y, n, out_).noalias() =
      Eigen::Map<const M>(x, n, in_) * Eigen::Map<const M>(w_, out_, in_).transpose();
}

}  // namespace minigpt
