// QuantizedLinear: one Linear layer's weight stored in a scheme of the format table, owning its
// codes, scales and zero-points, and running y = x W^T through the fast kernels.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "miniquant/format_table.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
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
  ActMode act() const { return act_; }  // how it runs: weight-only, or int8 / 16-bit activations per token
  // The stored tensor (a copy; in block mode rebuilt from the block layout, the only copy held).
  QTensor weight() const;
  // Row r's stored codes, for lookups (embeddings). Throws UsageError in block mode (runs_blocked), where
  // the codes live in 16-row blocks.
  const uint8_t* row_codes(int64_t r) const;
  // Exact bytes of the format: codes + fp16 scales + packed zero-points.
  Storage storage() const { return w_.storage(); }
  // Bytes held in memory: in block mode (kernels/registry.h runs_blocked: the dynamic modes, and int8 / int4 / int3 /
  // int2 weight-only / +bf16 on AVX-512 BF16) the kernels' 16-row block layout (blocked.h: the same codes and
  // scales permuted, rows padded to a multiple of 16, one byte per zero-point) replaces the row-major tensor; otherwise storage().total().
  int64_t resident_bytes() const { return blocked_ ? blocked_->bytes() : w_.storage().total(); }

  // x: (n, in) row-major;  y: (n, out) row-major. n = 1 is one decode token.
  void forward(const float* x, int64_t n, float* y) const;

 private:
  void prepare();
  QTensor w_;  // (out, in); in block mode only its scheme, name and shape (codes and scales moved)
  std::optional<BlockedCodes> blocked_;  // block mode (runs_blocked)
  const KernelRow* blocked_row_ = nullptr;  // the registry's blocks16 row that runs blocked_
  ActMode act_ = ActMode::weight_only;
};

}  // namespace mq
