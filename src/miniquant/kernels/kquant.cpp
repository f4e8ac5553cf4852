// The portable weight-only kernel of the K-quant families (q2_k .. q6_k): for each super-block, the family's
// unpack gives the sub-block steps D and offsets M and the 256 codes once; the block is decoded to its 256
// weights w = D (q - zero) - M (ggml's float operations: exactly what dequantize() gives), and every token of the
// call takes their dot with its activations in kLanes partial sums that run across the whole row and are added
// once at its end. Plain fixed-width loops the compiler vectorises; fast SIMD kernels per family are later work.
// Twin: gemm_ref (kernels/ref.cpp), the dequantized weights times x one by one. Error against the exact product
// of the stored weights: at most gamma(cols / kLanes + 4) sum_i |w_i x_i| (each lane sums cols / kLanes products,
// then a four-level tree), which tests/test_kernels.cpp checks with its larger gamma(cols + 17).
#include <algorithm>
#include <vector>

#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/word_kernel.h"  // effective_threads
#include "miniquant/kquant/kquant.h"

namespace mq {
namespace {

constexpr int kLanes = 16;  // partial sums per dot: one AVX-512 vector, two AVX2 ones

// One block decoded: (kSuperBlock) weights.
inline void decode_block(const KFamily& f, const uint8_t* block, float* w) {
  KParams p;
  uint8_t codes[kSuperBlock];
  f.unpack(block, p, codes);
  const KGrid g = kgrid(f, p);
  const float zero = static_cast<float>(f.zero);
  for (int j = 0; j < f.nsub(); ++j) {
    const float D = g.D[j], M = g.M[j];
    const uint8_t* q = codes + j * f.sub;
    float* out = w + j * f.sub;
    for (int i = 0; i < f.sub; ++i) out[i] = D * (static_cast<float>(q[i]) - zero) - M;
  }
}

}  // namespace

void gemm_kquant(const QTensor& w, const float* x, int64_t n, float* y, int threads, bool /*use_isa: one path*/) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_kquant")) return;
  const KFamily& f = kfamily_of(w.scheme);
  const int64_t cols = w.cols, rows = w.rows, nb = cols / kSuperBlock;
  const int nt = kdetail::effective_threads(threads, rows * cols * n);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> acc(static_cast<size_t>(n * kLanes));  // (n, kLanes) one row's partial sums
    alignas(64) float wd[kSuperBlock];                         // one decoded block
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      const uint8_t* row = w.row_codes(r);
      for (int64_t b = 0; b < nb; ++b) {
        decode_block(f, row + b * f.block_bytes, wd);
        for (int64_t t = 0; t < n; ++t) {
          const float* xb = x + t * cols + b * kSuperBlock;
          float* a = acc.data() + t * kLanes;
          for (int i = 0; i < kSuperBlock; i += kLanes)
            for (int l = 0; l < kLanes; ++l) a[l] += wd[i + l] * xb[i + l];
        }
      }
      for (int64_t t = 0; t < n; ++t) {
        float* a = acc.data() + t * kLanes;
        for (int half = kLanes / 2; half > 0; half /= 2)
          for (int l = 0; l < half; ++l) a[l] += a[l + half];
        y[t * rows + r] = a[0];
      }
    }
  }
}

}  // namespace mq
