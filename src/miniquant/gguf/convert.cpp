// QTensor -> ggml block formats, and the reference dequantizer.
#include "miniquant/gguf/convert.h"

#include <cmath>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/half.h"
#include "miniquant/kquant.h"
#include "miniquant/pack.h"

namespace mq::gguf {

std::string exportable_schemes() {
  std::string k;
  for (const Scheme& s : scheme_table())
    if (s.is_kquant()) k += (k.empty() ? "" : ", ") + s.name();
  return "fp32, fp16, bf16 (F32/F16/BF16), int8-per-channel and int8-g32/g64/g128 (Q8_0), int4-per-channel and "
         "int4-g32/g64/g128 (Q4_0), int4-g32/g64/g128-asym and int4-per-channel-asym (Q4_1), " + k + " (the same K types)";
}

TensorType type_for(const Scheme& s) {
  switch (s.kind) {
    case Kind::fp32: return TensorType::F32;
    case Kind::fp16: return TensorType::F16;
    case Kind::bf16: return TensorType::BF16;
    case Kind::kquant: return static_cast<TensorType>(kfamily_of(s).ggml_type);
    case Kind::integer: break;
  }
  // The family's row names the ggml type; a group must hold whole 32-element blocks, so a block never straddles
  // two scales.
  const bool grouping_ok = s.group == kPerChannel || s.group == 32 || s.group == 64 || s.group == 128;
  const FormatTraits& f = traits_of(s);
  const uint32_t t = s.symmetric ? f.gguf_symmetric : f.gguf_asymmetric;
  if (grouping_ok && t != 0) return static_cast<TensorType>(t);
  throw mq::UsageError(fmt::format("scheme {} has no GGUF export (no ggml type stores it exactly as miniquant does); "
                                   "exportable: {}",
                                   s.name(), exportable_schemes()));
}

namespace {

// Nibbles of one 32-element block in ggml order: byte j = element j (low) | element j + 16 (high).
void pack_ggml_nibbles(const uint8_t* fields, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(fields[j] | (fields[j + kQK / 2] << 4));
}

template <class Block>
std::vector<uint8_t> as_bytes(const std::vector<Block>& blocks) {
  std::vector<uint8_t> out(blocks.size() * sizeof(Block));
  if (!out.empty()) std::memcpy(out.data(), blocks.data(), out.size());
  return out;
}

}  // namespace

Tensor from_qtensor(const QTensor& q, std::string name) {
  const TensorType type = type_for(q.scheme);
  Tensor t{std::move(name), {q.cols, q.rows}, type, {}};
  if (!q.scheme.is_integer()) {
    // Float schemes store raw little-endian values, rows unpadded, and K families ggml's own blocks: exactly
    // ggml's layout.
    t.data.assign(q.codes.data(), q.codes.data() + q.codes.size());
    return t;
  }
  if (q.cols % kQK != 0)
    throw mq::UsageError(fmt::format("{}: {} columns are not a multiple of the GGUF block size {}", t.name, q.cols, kQK));
  const int bits = q.scheme.bits;
  const int64_t nb = q.cols / kQK;
  uint8_t fields[kQK];
  std::vector<BlockQ8_0> q8;
  std::vector<BlockQ4_0> q4;
  std::vector<BlockQ4_1> q41;
  for (int64_t r = 0; r < q.rows; ++r) {
    const uint8_t* row = q.row_codes(r);
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t c0 = b * kQK;
      for (int j = 0; j < kQK; ++j) fields[j] = mq::field_at(row, c0 + j, bits);
      // Groups are 32, 64, 128 or a whole row: a block never straddles two scales.
      const uint16_t d = q.scales[static_cast<size_t>(q.scale_index(r, c0))];
      switch (type) {
        case TensorType::Q8_0: {
          BlockQ8_0 blk{d, {}};
          for (int j = 0; j < kQK; ++j) blk.qs[j] = static_cast<int8_t>(fields[j] - 128);
          q8.push_back(blk);
          break;
        }
        case TensorType::Q4_0: {
          BlockQ4_0 blk{d, {}};
          pack_ggml_nibbles(fields, blk.qs);
          q4.push_back(blk);
          break;
        }
        case TensorType::Q4_1: {
          const int z = q.zero_at(r, c0);
          // s z is exact in float (11 + 4 significant bits); only the fp16 rounding of m is inexact.
          const float m = -f16_to_f32(d) * static_cast<float>(z);
          if (std::fabs(m) > kF16Max)
            throw mq::Error(fmt::format("{}: row {} block {}: Q4_1 minimum {} does not fit fp16", t.name, r, b, m));
          BlockQ4_1 blk{d, f32_to_f16(m), {}};
          pack_ggml_nibbles(fields, blk.qs);
          q41.push_back(blk);
          break;
        }
        default: break;
      }
    }
  }
  t.data = type == TensorType::Q8_0 ? as_bytes(q8) : type == TensorType::Q4_0 ? as_bytes(q4) : as_bytes(q41);
  return t;
}

