// Reference quantizers: scalar, element by element, written to be obviously right.
#include "miniquant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/grid_search.h"
#include "miniquant/half.h"
#include "miniquant/kquant.h"
#include "miniquant/pack.h"
#include "miniquant/quantize_detail.h"

namespace mq {

int64_t QTensor::scale_index(int64_t r, int64_t c) const {
  if (scheme.group == kPerTensor) return 0;
  return r * scheme.groups_per_row(cols) + c / scheme.group_width(cols);
}

float QTensor::scale_at(int64_t r, int64_t c) const { return f16_to_f32(scales[scale_index(r, c)]); }

int QTensor::zero_at(int64_t r, int64_t c) const {
  if (scheme.symmetric) return 1 << (scheme.bits - 1);
  return mq::field_at(zeros.data(), scale_index(r, c), scheme.bits);
}

int QTensor::field_at(int64_t r, int64_t c) const { return mq::field_at(row_codes(r), c, scheme.bits); }

float QTensor::value_at(int64_t r, int64_t c) const {
  const uint8_t* row = row_codes(r);
  switch (scheme.kind) {
    case Kind::fp32: {
      float v;
      std::memcpy(&v, row + 4 * c, 4);
      return v;
    }
    case Kind::fp16:
    case Kind::bf16: {
      uint16_t h;
      std::memcpy(&h, row + 2 * c, 2);
      return scheme.kind == Kind::fp16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    case Kind::kquant: return kvalue_at(*this, r, c);
    case Kind::integer: break;
  }
  return scale_at(r, c) * static_cast<float>(field_at(r, c) - zero_at(r, c));
}

QuantizeOptions default_quantize_options(const Scheme& s) { return {.search = s.is_kquant(), .importance = nullptr}; }

Grid symmetric_grid(float absmax, const Scheme& s) {
  if (absmax == 0.0f) return {0, 0.0f, 1 << (s.bits - 1)};
  const int qmax = s.qmax();
  uint16_t h = f32_to_f16(absmax / static_cast<float>(qmax));
  float s16 = f16_to_f32(h);
  while (s16 == 0.0f || absmax / s16 > static_cast<float>(qmax) + 0.5f) s16 = f16_to_f32(++h);
  if (!std::isfinite(s16))
    throw Error(fmt::format("scale {:g} (absmax {:g} / {}) exceeds the fp16 range ({:g})", absmax / qmax, absmax,
                            qmax, kF16Max));
  return {h, s16, 1 << (s.bits - 1)};
}

Grid asymmetric_grid(float lo, float hi, const Scheme& s) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  const float range = hi - lo;
  if (range == 0.0f) return {0, 0.0f, 0};
  const float levels = static_cast<float>(s.levels());
  uint16_t h = f32_to_f16(range / levels);
  float s16 = f16_to_f32(h);
  while (s16 == 0.0f || range / s16 > levels) s16 = f16_to_f32(++h);
  if (!std::isfinite(s16))
    throw Error(fmt::format("scale {:g} (range {:g} / {}) exceeds the fp16 range ({:g})", range / levels, range,
                            s.levels(), kF16Max));
  const int z = std::clamp(static_cast<int>(std::nearbyint(-lo / s16)), 0, s.levels());
  return {h, s16, z};
}

uint8_t encode(float w, const Grid& g, const Scheme& s) {
  if (g.scale == 0.0f) return static_cast<uint8_t>(g.zero);  // all-zero group: code 0
  const float q = std::nearbyint(w / g.scale);
  if (s.symmetric) {
    const float qmax = static_cast<float>(s.qmax());
    return static_cast<uint8_t>(static_cast<int>(std::clamp(q, g.full_range ? -qmax - 1.0f : -qmax, qmax)) + g.zero);
  }
  return static_cast<uint8_t>(std::clamp(q + static_cast<float>(g.zero), 0.0f, static_cast<float>(s.levels())));
}

namespace detail {

void throw_bad_value(std::string_view name, const float* w, int64_t cols, int64_t idx, const char* why) {
  throw Error(fmt::format("tensor '{}': {} weight {} at index ({}, {})", name, why, w[idx], idx / cols, idx % cols));
}

void check_finite_ref(const float* w, int64_t rows, int64_t cols, std::string_view name) {
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(w[i])) throw_bad_value(name, w, cols, i, "non-finite");
}

void check_options_not_k(const QuantizeOptions& o, const Scheme& s, std::string_view name) {
  if (o.importance_per_weight)
    throw UsageError(fmt::format("tensor '{}': an importance per weight weights the K families' search; {} is not one", name, s.name()));
}

void check_grid_not_k(const QuantizeOptions& o, const Scheme& s, std::string_view name) {
  if (o.grid && s.is_kquant())
    throw UsageError(fmt::format("tensor '{}': a grid chooser picks an integer group's grid; {}'s super-blocks have none", name, s.name()));
}

GridChooser chooser_of(GridChooser grid, bool search) { return grid ? grid : search ? &search_grid : nullptr; }

QTensor make_tensor(int64_t rows, int64_t cols, const Scheme& s, std::string_view name) {
  try {
    s.check_shape(rows, cols);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("tensor '{}' ({}x{}): {}", name, rows, cols, e.what()));
  }
  QTensor q;
  q.scheme = s;
  q.name = std::string(name);
  q.rows = rows;
  q.cols = cols;
  const Buffers b = buffers_of(s, rows, cols);
  q.codes.assign(static_cast<size_t>(b.code_bytes), 0);
  q.scales.assign(static_cast<size_t>(b.scale_count), 0);
  q.zeros.assign(static_cast<size_t>(b.zero_bytes), 0);
  return q;
}

