// Forward and backward of every training op (embedding, LayerNorm, Linear, GELU, attention,
// cross-entropy) on Eigen row-major maps, instantiated for float (training) and double (checks).
#include "minigpt/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <Eigen/Core>

namespace minigpt::ops {

namespace {
template <class S>
using MatR = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using Map = Eigen::Map<MatR<S>>;
template <class S>
using CMap = Eigen::Map<const MatR<S>>;
// A head's (T, hd) slice of a wider row-major matrix.
template <class S>
using StridedMap = Eigen::Map<MatR<S>, 0, Eigen::OuterStride<>>;
template <class S>
using CStridedMap = Eigen::Map<const MatR<S>, 0, Eigen::OuterStride<>>;
// Below this many elements a parallel region costs more than it saves: on a shared machine a
// barrier waiting for a descheduled thread can take milliseconds (decode runs dozens per token).
// Only sizes decide, so results stay deterministic; every element is computed the same way
// whether or not the loop runs in parallel.
constexpr long kParallelMin = 1L << 15;
}  // namespace

template <class S>
void embedding_forward(const int32_t* tokens, int B, int T, int d, const S* wte, const S* wpe, S* out) {
#pragma omp parallel for schedule(static) if (static_cast<long>(B) * T * d >= kParallelMin)
  for (long r = 0; r < static_cast<long>(B) * T; ++r) {
    const S* e = wte + static_cast<long>(tokens[r]) * d;
    const S* p = wpe + (r % T) * d;
    S* o = out + r * d;
    for (int j = 0; j < d; ++j) o[j] = e[j] + p[j];
  }
}

template <class S>
void embedding_backward(const int32_t* tokens, int B, int T, int d, const S* dout, S* dwte, S* dwpe) {
  // Serial over rows: the same token may repeat, and a fixed summation order keeps it
  // deterministic without atomics. Cost is N*d adds, negligible next to the GEMMs.
  for (long r = 0; r < static_cast<long>(B) * T; ++r) {
    S* e = dwte + static_cast<long>(tokens[r]) * d;
    S* p = dwpe + (r % T) * d;
    const S* g = dout + r * d;
    for (int j = 0; j < d; ++j) {
      e[j] += g[j];
      p[j] += g[j];
    }
  }
}

template <class S>
void layernorm_forward(const S* x, int N, int d, const S* w, const S* b, S* y, S* mean, S* rstd) {
#pragma omp parallel for schedule(static) if (static_cast<long>(N) * d >= kParallelMin)
  for (int r = 0; r < N; ++r) {
    const S* xr = x + static_cast<long>(r) * d;
    // Two-pass statistics in double: a 256-wide row in float loses digits in the variance.
    double m = 0;
    for (int j = 0; j < d; ++j) m += xr[j];
    m /= d;
    double v = 0;
    for (int j = 0; j < d; ++j) v += (xr[j] - m) * (xr[j] - m);
    v /= d;
    const double rs = 1.0 / std::sqrt(v + kLayerNormEps);
    mean[r] = static_cast<S>(m);
    rstd[r] = static_cast<S>(rs);
    S* yr = y + static_cast<long>(r) * d;
    for (int j = 0; j < d; ++j) yr[j] = static_cast<S>((xr[j] - m) * rs) * w[j] + b[j];
  }
}

template <class S>
void layernorm_backward(const S* dy, const S* x, int N, int d, const S* w, const S* mean,
                        const S* rstd, S* dx, S* dw, S* db) {
#pragma omp parallel for schedule(static) if (static_cast<long>(N) * d >= kParallelMin)
  for (int r = 0; r < N; ++r) {
    const S* xr = x + static_cast<long>(r) * d;
    const S* g = dy + static_cast<long>(r) * d;
    // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
    double s1 = 0, s2 = 0;
    for (int j = 0; j < d; ++j) {
      const double xhat = (xr[j] - mean[r]) * rstd[r];
      const double gw = static_cast<double>(g[j]) * w[j];
      s1 += gw;
      s2 += gw * xhat;
    }
    s1 /= d;
    s2 /= d;
    S* dxr = dx + static_cast<long>(r) * d;
    for (int j = 0; j < d; ++j) {
      const double xhat = (xr[j] - mean[r]) * rstd[r];
      dxr[j] += static_cast<S>(rstd[r] * (static_cast<double>(g[j]) * w[j] - s1 - xhat * s2));
    }
  }
  // Parameter gradients reduce over rows: serial, so the sum order never changes.
  for (int r = 0; r < N; ++r) {
    const S* xr = x + static_cast<long>(r) * d;
    const S* g = dy + static_cast<long>(r) * d;
    for (int j = 0; j < d; ++j) {
      dw[j] += g[j] * ((xr[j] - mean[r]) * rstd[r]);
      db[j] += g[j];
    }
  }
}

template <class S>
void linear_forward(const S* x, int N, int in, const S* W, int out, const S* b, S* y) {
  Map<S> Y(y, N, out);
  Y.noalias() = CMap<S>(x, N, in) * CMap<S>(W, out, in).transpose();
  if (b) Y.rowwise() += Eigen::Map<const Eigen::Matrix<S, 1, Eigen::Dynamic>>(b, out);
}

template <class S>
void linear_backward(const S* dy, const S* x, int N, int in, const S* W, int out, S* dx, S* dW, S* db) {
  CMap<S> DY(dy, N, out);
  Map<S>(dx, N, in).noalias() += DY * CMap<S>(W, out, in);
  Map<S>(dW, out, in).noalias() += DY.transpose() * CMap<S>(x, N, in);
  if (db) Eigen::Map<Eigen::Matrix<S, 1, Eigen::Dynamic>>(db, out) += DY.colwise().sum();
}

namespace {
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluA = 0.044715;
}  // namespace

// GELU runs on Eigen arrays in fixed chunks: Eigen's vectorised tanh is several times faster
// than libm's scalar one. Chunk boundaries depend only on n, so results stay deterministic.
constexpr long kGeluChunk = 4096;

template <class S>
void gelu_forward(const S* x, long n, S* y) {
  using A = Eigen::Array<S, Eigen::Dynamic, 1>;
  const long chunks = (n + kGeluChunk - 1) / kGeluChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (long c = 0; c < chunks; ++c) {
    const long b = c * kGeluChunk, len = std::min(kGeluChunk, n - b);
    Eigen::Map<const A> v(x + b, len);
    Eigen::Map<A>(y + b, len) = S(0.5) * v * (S(1) + (S(kGeluC) * (v + S(kGeluA) * v * v * v)).tanh());
  }
}

template <class S>
void gelu_backward(const S* dy, const S* x, long n, S* dx) {
  using A = Eigen::Array<S, Eigen::Dynamic, 1>;
  const long chunks = (n + kGeluChunk - 1) / kGeluChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (long c = 0; c < chunks; ++c) {
    const long b = c * kGeluChunk, len = std::min(kGeluChunk, n - b);
    Eigen::Map<const A> v(x + b, len), g(dy + b, len);
    const A t = (S(kGeluC) * (v + S(kGeluA) * v * v * v)).tanh();
    const A dinner = S(kGeluC) * (S(1) + S(3 * kGeluA) * v * v);
    Eigen::Map<A>(dx + b, len) += g * (S(0.5) * (S(1) + t) + S(0.5) * v * (S(1) - t * t) * dinner);
  }
}

template <class S>
void attention_forward(const S* qkv, int B, int T, int d, int H, S* out, S* probs) {
  const int hd = d / H;
  const S scale = S(1) / std::sqrt(S(hd));
#pragma omp parallel for collapse(2) schedule(static) if (static_cast<long>(B) * H * T * T >= kParallelMin / 8)
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const S* base = qkv + static_cast<long>(b) * T * 3 * d + h * hd;
      CStridedMap<S> Q(base, T, hd, Eigen::OuterStride<>(3 * d));
      CStridedMap<S> K(base + d, T, hd, Eigen::OuterStride<>(3 * d));
      CStridedMap<S> V(base + 2 * d, T, hd, Eigen::OuterStride<>(3 * d));
      Map<S> P(probs + (static_cast<long>(b) * H + h) * T * T, T, T);
      P.noalias() = (Q * K.transpose()) * scale;
      for (int i = 0; i < T; ++i) {
        S* row = &P(i, 0);
        S mx = row[0];
        for (int j = 1; j <= i; ++j) mx = std::max(mx, row[j]);
        S sum = 0;
        for (int j = 0; j <= i; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        const S inv = S(1) / sum;
        for (int j = 0; j <= i; ++j) row[j] *= inv;
        for (int j = i + 1; j < T; ++j) row[j] = 0;  // causal mask
      }
      StridedMap<S> O(out + static_cast<long>(b) * T * d + h * hd, T, hd, Eigen::OuterStride<>(d));
      O.noalias() = P.template triangularView<Eigen::Lower>() * V;
    }
}

template <class S>
void attention_backward(const S* dout, const S* qkv, const S* probs, int B, int T, int d, int H, S* dqkv) {
  const int hd = d / H;
  const S scale = S(1) / std::sqrt(S(hd));
#pragma omp parallel for collapse(2) schedule(static) if (static_cast<long>(B) * H * T * T >= kParallelMin / 8)
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const long off = static_cast<long>(b) * T * 3 * d + h * hd;
      const Eigen::OuterStride<> s3(3 * d);
      CStridedMap<S> Q(qkv + off, T, hd, s3), K(qkv + off + d, T, hd, s3), V(qkv + off + 2 * d, T, hd, s3);
      StridedMap<S> dQ(dqkv + off, T, hd, s3), dK(dqkv + off + d, T, hd, s3), dV(dqkv + off + 2 * d, T, hd, s3);
      CMap<S> P(probs + (static_cast<long>(b) * H + h) * T * T, T, T);
      CStridedMap<S> dO(dout + static_cast<long>(b) * T * d + h * hd, T, hd, Eigen::OuterStride<>(d));
      dV.noalias() += P.transpose() * dO;
      MatR<S> dS = dO * V.transpose();  // dP first, turned into d(scores) in place
      for (int i = 0; i < T; ++i) {
        // softmax backward: dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik); zero above the diagonal
        S dot = 0;
        for (int j = 0; j <= i; ++j) dot += P(i, j) * dS(i, j);
        for (int j = 0; j <= i; ++j) dS(i, j) = P(i, j) * (dS(i, j) - dot) * scale;
        for (int j = i + 1; j < T; ++j) dS(i, j) = 0;
      }
      dQ.noalias() += dS * K;
      dK.noalias() += dS.transpose() * Q;
    }
}