Tensor from_floats(const float* x, int64_t rows, int64_t cols, TensorType type, std::string name, bool vector) {
  Tensor t{std::move(name), vector ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows}, type, {}};
  const size_t n = static_cast<size_t>(rows * cols);
  switch (type) {
    case TensorType::F32:
      t.data.resize(n * 4);
      if (n) std::memcpy(t.data.data(), x, n * 4);
      return t;
    case TensorType::F16:
    case TensorType::BF16: {
      std::vector<uint16_t> h(n);
      for (size_t i = 0; i < n; ++i) {
        if (type == TensorType::F16 && !(std::fabs(x[i]) <= kF16Max))
          throw mq::Error(fmt::format("{}: element {} = {} does not fit fp16", t.name, i, x[i]));
        h[i] = type == TensorType::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
      }
      t.data.resize(n * 2);
      if (n) std::memcpy(t.data.data(), h.data(), n * 2);
      return t;
    }
    default:
      throw mq::UsageError(fmt::format("{}: from_floats stores F32, F16 or BF16, not {}", t.name, tensor_type_name(type)));
  }
}

std::vector<float> dequantize(const Tensor& t) {
  const int64_t n = t.elements();
  if (static_cast<int64_t>(t.data.size()) != tensor_bytes(t.type, t.ne.empty() ? 0 : t.ne[0], t.rows()))
    throw mq::Error(fmt::format("gguf: tensor \"{}\" data size does not match its shape", t.name));
  std::vector<float> y(static_cast<size_t>(n));
  const uint8_t* p = t.data.data();
  switch (t.type) {
    case TensorType::F32:
      if (n) std::memcpy(y.data(), p, static_cast<size_t>(n) * 4);
      break;
    case TensorType::F16:
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        y[i] = t.type == TensorType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    case TensorType::Q8_0:
      for (int64_t b = 0; b < n / kQK; ++b) {
        BlockQ8_0 blk;
        std::memcpy(&blk, p + b * sizeof blk, sizeof blk);
        const float d = f16_to_f32(blk.d);
        for (int j = 0; j < kQK; ++j) y[b * kQK + j] = static_cast<float>(blk.qs[j]) * d;
      }
      break;
    case TensorType::Q4_0:
      for (int64_t b = 0; b < n / kQK; ++b) {
        BlockQ4_0 blk;
        std::memcpy(&blk, p + b * sizeof blk, sizeof blk);
        const float d = f16_to_f32(blk.d);
        for (int j = 0; j < kQK / 2; ++j) {
          y[b * kQK + j] = static_cast<float>((blk.qs[j] & 15) - 8) * d;
          y[b * kQK + j + kQK / 2] = static_cast<float>((blk.qs[j] >> 4) - 8) * d;
        }
      }
      break;
    case TensorType::Q4_1:
      for (int64_t b = 0; b < n / kQK; ++b) {
        BlockQ4_1 blk;
        std::memcpy(&blk, p + b * sizeof blk, sizeof blk);
        const float d = f16_to_f32(blk.d), m = f16_to_f32(blk.m);
        for (int j = 0; j < kQK / 2; ++j) {
          y[b * kQK + j] = static_cast<float>(blk.qs[j] & 15) * d + m;
          y[b * kQK + j + kQK / 2] = static_cast<float>(blk.qs[j] >> 4) * d + m;
        }
      }
      break;
    default:  // a K type (the only others type_traits knows): its family's decoder, ggml's float operations
      for (const FormatTraits& f : format_table())
        if (f.kquant && f.kquant->ggml_type == static_cast<uint32_t>(t.type))
          for (int64_t b = 0; b < n / kSuperBlock; ++b)
            kdequantize_block(*f.kquant, p + b * f.kquant->block_bytes, y.data() + b * kSuperBlock);
      break;
  }
  return y;
}

double q4_1_error_bound(float s, int z, float y) {
  const double v = std::fabs(static_cast<double>(s) * z);
  // Half an fp16 ulp at v: 2^(e - 11) for v in [2^e, 2^(e+1)), e >= -14; 2^-25 in the subnormal range.
  double half_ulp = std::ldexp(1.0, -25);
  if (v >= std::ldexp(1.0, -14)) half_ulp = std::ldexp(1.0, std::ilogb(v) - 11);
  return half_ulp + std::ldexp(std::fabs(static_cast<double>(y)), -24) * (1.0 + 1e-6);
}

}  // namespace mq::gguf
