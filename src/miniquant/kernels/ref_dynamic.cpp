// Scalar reference of the dynamic-activation paths (int8 and int16 activations): exact integer group (K:
// sub-block) sums, double scaling.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kquant.h"

namespace mq {

namespace {
// Shared by the int8 and int16 activation quantizers: s = absmax / qmax, a_i = round_half_even(x_i / s).
template <class A>
float quantize_symmetric(const float* x, int64_t cols, A* a, float qmax) {
  float absmax = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < cols; ++i) {
    finite = finite && std::isfinite(x[i]);
    absmax = std::fmax(absmax, std::fabs(x[i]));
  }
  if (!finite) {  // a NaN / Inf token: NaN scale, so its outputs are NaN as in fp32 (and no UB cast)
    std::fill(a, a + cols, A{0});
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float s = absmax / qmax;
  for (int64_t i = 0; i < cols; ++i)
    a[i] = s == 0.0f ? A{0} : static_cast<A>(std::nearbyint(x[i] / s));  // |x/s| <= qmax(+ulp) rounds into range
  return s;
}
}  // namespace

float quantize_activations(const float* x, int64_t cols, int8_t* a) { return quantize_symmetric(x, cols, a, 127.0f); }

float quantize_activations16(const float* x, int64_t cols, int16_t* a) {
  return quantize_symmetric(x, cols, a, static_cast<float>(kAct16Max));
}

namespace {
// The K families: per sub-block b the exact integer sums of (q - zero) a and of a, scaled by D_b and M_b in
// double: w = D_b (q - zero) - M_b.
template <class A>
double kquant_row(const QTensor& w, int64_t r, const A* a) {
  const KFamily& f = kfamily_of(w.scheme);
  double acc = 0.0;
  uint8_t codes[kSuperBlock];
  for (int64_t c0 = 0; c0 < w.cols; c0 += kSuperBlock) {
    KParams p;
    f.unpack(w.row_codes(r) + (c0 / kSuperBlock) * f.block_bytes, p, codes);
    const KGrid g = kgrid(f, p);
    for (int b = 0; b < f.nsub(); ++b) {
      int64_t dot = 0, sum = 0;
      for (int i = b * f.sub; i < (b + 1) * f.sub; ++i) {
        dot += (int64_t{codes[i]} - f.zero) * int64_t{a[c0 + i]};
        sum += a[c0 + i];
      }
      acc += static_cast<double>(g.D[b]) * static_cast<double>(dot) - static_cast<double>(g.M[b]) * static_cast<double>(sum);
    }
  }
  return acc;
}

// Integer schemes: per group the exact sum of (u - z) a, scaled by the group's scale in double.
template <class A>
double integer_row(const QTensor& w, int64_t r, const A* a) {
  const int64_t gw = w.scheme.group_width(w.cols);
  double acc = 0.0;
  for (int64_t c0 = 0; c0 < w.cols; c0 += gw) {
    const int64_t z = w.zero_at(r, c0);
    int64_t dot = 0;
    for (int64_t c = c0; c < c0 + gw; ++c) dot += (w.field_at(r, c) - z) * int64_t{a[c]};
    acc += static_cast<double>(w.scale_at(r, c0)) * static_cast<double>(dot);
  }
  return acc;
}

template <class A>
double row_dot(const QTensor& w, int64_t r, const A* a) {
  return w.scheme.is_kquant() ? kquant_row(w, r, a) : integer_row(w, r, a);
}
}  // namespace

void gemm_dynamic_ref(const QTensor& w, const float* x, int64_t n, float* y, ActMode act) {
  std::vector<int8_t> a8(static_cast<size_t>(w.cols));
  std::vector<int16_t> a16(static_cast<size_t>(w.cols));
  const bool wide = act == ActMode::dynamic_int16;
  for (int64_t t = 0; t < n; ++t) {
    const double sx = wide ? quantize_activations16(x + t * w.cols, w.cols, a16.data())
                           : quantize_activations(x + t * w.cols, w.cols, a8.data());
    for (int64_t r = 0; r < w.rows; ++r)
      y[t * w.rows + r] = static_cast<float>((wide ? row_dot(w, r, a16.data()) : row_dot(w, r, a8.data())) * sx);
  }
}

}  // namespace mq
