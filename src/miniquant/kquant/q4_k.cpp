// q4_k: ggml's block_q4_K (144 bytes, 4.5 bits per weight). 8 sub-blocks of 32 weights, w = d sc q - dmin m
// with 4-bit codes q and 6-bit sc and m.
#include <cstring>

#include "miniquant/kquant/bits.h"
#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant/family.h"

namespace mq {
// Named: in the unity build (CMakeLists.txt) the families' pack / unpack share one translation unit.
namespace q4k {

using kblocks::BlockQ4K;

void pack(const KParams& p, const uint8_t* codes, uint8_t* out) {
  BlockQ4K b{};
  kbits::pack_head6(p, b);
  for (int c = 0; c < 4; ++c) kbits::pack_halves(codes + 64 * c, b.qs + 32 * c);
  std::memcpy(out, &b, sizeof b);
}

void unpack(const uint8_t* in, KParams& p, uint8_t* codes) {
  BlockQ4K b;
  std::memcpy(&b, in, sizeof b);
  kbits::unpack_head6(b, p);
  if (!codes) return;
  for (int c = 0; c < 4; ++c) kbits::unpack_halves(b.qs + 32 * c, codes + 64 * c);
}

}  // namespace q4k

const KFamily& q4_k_family() {
  static const KFamily f{.name = "q4_k", .bits = 4, .sub = 32, .block_bytes = sizeof(q4k::BlockQ4K), .has_min = true,
                         .sc_lo = 0, .sc_hi = 63, .m_hi = 63, .zero = 0, .ggml_type = 12, .pack = q4k::pack, .unpack = q4k::unpack};
  return f;
}

}  // namespace mq
