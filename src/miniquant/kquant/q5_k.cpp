// q5_k: ggml's block_q5_K (176 bytes, 5.5 bits per weight). 8 sub-blocks of 32 weights, w = d sc q - dmin m
// with 5-bit codes q (four low bits as q4_k's, the fifth stored apart) and 6-bit sc and m.
#include <cstring>

#include "miniquant/kquant/bits.h"
#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant/family.h"

namespace mq {
// Named: in the unity build (CMakeLists.txt) the families' pack / unpack share one translation unit.
namespace q5k {

using kblocks::BlockQ5K;

void pack(const KParams& p, const uint8_t* codes, uint8_t* out) {
  BlockQ5K b{};
  kbits::pack_head6(p, b);
  uint8_t low[256];
  for (int j = 0; j < 256; ++j) {
    low[j] = codes[j] & 15;
    const int c = j / 64, l = j % 32, half = (j % 64) / 32;
    b.qh[l] |= static_cast<uint8_t>(((codes[j] >> 4) & 1) << (2 * c + half));
  }
  for (int c = 0; c < 4; ++c) kbits::pack_halves(low + 64 * c, b.qs + 32 * c);
  std::memcpy(out, &b, sizeof b);
}

void unpack(const uint8_t* in, KParams& p, uint8_t* codes) {
  BlockQ5K b;
  std::memcpy(&b, in, sizeof b);
  kbits::unpack_head6(b, p);
  if (!codes) return;
  for (int c = 0; c < 4; ++c) kbits::unpack_halves(b.qs + 32 * c, codes + 64 * c);
  for (int k = 0; k < 8; ++k)  // weight 32 k + l (k = 2 c + half): bit k of qh[l]
    for (int l = 0; l < 32; ++l) codes[32 * k + l] = static_cast<uint8_t>(codes[32 * k + l] | ((b.qh[l] >> k) & 1) << 4);
}

}  // namespace q5k

const KFamily& q5_k_family() {
  static const KFamily f{.name = "q5_k", .bits = 5, .sub = 32, .block_bytes = sizeof(q5k::BlockQ5K), .has_min = true,
                         .sc_lo = 0, .sc_hi = 63, .m_hi = 63, .zero = 0, .ggml_type = 13, .pack = q5k::pack, .unpack = q5k::unpack};
  return f;
}

}  // namespace mq
