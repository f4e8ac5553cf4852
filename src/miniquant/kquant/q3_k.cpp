// q3_k: ggml's block_q3_K (110 bytes, 3.4375 bits per weight). 16 sub-blocks of 16 weights, w = d sc (q - 4)
// with 3-bit codes q (two low bits and a high bit stored apart) and signed 6-bit sc.
#include <cstring>

#include "miniquant/kquant/bits.h"
#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant/family.h"

namespace mq {
// Named: in the unity build (CMakeLists.txt) the families' pack / unpack share one translation unit.
namespace q3k {

using kblocks::BlockQ3K;

void pack(const KParams& p, const uint8_t* codes, uint8_t* out) {
  BlockQ3K b{};
  for (int j = 0; j < 16; ++j) {
    const int l = (p.sc[j] + 32) & 63;
    b.scales[j % 8] |= static_cast<uint8_t>((l & 15) << (j < 8 ? 0 : 4));
    b.scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
  }
  uint8_t low[256];
  for (int j = 0; j < 256; ++j) {
    low[j] = codes[j] & 3;
    b.hmask[j % 32] |= static_cast<uint8_t>(((codes[j] >> 2) & 1) << (j / 32));
  }
  kbits::pack_quarters(low, b.qs);
  kbits::pack_quarters(low + 128, b.qs + 32);
  b.d = p.d;
  std::memcpy(out, &b, sizeof b);
}

void unpack(const uint8_t* in, KParams& p, uint8_t* codes) {
  BlockQ3K b;
  std::memcpy(&b, in, sizeof b);
  p = {};
  p.d = b.d;
  for (int j = 0; j < 16; ++j) {
    const int low = (b.scales[j % 8] >> (j < 8 ? 0 : 4)) & 15;
    const int high = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    p.sc[j] = (low | high << 4) - 32;
  }
  if (!codes) return;
  kbits::unpack_quarters(b.qs, codes);
  kbits::unpack_quarters(b.qs + 32, codes + 128);
  for (int k = 0; k < 8; ++k)  // weight 32 k + l: bit k of hmask[l]
    for (int l = 0; l < 32; ++l) codes[32 * k + l] = static_cast<uint8_t>(codes[32 * k + l] | ((b.hmask[l] >> k) & 1) << 2);
}

}  // namespace q3k

const KFamily& q3_k_family() {
  static const KFamily f{.name = "q3_k", .bits = 3, .sub = 16, .block_bytes = sizeof(q3k::BlockQ3K), .has_min = false,
                         .sc_lo = -32, .sc_hi = 31, .m_hi = 0, .zero = 4, .ggml_type = 11, .pack = q3k::pack, .unpack = q3k::unpack};
  return f;
}

}  // namespace mq
