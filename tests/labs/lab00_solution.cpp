// Lab 00 solution: a learner-style solution of lab 00 (quantizers), written from the handout
// (labs/00-quantizers/README.md, lab00.h and the library headers it names) alone on 2026-11-29.
// It is graded by the test suite (target lab00_solution) with the lab's own checks; it is not the
// course's reference solution, and it calls none of the library functions it is graded against.
#include "lab00.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/half.h"  // mq::f32_to_f16, mq::f16_to_f32

namespace lab {

namespace {

int64_t packed_row_bytes(int64_t cols, int bits) { return (cols * bits + 7) / 8; }

}  // namespace

mq::Grid symmetric_grid(float absmax, const mq::Scheme& s) {
  mq::Grid g;
  g.zero = 1 << (s.bits - 1);
  if (std::isnan(absmax) || std::isinf(absmax)) {
    throw mq::Error("symmetric_grid: absmax " + std::to_string(absmax) + " is not finite");
  }
  if (absmax == 0.0f) {  // all-zero group: scale 0, every code at the zero field
    g.scale_bits = 0;
    g.scale = 0.0f;
    return g;
  }
  const int qmax = s.qmax();
  const float raw = absmax / static_cast<float>(qmax);
  if (!(raw <= mq::kF16Max)) {
    throw mq::Error("symmetric_grid: scale " + std::to_string(raw) + " (absmax " + std::to_string(absmax) +
                    ") does not fit fp16");
  }
  uint16_t h = mq::f32_to_f16(raw);
  // fp16 rounding may make the scale too small (subnormals): step up until absmax is within half a step.
  while (absmax / mq::f16_to_f32(h) > static_cast<float>(qmax) + 0.5f) {
    ++h;
    if ((h & 0x7c00u) == 0x7c00u) throw mq::Error("symmetric_grid: scale does not fit fp16");
  }
  if ((h & 0x7c00u) == 0x7c00u) throw mq::Error("symmetric_grid: scale does not fit fp16");
  g.scale_bits = h;
  g.scale = mq::f16_to_f32(h);
  return g;
}

uint8_t encode(float w, const mq::Grid& g, const mq::Scheme& s) {
  if (g.scale == 0.0f) return static_cast<uint8_t>(g.zero);
  const int qmax = s.qmax();
  float q = std::nearbyint(w / g.scale);
  q = std::clamp(q, static_cast<float>(-qmax), static_cast<float>(qmax));
  return static_cast<uint8_t>(static_cast<int>(q) + g.zero);
}

void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out) {
  const int64_t nbytes = packed_row_bytes(n, bits);
  if (bits == 8) {
    std::copy(fields, fields + n, out);
    return;
  }
  if (bits == 4) {
    for (int64_t j = 0; j < nbytes; ++j) {
      const uint8_t lo = fields[2 * j] & 0x0f;
      const uint8_t hi = (2 * j + 1 < n) ? static_cast<uint8_t>(fields[2 * j + 1] & 0x0f) : 0;
      out[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    return;
  }
  // any other width: one little-endian bit stream
  std::fill(out, out + nbytes, uint8_t{0});
  const uint32_t mask = (1u << bits) - 1u;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bit = i * bits;
    const uint32_t v = (fields[i] & mask) << (bit & 7);
    out[bit >> 3] |= static_cast<uint8_t>(v & 0xffu);
    if ((bit & 7) + bits > 8) out[(bit >> 3) + 1] |= static_cast<uint8_t>(v >> 8);
  }
}

mq::Storage storage_of(const mq::Scheme& s, int64_t rows, int64_t cols) {
  mq::Storage st;
  if (!s.is_integer()) {
    if (s.is_kquant()) throw mq::UsageError("lab::storage_of: K families are not part of lab 00");
    st.code_bytes = rows * cols * (s.bits / 8);
    return st;
  }
  st.code_bytes = rows * packed_row_bytes(cols, s.bits);
  int64_t scales = 0;
  if (s.group == mq::kPerTensor) {
    scales = 1;
  } else if (s.group == mq::kPerChannel) {
    scales = rows;
  } else {
    scales = rows * (cols / s.group);
  }
  st.scale_bytes = 2 * scales;
  if (!s.symmetric) st.zero_bytes = (scales * s.bits + 7) / 8;
  return st;
}

mq::QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, std::string_view name) {
  if (!s.is_integer() || !s.symmetric || (s.bits != 8 && s.bits != 4)) {
    throw mq::UsageError("lab::quantize_ref: only symmetric int8 / int4 schemes, not " + s.name());
  }
  if (s.group > 0 && cols % s.group != 0) {
    throw mq::UsageError("lab::quantize_ref: group " + std::to_string(s.group) + " does not divide cols " +
                         std::to_string(cols) + " of " + std::string(name));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (!std::isfinite(w[r * cols + c])) {
        throw mq::Error(std::string(name) + ": non-finite weight at (" + std::to_string(r) + ", " +
                        std::to_string(c) + ")");
      }
    }
  }
  mq::QTensor q;
  q.scheme = s;
  q.name = std::string(name);
  q.rows = rows;
  q.cols = cols;
  const int64_t rb = packed_row_bytes(cols, s.bits);
  q.codes.assign(static_cast<size_t>(rows * rb), uint8_t{0});

  const int64_t gw = s.group > 0 ? s.group : cols;           // columns per scale within a row
  const int64_t gpr = s.group > 0 ? cols / s.group : 1;      // scales per row
  std::vector<mq::Grid> grids;
  if (s.group == mq::kPerTensor) {
    float amax = 0.0f;
    for (int64_t i = 0; i < rows * cols; ++i) amax = std::max(amax, std::fabs(w[i]));
    grids.push_back(lab::symmetric_grid(amax, s));
  } else {
    grids.reserve(static_cast<size_t>(rows * gpr));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t gi = 0; gi < gpr; ++gi) {
        float amax = 0.0f;
        const float* p = w + r * cols + gi * gw;
        for (int64_t c = 0; c < gw; ++c) amax = std::max(amax, std::fabs(p[c]));
        grids.push_back(lab::symmetric_grid(amax, s));
      }
    }
  }
  q.scales.reserve(grids.size());
  for (const auto& g : grids) q.scales.push_back(g.scale_bits);

  std::vector<uint8_t> fields(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const mq::Grid& g = (s.group == mq::kPerTensor) ? grids[0] : grids[static_cast<size_t>(r * gpr + c / gw)];
      fields[static_cast<size_t>(c)] = lab::encode(w[r * cols + c], g, s);
    }
    lab::pack_fields(fields.data(), cols, s.bits, q.codes.data() + r * rb);
  }
  return q;
}

mq::QuantStats measure_scheme(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, const std::string& name) {
  mq::QuantStats st;
  st.scheme = s;
  st.rows = rows;
  st.cols = cols;
  const auto t0 = std::chrono::steady_clock::now();
  mq::QTensor q = lab::quantize_ref(w, rows, cols, s, name);
  st.quantize_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<float> back = mq::dequantize(q);
  double sw2 = 0.0, se2 = 0.0, emax = 0.0;
  const int64_t n = rows * cols;
  for (int64_t i = 0; i < n; ++i) {
    const double x = w[i];
    const double e = x - static_cast<double>(back[static_cast<size_t>(i)]);
    sw2 += x * x;
    se2 += e * e;
    emax = std::max(emax, std::fabs(e));
  }
  st.storage = lab::storage_of(s, rows, cols);
  st.bits_per_weight = n > 0 ? static_cast<double>(st.storage.total()) * 8.0 / static_cast<double>(n) : 0.0;
  st.max_abs_error = emax;
  st.rms_error = n > 0 ? std::sqrt(se2 / static_cast<double>(n)) : 0.0;
  st.sqnr_db = se2 == 0.0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(sw2 / se2);
  return st;
}

}  // namespace lab