Grid grid_from(float lo, float hi, float absmax, const Scheme& s, std::string_view name, int64_t scale_index) {
  try {
    return s.symmetric ? symmetric_grid(absmax, s) : asymmetric_grid(lo, hi, s);
  } catch (const Error& e) {
    throw Error(fmt::format("tensor '{}', scale {}: {}", name, scale_index, e.what()));
  }
}

Grid grid_for(const float* v, int64_t n, const Scheme& s, std::string_view name, int64_t scale_index) {
  float lo = 0.0f, hi = 0.0f, absmax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
    absmax = std::max(absmax, std::fabs(v[i]));
  }
  return grid_from(lo, hi, absmax, s, name, scale_index);
}

void store_float_row(const float* w, int64_t cols, int64_t r, const Scheme& s, std::string_view name, uint8_t* out) {
  if (s.kind == Kind::fp32) {
    std::memcpy(out, w, static_cast<size_t>(cols) * 4);
    return;
  }
  for (int64_t c = 0; c < cols; ++c) {
    const bool half = s.kind == Kind::fp16;
    const uint16_t h = half ? f32_to_f16(w[c]) : f32_to_bf16(w[c]);
    // A finite float beyond the 16-bit format's range would silently become infinity.
    if (!std::isfinite(half ? f16_to_f32(h) : bf16_to_f32(h)))
      throw Error(fmt::format("tensor '{}': weight {} at index ({}, {}) exceeds the {} range", name, w[c], r, c,
                              s.name()));
    std::memcpy(out + 2 * c, &h, 2);
  }
}

}  // namespace detail

QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const Scheme& s, const QuantizeOptions& o,
                     std::string_view name) {
  detail::check_grid_not_k(o, s, name);
  if (s.is_kquant()) return kquantize(w, rows, cols, s, o.search, o.importance, o.importance_per_weight, name, /*parallel*/ false);
  detail::check_options_not_k(o, s, name);
  QTensor q = detail::make_tensor(rows, cols, s, name);
  detail::check_finite_ref(w, rows, cols, name);
  if (!s.is_integer()) {
    for (int64_t r = 0; r < rows; ++r)
      detail::store_float_row(w + r * cols, cols, r, s, name, q.codes.data() + r * q.row_bytes());
    return q;
  }
  std::vector<Grid> grids;
  const GridChooser chooser = detail::chooser_of(o.grid, o.search);
  if (s.group == kPerTensor) {
    grids.push_back(chooser ? chooser(w, rows * cols, o.importance, cols, s, name, 0) : detail::grid_for(w, rows * cols, s, name, 0));
  } else {
    const int64_t g = s.group_width(cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c0 = 0; c0 < cols; c0 += g) {
        const int64_t index = static_cast<int64_t>(grids.size());
        grids.push_back(chooser ? chooser(w + r * cols + c0, g, o.importance ? o.importance + c0 : nullptr, g, s, name, index)
                                : detail::grid_for(w + r * cols + c0, g, s, name, index));
      }
  }
  std::vector<uint8_t> zero_fields;
  for (size_t i = 0; i < grids.size() && rows * cols > 0; ++i) {
    q.scales[i] = grids[i].scale_bits;
    zero_fields.push_back(static_cast<uint8_t>(grids[i].zero));
  }
  if (!s.symmetric) pack_fields(zero_fields.data(), static_cast<int64_t>(zero_fields.size()), s.bits, q.zeros.data());

  std::vector<uint8_t> fields(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) fields[c] = encode(w[r * cols + c], grids[q.scale_index(r, c)], s);
    pack_fields(fields.data(), cols, s.bits, q.codes.data() + r * q.row_bytes());
  }
  return q;
}

void dequantize(const QTensor& q, float* out) {
  if (q.scheme.is_kquant()) {  // block by block: value_at would decode a block per weight
    const KFamily& f = kfamily_of(q.scheme);
    for (int64_t r = 0; r < q.rows; ++r)
      for (int64_t b = 0; b < q.cols / kSuperBlock; ++b)
        kdequantize_block(f, q.row_codes(r) + b * f.block_bytes, out + r * q.cols + b * kSuperBlock);
    return;
  }
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t c = 0; c < q.cols; ++c) out[r * q.cols + c] = q.value_at(r, c);
}

std::vector<float> dequantize(const QTensor& q) {
  std::vector<float> out(static_cast<size_t>(q.rows * q.cols));
  dequantize(q, out.data());
  return out;
}

}  // namespace mq
