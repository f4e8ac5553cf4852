// q2_k: ggml's block_q2_K (84 bytes, 2.625 bits per weight). 16 sub-blocks of 16 weights, w = d sc q - dmin m
// with 2-bit codes q and 4-bit sc and m.
#include <cstring>

#include "miniquant/kquant/bits.h"
#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant/family.h"

namespace mq {
// Named: in the unity build (CMakeLists.txt) the families' pack / unpack share one translation unit.
namespace q2k {

using kblocks::BlockQ2K;

void pack(const KParams& p, const uint8_t* codes, uint8_t* out) {
  BlockQ2K b{};
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>((p.sc[j] & 15) | (p.m[j] & 15) << 4);
  kbits::pack_quarters(codes, b.qs);
  kbits::pack_quarters(codes + 128, b.qs + 32);
  b.d = p.d;
  b.dmin = p.dmin;
  std::memcpy(out, &b, sizeof b);
}

void unpack(const uint8_t* in, KParams& p, uint8_t* codes) {
  BlockQ2K b;
  std::memcpy(&b, in, sizeof b);
  p = {};
  p.d = b.d;
  p.dmin = b.dmin;
  for (int j = 0; j < 16; ++j) {
    p.sc[j] = b.scales[j] & 15;
    p.m[j] = b.scales[j] >> 4;
  }
  if (!codes) return;
  kbits::unpack_quarters(b.qs, codes);
  kbits::unpack_quarters(b.qs + 32, codes + 128);
}

}  // namespace q2k

const KFamily& q2_k_family() {
  static const KFamily f{.name = "q2_k", .bits = 2, .sub = 16, .block_bytes = sizeof(q2k::BlockQ2K), .has_min = true,
                         .sc_lo = 0, .sc_hi = 15, .m_hi = 15, .zero = 0, .ggml_type = 10, .pack = q2k::pack, .unpack = q2k::unpack};
  return f;
}

}  // namespace mq
