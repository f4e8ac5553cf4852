// Finite-value checks and scheme-vs-tensor checks for loaded checkpoints.
#include "minigpt/tensor_checks.h"

#include <cmath>
#include <cstring>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/kquant.h"
#include "miniquant/format.h"
#include "miniquant/util/json_checked.h"

namespace minigpt {
namespace {

// Index of the first non-finite element, or -1. fp16 / bf16 are tested on their bits: an all-ones
// exponent field is Inf or NaN.
int64_t first_non_finite(const NamedTensor& t) {
  const uint8_t* p = t.bytes.data();
  const size_t n = t.bytes.size();
  switch (t.dtype) {
    case DType::F32:
      for (size_t i = 0; i + 4 <= n; i += 4) {
        float v;
        std::memcpy(&v, p + i, 4);
        if (!std::isfinite(v)) return static_cast<int64_t>(i / 4);
      }
      return -1;
    case DType::F64:
      for (size_t i = 0; i + 8 <= n; i += 8) {
        double v;
        std::memcpy(&v, p + i, 8);
        if (!std::isfinite(v)) return static_cast<int64_t>(i / 8);
      }
      return -1;
    case DType::F16:
    case DType::BF16: {
      const uint16_t mask = t.dtype == DType::F16 ? 0x7C00 : 0x7F80;
      for (size_t i = 0; i + 2 <= n; i += 2) {
        uint16_t v;
        std::memcpy(&v, p + i, 2);
        if ((v & mask) == mask) return static_cast<int64_t>(i / 2);
      }
      return -1;
    }
    default:
      return -1;
  }
}

}  // namespace

void check_finite(const NamedTensor& t, const std::string& path) {
  const int64_t i = first_non_finite(t);
  if (i >= 0)
    throw mq::Error(fmt::format("checkpoint {}: tensor \"{}\" holds a NaN or Inf at element {}; the file is corrupt "
                                "or the training diverged, re-train or re-save it",
                                path, t.name, i));
}

mq::Scheme stored_scheme(const nlohmann::json& v, const std::string& layer, const std::string& path) {
  auto fail = [&](const std::string& what) {
    return mq::Error(fmt::format("quantized checkpoint {}: layer {}: {}; the file is corrupt, re-run miniquant quantize",
                                 path, layer, what));
  };
  if (!v.is_string()) throw fail(fmt::format("scheme must be a string, got {}", mq::json_summary(v)));
  try {
    return mq::Scheme::parse(v.get<std::string>());
  } catch (const mq::UsageError&) {
    throw fail(fmt::format("unknown scheme {}", mq::json_summary(v)));
  }
}

mq::QTensor quantized_tensor_from_file(const TensorFile& f, const std::string& weight, const mq::Scheme& scheme,
                                       int64_t rows, int64_t cols, const std::string& path) {
  auto fail = [&](const std::string& what) {
    return mq::Error(fmt::format("quantized checkpoint {}: {} ({}): {}; the file is corrupt, re-run miniquant quantize",
                                 path, weight, scheme.name(), what));
  };
  mq::Storage st;
  try {
    st = mq::storage_of(scheme, rows, cols);
  } catch (const mq::Error& e) {  // e.g. a group size that does not divide the width
    throw fail(e.what());
  }
  auto expect = [&](const std::string& name, DType dt, const std::vector<int64_t>& shape) -> const NamedTensor& {
    const NamedTensor* t = f.find(name);
    if (!t) throw fail(fmt::format("tensor {} is missing", name));
    if (t->dtype != dt || t->shape != shape)
      throw fail(fmt::format("tensor {} is {} [{}] but the scheme stores {} [{}]", name, dtype_name(t->dtype),
                             fmt::join(t->shape, ", "), dtype_name(dt), fmt::join(shape, ", ")));
    check_finite(*t, path);
    return *t;
  };
  mq::QTensor q;
  q.scheme = scheme;
  q.name = weight;
  q.rows = rows;
  q.cols = cols;
  const bool is_float = !scheme.is_integer() && !scheme.is_kquant();
  const DType code_dtype = scheme.kind == mq::Kind::fp32   ? DType::F32
                           : scheme.kind == mq::Kind::fp16 ? DType::F16
                           : scheme.kind == mq::Kind::bf16 ? DType::BF16
                                                           : DType::U8;
  const std::vector<int64_t> code_shape = is_float ? std::vector<int64_t>{rows, cols}
                                                   : std::vector<int64_t>{rows, mq::row_code_bytes(scheme, cols)};
  const NamedTensor& codes = expect(weight + ".codes", code_dtype, code_shape);
  q.codes.assign(codes.bytes.begin(), codes.bytes.end());

  const int64_t n_scales = scheme.is_kquant() ? 0 : st.scale_bytes / 2;  // a K block holds its own scales
  if (n_scales > 0 || f.find(weight + ".scales")) {
    const NamedTensor& scales = expect(weight + ".scales", DType::F16, {n_scales});
    q.scales.resize(static_cast<size_t>(n_scales));
    if (n_scales) std::memcpy(q.scales.data(), scales.bytes.data(), scales.bytes.size());
  }
  if (st.zero_bytes > 0) {
    q.zeros = expect(weight + ".zeros", DType::U8, {st.zero_bytes}).bytes;
  } else if (f.find(weight + ".zeros")) {
    throw fail(fmt::format("tensor {}.zeros is present but a {} scheme has no zero-points", weight,
                           scheme.is_integer() ? "symmetric" : scheme.is_kquant() ? "K" : "float"));
  }
  if (static_cast<int64_t>(q.codes.size()) != mq::buffers_of(scheme, rows, cols).code_bytes)
    throw fail("code bytes do not match the scheme");
  if (scheme.is_kquant()) mq::kcheck_blocks(q, fmt::format("quantized checkpoint {}: {}", path, weight));  // NaN / Inf factors
  return q;
}

}  // namespace minigpt