bool all_finite(const float* v, size_t n) {
  constexpr uint32_t kExp = 0x7f800000u;  // all exponent bits set: Inf or NaN
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, v + i, 4);
    bad |= static_cast<uint32_t>((bits & kExp) == kExp);
  }
  return bad == 0;
}

double log_prob(const float* row, int V, int32_t target) {
  const float mx = *std::max_element(row, row + V);
  double sum = 0;
  for (int j = 0; j < V; ++j) sum += std::exp(static_cast<double>(row[j]) - mx);
  return static_cast<double>(row[target]) - mx - std::log(sum);
}

template <class S>
double cross_entropy(const S* logits, const int32_t* targets, int N, int V, S* dlogits) {
  std::vector<double> loss(N);
#pragma omp parallel for schedule(static) if (static_cast<long>(N) * V >= kParallelMin)
  for (int r = 0; r < N; ++r) {
    const S* x = logits + static_cast<long>(r) * V;
    S mx = x[0];
    for (int j = 1; j < V; ++j) mx = std::max(mx, x[j]);
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(static_cast<double>(x[j] - mx));
    const double lse = mx + std::log(sum);
    loss[r] = lse - x[targets[r]];
    if (dlogits) {
      S* g = dlogits + static_cast<long>(r) * V;
      const double invN = 1.0 / N;
      for (int j = 0; j < V; ++j) g[j] = static_cast<S>(std::exp(x[j] - lse) * invN);
      g[targets[r]] -= static_cast<S>(invN);
    }
  }
  double total = 0;
  for (double l : loss) total += l;
  return total / N;
}

