// Optimized quantizer: xsimd for the per-group reductions and the encode loop, OpenMP over rows.
// It must produce the same bytes as quantize_ref: the grids come from the same scalar functions and
// the encode uses the same IEEE operations (division, round-half-even, clamp).
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "miniquant/error.h"
#include "miniquant/grid_search.h"
#include "miniquant/kquant.h"
#include "miniquant/pack.h"
#include "miniquant/quantize.h"
#include "miniquant/quantize_detail.h"

namespace mq {
namespace {

using fbatch = xsimd::batch<float>;
using ibatch = xsimd::batch<int32_t>;
constexpr int64_t kW = static_cast<int64_t>(fbatch::size);

// Index of the first NaN/Inf in v[0, n), or -1.
int64_t first_non_finite(const float* v, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW)
    if (xsimd::any(!xsimd::isfinite(fbatch::load_unaligned(v + i)))) break;
  for (; i < n; ++i)
    if (!std::isfinite(v[i])) return i;
  return -1;
}

struct Range {
  float lo = 0.0f, hi = 0.0f, absmax = 0.0f;
};

float lane_min(const fbatch& b) {
  alignas(64) std::array<float, fbatch::size> t;
  b.store_aligned(t.data());
  return *std::min_element(t.begin(), t.end());
}
float lane_max(const fbatch& b) {
  alignas(64) std::array<float, fbatch::size> t;
  b.store_aligned(t.data());
  return *std::max_element(t.begin(), t.end());
}

// min (<= 0), max (>= 0) and absmax of v[0, n).
Range range_of(const float* v, int64_t n) {
  fbatch lo(0.0f), hi(0.0f);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const fbatch b = fbatch::load_unaligned(v + i);
    lo = xsimd::min(lo, b);
    hi = xsimd::max(hi, b);
  }
  Range r{lane_min(lo), lane_max(hi), 0.0f};
  for (; i < n; ++i) {
    r.lo = std::min(r.lo, v[i]);
    r.hi = std::max(r.hi, v[i]);
  }
  r.absmax = std::max(-r.lo, r.hi);  // |x| <= max(-min, max), and one of them is attained
  return r;
}

// fields[i] = encode(v[i], g, s) for i in [0, n).
void encode_span(const float* v, int64_t n, const Grid& g, const Scheme& s, uint8_t* fields) {
  if (g.scale == 0.0f) {
    std::memset(fields, g.zero, static_cast<size_t>(n));
    return;
  }
  const fbatch scale(g.scale);
  // Symmetric: clamp the signed code, then add the offset. Asymmetric: add z, then clamp the field.
  const float lo = s.symmetric ? -static_cast<float>(s.qmax()) - (g.full_range ? 1.0f : 0.0f) : 0.0f;
  const float hi = s.symmetric ? static_cast<float>(s.qmax()) : static_cast<float>(s.levels());
  const fbatch pre(s.symmetric ? 0.0f : static_cast<float>(g.zero));
  const ibatch post(s.symmetric ? g.zero : 0);
  const fbatch vlo(lo), vhi(hi);
  alignas(64) std::array<int32_t, fbatch::size> t;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const fbatch q = xsimd::nearbyint(fbatch::load_unaligned(v + i) / scale) + pre;
    const ibatch f = xsimd::batch_cast<int32_t>(xsimd::clip(q, vlo, vhi)) + post;
    f.store_aligned(t.data());
    for (int64_t k = 0; k < kW; ++k) fields[i + k] = static_cast<uint8_t>(t[k]);
  }
  for (; i < n; ++i) fields[i] = encode(v[i], g, s);
}

// Run body(r) for every row in parallel; an exception in any row is rethrown after the loop as the
// one of the lowest failing row, by running that row again serially (so the message is
// deterministic, and no exception crosses the OpenMP region).
template <class Body>
void for_rows(int64_t rows, Body&& body) {
  int64_t failed = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : failed)
  for (int64_t r = 0; r < rows; ++r) {
    try {
      body(r);
    } catch (...) {
      failed = std::min(failed, r);
    }
  }
  if (failed != INT64_MAX) body(failed);
}

}  // namespace

QTensor quantize(const float* w, int64_t rows, int64_t cols, const Scheme& s, const QuantizeOptions& o,
                 std::string_view name) {
  detail::check_grid_not_k(o, s, name);
  if (s.is_kquant()) return kquantize(w, rows, cols, s, o.search, o.importance, o.importance_per_weight, name, /*parallel*/ true);
  detail::check_options_not_k(o, s, name);
  QTensor q = detail::make_tensor(rows, cols, s, name);

  int64_t bad = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = first_non_finite(w + r * cols, cols);
    if (c >= 0) bad = std::min(bad, r * cols + c);
  }
  if (bad != INT64_MAX) detail::throw_bad_value(name, w, cols, bad, "non-finite");

  if (!s.is_integer()) {
    for_rows(rows, [&](int64_t r) {
      detail::store_float_row(w + r * cols, cols, r, s, name, q.codes.data() + r * q.row_bytes());
    });
    return q;
  }
  if (rows * cols == 0) return q;

  // Grids: per-tensor reduces over everything; otherwise one range per (row, group).
  const int64_t gw = s.group_width(cols), gpr = s.groups_per_row(cols);
  std::vector<Grid> grids;
  const GridChooser chooser = detail::chooser_of(o.grid, o.search);
  if (s.group == kPerTensor) {
    float lo = 0.0f, hi = 0.0f;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
    for (int64_t r = 0; r < rows; ++r) {
      const Range rr = range_of(w + r * cols, cols);
      lo = std::min(lo, rr.lo);
      hi = std::max(hi, rr.hi);
    }
    grids.push_back(chooser ? chooser(w, rows * cols, o.importance, cols, s, name, 0)
                            : detail::grid_from(lo, hi, std::max(-lo, hi), s, name, 0));
  } else if (chooser) {
    // The same scalar chooser as quantize_ref, rows in parallel; a failing group is reported by for_rows in order.
    grids.resize(static_cast<size_t>(rows * gpr));
    for_rows(rows, [&](int64_t r) {
      for (int64_t g = 0; g < gpr; ++g)
        grids[r * gpr + g] = chooser(w + r * cols + g * gw, gw, o.importance ? o.importance + g * gw : nullptr, gw, s,
                                     name, r * gpr + g);
    });
  } else {
    std::vector<Range> ranges(static_cast<size_t>(rows * gpr));
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < gpr; ++g) ranges[r * gpr + g] = range_of(w + r * cols + g * gw, gw);
    grids.resize(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i)  // serial: a scale error names the first bad group
      grids[i] = detail::grid_from(ranges[i].lo, ranges[i].hi, ranges[i].absmax, s, name, static_cast<int64_t>(i));
  }
  std::vector<uint8_t> zero_fields(grids.size());
  for (size_t i = 0; i < grids.size(); ++i) {
    q.scales[i] = grids[i].scale_bits;
    zero_fields[i] = static_cast<uint8_t>(grids[i].zero);
  }
  if (!s.symmetric) pack_fields(zero_fields.data(), static_cast<int64_t>(zero_fields.size()), s.bits, q.zeros.data());

#pragma omp parallel
  {
    std::vector<uint8_t> fields(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < gpr; ++g) {
        const Grid& grid = grids[s.group == kPerTensor ? 0 : r * gpr + g];
        encode_span(w + r * cols + g * gw, gw, grid, s, fields.data() + g * gw);
      }
      pack_fields(fields.data(), cols, s.bits, q.codes.data() + r * q.row_bytes());
    }
  }
  return q;
}

}  // namespace mq
