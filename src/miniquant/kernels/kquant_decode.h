// The K kernel's block decoders, one per family: a block's sub-block grids (KGrid: D_b and M_b) and its 256
// codes, read from ggml's bytes in place (kquant/blocks.h). They compute exactly what the family's generic
// unpack followed by kgrid() computes (the same float operations on the same integers), which is the twin
// tests/test_kquant.cpp compares them with, byte for byte and bit for bit, over random blocks.
//
// Why a decoder per family: the generic path (a function pointer to the family's unpack, KParams' integers,
// then kgrid's loop over a run-time sub-block count) cost 1.0-2.9 ms of the 2.3-4.0 ms one 4096 x 4096
// product took on one thread (Xeon, AVX-512), more than the multiply-adds. Here every count is a constant, so
// the byte loops below are unrolled and vectorized by the compiler on every ISA (AVX-512, AVX2, NEON) with no
// intrinsics of their own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"

#include "miniquant/half.h"
#include "miniquant/kquant/bits.h"
#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant.h"

namespace mq::kdecode {

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return f16_to_f32(h);
}

// One stored bit per code, above its low bits: code 32 k + l gets bit k of planes[l] at bit `shift` (k < 8,
// l < 32): q3_k's high bit (hmask), q5_k's fifth bit (qh).
inline void high_bits(const uint8_t* planes, int shift, uint8_t* codes) {
  for (int k = 0; k < 8; ++k)
    for (int l = 0; l < 32; ++l) codes[32 * k + l] = static_cast<uint8_t>(codes[32 * k + l] | ((planes[l] >> k) & 1) << shift);
}
// Eight 6-bit scales and mins (kbits::unpack_scales_mins6) straight to D = d sc and M = dmin m.
inline void scales_mins6(const uint8_t* s, float d, float dmin, KGrid& g) {
  for (int j = 0; j < 4; ++j) {
    g.D[j] = d * static_cast<float>(s[j] & 63);
    g.M[j] = dmin * static_cast<float>(s[j + 4] & 63);
    g.D[j + 4] = d * static_cast<float>((s[j + 8] & 15) | (s[j] >> 6) << 4);
    g.M[j + 4] = dmin * static_cast<float>((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
  }
}

// Each decoder: decode(block, grid, codes) with codes (kSuperBlock); kBits names the family, kSub and kZero are
// its sub-block size and code offset (KFamily::sub, zero), constants for the loops that use them.
struct Q2K {
  static constexpr int kBits = 2, kSub = 16, kZero = 0;
  static void decode(const uint8_t* blk, KGrid& g, uint8_t* codes) {
    using B = kblocks::BlockQ2K;
    const uint8_t* sc = blk + offsetof(B, scales);
    const float d = load_f16(blk + offsetof(B, d)), dmin = load_f16(blk + offsetof(B, dmin));
    for (int j = 0; j < 16; ++j) {
      g.D[j] = d * static_cast<float>(sc[j] & 15);
      g.M[j] = dmin * static_cast<float>(sc[j] >> 4);
    }
    kbits::unpack_quarters(blk + offsetof(B, qs), codes);
    kbits::unpack_quarters(blk + offsetof(B, qs) + 32, codes + 128);
  }
};

struct Q3K {
  static constexpr int kBits = 3, kSub = 16, kZero = 4;
  static void decode(const uint8_t* blk, KGrid& g, uint8_t* codes) {
    using B = kblocks::BlockQ3K;
    const uint8_t* s = blk + offsetof(B, scales);
    const float d = load_f16(blk + offsetof(B, d));
    for (int j = 0; j < 16; ++j) {
      const int low = (j < 8 ? s[j] : s[j - 8] >> 4) & 15;
      const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
      g.D[j] = d * static_cast<float>((low | high << 4) - 32);
      g.M[j] = 0.0f;
    }
    const uint8_t* hm = blk + offsetof(B, hmask);
    kbits::unpack_quarters(blk + offsetof(B, qs), codes);
    kbits::unpack_quarters(blk + offsetof(B, qs) + 32, codes + 128);
    high_bits(hm, 2, codes);
  }
};

struct Q4K {
  static constexpr int kBits = 4, kSub = 32, kZero = 0;
  static void decode(const uint8_t* blk, KGrid& g, uint8_t* codes) {
    using B = kblocks::BlockQ4K;
    scales_mins6(blk + offsetof(B, scales), load_f16(blk + offsetof(B, d)), load_f16(blk + offsetof(B, dmin)), g);
    for (int c = 0; c < 4; ++c) kbits::unpack_halves(blk + offsetof(B, qs) + 32 * c, codes + 64 * c);
  }
};

struct Q5K {
  static constexpr int kBits = 5, kSub = 32, kZero = 0;
  static void decode(const uint8_t* blk, KGrid& g, uint8_t* codes) {
    using B = kblocks::BlockQ5K;
    scales_mins6(blk + offsetof(B, scales), load_f16(blk + offsetof(B, d)), load_f16(blk + offsetof(B, dmin)), g);
    const uint8_t* qh = blk + offsetof(B, qh);
    for (int c = 0; c < 4; ++c) kbits::unpack_halves(blk + offsetof(B, qs) + 32 * c, codes + 64 * c);
    high_bits(qh, 4, codes);
  }
};

struct Q6K {
  static constexpr int kBits = 6, kSub = 16, kZero = 32;
  static void decode(const uint8_t* blk, KGrid& g, uint8_t* codes) {
    using B = kblocks::BlockQ6K;
    const float d = load_f16(blk + offsetof(B, d));
    const uint8_t* sc = blk + offsetof(B, scales);
    for (int j = 0; j < 16; ++j) {
      g.D[j] = d * static_cast<float>(static_cast<int8_t>(sc[j]));
      g.M[j] = 0.0f;
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + offsetof(B, ql) + 64 * h;
      const uint8_t* qh = blk + offsetof(B, qh) + 32 * h;
      uint8_t* q = codes + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const uint8_t a = ql[l], c = ql[32 + l], hi = qh[l];
        q[l] = static_cast<uint8_t>((a & 15) | (hi & 3) << 4);
        q[l + 32] = static_cast<uint8_t>((c & 15) | (hi >> 2 & 3) << 4);
        q[l + 64] = static_cast<uint8_t>((a >> 4) | (hi >> 4 & 3) << 4);
        q[l + 96] = static_cast<uint8_t>((c >> 4) | (hi >> 6 & 3) << 4);
      }
    }
  }
};

// w: (kSuperBlock) the block's weights, kvalue's float operations on the decoded grid and codes.
// The codes are converted in one loop of their own: fused into the 16-weight sub-block loops gcc left the
// conversion scalar (3.5x slower for the 16-weight families at 4096 x 4096).
template <class Dec>
void dequantize(const KGrid& g, const uint8_t* codes, float* w) {
  alignas(64) float q[kSuperBlock];
  for (int i = 0; i < kSuperBlock; ++i) q[i] = static_cast<float>(codes[i] - Dec::kZero);
  for (int j = 0; j < kSuperBlock / Dec::kSub; ++j) {
    const float D = g.D[j], M = g.M[j];
    for (int i = j * Dec::kSub; i < (j + 1) * Dec::kSub; ++i) w[i] = D * q[i] - M;
  }
}

// Calls f(Dec{}) with the decoder of family fam (the five above as a list of types, matched on their code width, one
// family per width) and returns true; false when fam is none of them. For entry points that take a tensor, not a
// registry row (the rows carry their decoder as a template argument).
template <class F>
bool with_decoder(const KFamily& fam, F&& f) {
  return [&]<class... D>(D*...) { return ((fam.bits == D::kBits ? (f(D{}), true) : false) || ...); }(
      static_cast<Q2K*>(nullptr), static_cast<Q3K*>(nullptr), static_cast<Q4K*>(nullptr), static_cast<Q5K*>(nullptr),
      static_cast<Q6K*>(nullptr));
}

}  // namespace mq::kdecode

namespace mq::kdetail {
// A K tensor of the family Dec decodes times x from kEigenMinTokens tokens: the register tile of kquant_ftile.h on
// AVX-512, dequantized panels and Eigen's GEMM elsewhere (kquant.cpp, instantiated for the five decoders); the
// dynamic modes reuse it on their quantized activations.
template <class Dec>
void gemm_kquant_batch(const QTensor& w, const float* x, int64_t n, float* y, int threads);
}  // namespace mq::kdetail
