// QuantizedLinear: construction checks, forward through gemm().
#include "miniquant/layers/linear.h"

#include <utility>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kernels/registry.h"

namespace mq {

QuantizedLinear::QuantizedLinear(const float* weight, int64_t out, int64_t in, const Scheme& s, ActMode act,
                                 std::string_view name)
    : act_(act) {
  if (out < 0 || in < 0) throw UsageError(fmt::format("QuantizedLinear '{}': invalid shape (out {}, in {})", name, out, in));
  if (weight == nullptr && out * in > 0) throw UsageError(fmt::format("QuantizedLinear '{}': null weight", name));
  w_ = quantize(weight, out, in, s, name);
  prepare();
}

QuantizedLinear::QuantizedLinear(QTensor w, ActMode act) : w_(std::move(w)), act_(act) {
  const Buffers b = buffers_of(w_.scheme, w_.rows, w_.cols);  // throws UsageError for a bad shape
  if (static_cast<int64_t>(w_.codes.size()) != b.code_bytes || static_cast<int64_t>(w_.scales.size()) != b.scale_count ||
      static_cast<int64_t>(w_.zeros.size()) != b.zero_bytes)
    throw UsageError(fmt::format(
        "QuantizedLinear '{}': {} ({}x{}) needs {} code, {} scale and {} zero-point bytes, got {}, {} and {}",
        w_.name, w_.scheme.name(), w_.rows, w_.cols, b.code_bytes, 2 * b.scale_count, b.zero_bytes, w_.codes.size(),
        2 * w_.scales.size(), w_.zeros.size()));
  prepare();
}

void QuantizedLinear::prepare() {
  if (is_dynamic(act_) && !supports_dynamic(w_.scheme))
    throw UsageError(fmt::format("QuantizedLinear '{}': dynamic {} activations need integer or K weights, not {}", w_.name,
                                 act_ == ActMode::dynamic_int8 ? "int8" : "int16", w_.scheme.name()));
  // The registry's block-layout row for this family and mode, where the build has it and w has the layout;
  // otherwise row-major codes and gemm() runs the registry's row-major row.
  blocked_row_ = blocked_kernel(w_, act_);
  if (blocked_row_ == nullptr) return;
  blocked_ = pack_blocked(w_);
  // One copy of the weights in memory: the row-major codes and scales are rebuilt on demand.
  w_.codes = {};
  w_.scales = {};
  w_.zeros = {};
}

QTensor QuantizedLinear::weight() const {
  return blocked_ ? unpack_blocked(*blocked_) : w_;
}

const uint8_t* QuantizedLinear::row_codes(int64_t r) const {
  if (blocked_)
    throw UsageError(fmt::format("QuantizedLinear '{}': block mode keeps its codes in 16-row blocks, not rows", w_.name));
  if (r < 0 || r >= w_.rows) throw UsageError(fmt::format("QuantizedLinear '{}': row {} of {}", w_.name, r, w_.rows));
  return w_.row_codes(r);
}

void QuantizedLinear::forward(const float* x, int64_t n, float* y) const {
  if (n < 0) throw UsageError(fmt::format("QuantizedLinear '{}': negative token count {}", w_.name, n));
  if (n > 0 && (x == nullptr || y == nullptr)) throw UsageError(fmt::format("QuantizedLinear '{}': null x or y", w_.name));
  if (blocked_) return blocked_row_->blocks(*blocked_, x, n, y, /*threads: the default*/ 0, act_, /*use_isa*/ true);
  gemm(w_, x, n, y, {.act = act_});
}

}  // namespace mq
