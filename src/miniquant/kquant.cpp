// Generic K-quant operations: grids, dequantization, quantizing a matrix block by block, block checks.
#include "miniquant/kquant.h"

#include <exception>
#include <mutex>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/half.h"
#include "miniquant/kquant_search.h"
#include "miniquant/quantize_detail.h"

namespace mq {

const KFamily& kfamily_of(const Scheme& s) {
  const KFamily* f = s.is_kquant() ? traits_of(s).kquant : nullptr;
  if (!f) throw UsageError(fmt::format("scheme {} is not a K-quant family", s.name()));
  return *f;
}

void kdequantize_block(const KFamily& f, const uint8_t* block, float* out) {
  KParams p;
  uint8_t codes[kSuperBlock];
  f.unpack(block, p, codes);
  const KGrid g = kgrid(f, p);
  for (int i = 0; i < kSuperBlock; ++i) out[i] = kvalue(f, g.D[i / f.sub], g.M[i / f.sub], codes[i]);
}

float kvalue_at(const QTensor& q, int64_t r, int64_t c) {
  const KFamily& f = kfamily_of(q.scheme);
  float block[kSuperBlock];
  kdequantize_block(f, q.row_codes(r) + (c / kSuperBlock) * f.block_bytes, block);
  return block[c % kSuperBlock];
}

double kmagnitude_at(const QTensor& q, int64_t r, int64_t c) {
  const KFamily& f = kfamily_of(q.scheme);
  KParams p;
  uint8_t codes[kSuperBlock];
  f.unpack(q.row_codes(r) + (c / kSuperBlock) * f.block_bytes, p, codes);
  const KGrid g = kgrid(f, p);
  const int i = static_cast<int>(c % kSuperBlock), b = i / f.sub;
  return std::fabs(static_cast<double>(g.D[b])) * (codes[i] + f.zero) + std::fabs(static_cast<double>(g.M[b]));
}

QTensor kquantize(const float* w, int64_t rows, int64_t cols, const Scheme& s, bool search, const float* importance,
                  bool per_weight, std::string_view name, bool parallel) {
  QTensor q = detail::make_tensor(rows, cols, s, name);
  const KFamily& f = kfamily_of(s);
  detail::check_finite_ref(w, rows, cols, name);
  const int64_t nb = cols / kSuperBlock, row_bytes = q.row_bytes();
  // The failure of the lowest row is reported, whichever thread met it first.
  std::exception_ptr failure;
  int64_t failed_row = rows;
  std::mutex failure_lock;
  // Each block alone: the same bytes whatever the thread count. An exception must not leave an OpenMP region.
#pragma omp parallel for schedule(dynamic, 4) if (parallel)
  for (int64_t r = 0; r < rows; ++r) {
    try {
      float wt[kSuperBlock];
      uint8_t codes[kSuperBlock];
      for (int64_t b = 0; b < nb; ++b) {
        const float* x = w + r * cols + b * kSuperBlock;
        const float* imp = importance ? importance + (per_weight ? r * cols : 0) + b * kSuperBlock : nullptr;
        kerror_weights(x, imp, wt);
        KParams p;
        try {
          p = kchoose_params(f, x, wt, search);
        } catch (const Error& e) {
          throw Error(fmt::format("tensor '{}', row {}, block {}: {}", name, r, b, e.what()));
        }
        kencode_block(f, p, x, codes);
        f.pack(p, codes, q.codes.data() + r * row_bytes + b * f.block_bytes);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_lock);
      if (r < failed_row) failure = std::current_exception(), failed_row = r;
    }
  }
  if (failure) std::rethrow_exception(failure);
  return q;
}

void kcheck_blocks(const QTensor& q, std::string_view what) {
  const KFamily& f = kfamily_of(q.scheme);
  const int64_t nb = q.cols / kSuperBlock;
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      KParams p;
      f.unpack(q.row_codes(r) + b * f.block_bytes, p, nullptr);
      if (!std::isfinite(f16_to_f32(p.d)) || !std::isfinite(f16_to_f32(p.dmin)))
        throw Error(fmt::format("{}: row {}, block {}: a {} block factor is NaN or infinite", what, r, b, f.name));
    }
}

}  // namespace mq
