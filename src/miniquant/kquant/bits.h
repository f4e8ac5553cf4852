// Bit layouts that several K families share (ggml's), so each is written once: 2-bit codes in four
// quarters of 32 bytes (q2_k, q3_k's low bits), 4-bit codes in two nibble halves of 32 bytes (q4_k, q5_k's
// low bits), and the 12-byte table of eight 6-bit scales and eight 6-bit mins with the fp16 factors before
// it (q4_k, q5_k).
#pragma once
#include <cstdint>

#include "miniquant/kquant/family.h"

namespace mq::kbits {

// 128 two-bit fields v (< 4) into 32 bytes: field 32k + l in bits 2k..2k+1 of byte l (k < 4, l < 32).
inline void pack_quarters(const uint8_t* v, uint8_t* out) {
  for (int l = 0; l < 32; ++l)
    out[l] = static_cast<uint8_t>((v[l] & 3) | (v[l + 32] & 3) << 2 | (v[l + 64] & 3) << 4 | (v[l + 96] & 3) << 6);
}
inline void unpack_quarters(const uint8_t* in, uint8_t* v) {
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < 32; ++l) v[32 * k + l] = static_cast<uint8_t>((in[l] >> (2 * k)) & 3);
}

// 64 four-bit fields v (< 16) into 32 bytes: field l in the low nibble of byte l, field 32 + l in its high one.
inline void pack_halves(const uint8_t* v, uint8_t* out) {
  for (int l = 0; l < 32; ++l) out[l] = static_cast<uint8_t>((v[l] & 15) | (v[l + 32] & 15) << 4);
}
inline void unpack_halves(const uint8_t* in, uint8_t* v) {
  for (int l = 0; l < 32; ++l) {
    v[l] = in[l] & 15;
    v[l + 32] = in[l] >> 4;
  }
}

// Eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-blocks 0-3 whole in bytes 0-3 (scale) and 4-7
// (min); sub-blocks 4-7 with their low nibbles in bytes 8-11 (scale low, min high) and their top two bits in
// bits 6-7 of bytes 0-3 (scale) and 4-7 (min).
inline void pack_scales_mins6(const KParams& p, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    const int sc_hi = p.sc[j + 4], m_hi = p.m[j + 4];
    s[j] = static_cast<uint8_t>((p.sc[j] & 63) | (sc_hi >> 4) << 6);
    s[j + 4] = static_cast<uint8_t>((p.m[j] & 63) | (m_hi >> 4) << 6);
    s[j + 8] = static_cast<uint8_t>((sc_hi & 15) | (m_hi & 15) << 4);
  }
}
inline void unpack_scales_mins6(const uint8_t* s, KParams& p) {
  for (int j = 0; j < 4; ++j) {
    p.sc[j] = s[j] & 63;
    p.m[j] = s[j + 4] & 63;
    p.sc[j + 4] = (s[j + 8] & 15) | (s[j] >> 6) << 4;
    p.m[j + 4] = (s[j + 8] >> 4) | (s[j + 4] >> 6) << 4;
  }
}

// The head q4_k and q5_k share: fp16 d and dmin, then the 12-byte table of 6-bit scales and mins (fields d,
// dmin, scales of Block).
template <class Block>
void pack_head6(const KParams& p, Block& b) {
  b.d = p.d;
  b.dmin = p.dmin;
  pack_scales_mins6(p, b.scales);
}
template <class Block>
void unpack_head6(const Block& b, KParams& p) {
  p = {};
  p.d = b.d;
  p.dmin = b.dmin;
  unpack_scales_mins6(b.scales, p);
}

}  // namespace mq::kbits