#define MINIGPT_OPS_INSTANTIATE(S)                                                                   \
  template void embedding_forward<S>(const int32_t*, int, int, int, const S*, const S*, S*);         \
  template void embedding_backward<S>(const int32_t*, int, int, int, const S*, S*, S*);              \
  template void layernorm_forward<S>(const S*, int, int, const S*, const S*, S*, S*, S*);            \
  template void layernorm_backward<S>(const S*, const S*, int, int, const S*, const S*, const S*, S*, \
                                      S*, S*);                                                       \
  template void linear_forward<S>(const S*, int, int, const S*, int, const S*, S*);                  \
  template void linear_backward<S>(const S*, const S*, int, int, const S*, int, S*, S*, S*);         \
  template void gelu_forward<S>(const S*, long, S*);                                                 \
  template void gelu_backward<S>(const S*, const S*, long, S*);                                      \
  template void attention_forward<S>(const S*, int, int, int, int, S*, S*);                          \
  template void attention_backward<S>(const S*, const S*, const S*, int, int, int, int, S*);         \
  template double cross_entropy<S>(const S*, const int32_t*, int, int, S*);

MINIGPT_OPS_INSTANTIATE(float)
MINIGPT_OPS_INSTANTIATE(double)

}  // namespace minigpt::ops
