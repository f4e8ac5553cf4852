// q6_k: ggml's block_q6_K (210 bytes, 6.5625 bits per weight). 16 sub-blocks of 16 weights, w = d sc (q - 32)
// with 6-bit codes q (four low bits and two high bits stored apart) and signed 8-bit sc.
#include <cstring>

#include "miniquant/kquant/blocks.h"
#include "miniquant/kquant/family.h"

namespace mq {
// Named: in the unity build (CMakeLists.txt) the families' pack / unpack share one translation unit.
namespace q6k {

using kblocks::BlockQ6K;

void pack(const KParams& p, const uint8_t* codes, uint8_t* out) {
  BlockQ6K b{};
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = codes + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b.ql[64 * h + l] = static_cast<uint8_t>((q[l] & 15) | (q[l + 64] & 15) << 4);
      b.ql[64 * h + 32 + l] = static_cast<uint8_t>((q[l + 32] & 15) | (q[l + 96] & 15) << 4);
      b.qh[32 * h + l] = static_cast<uint8_t>((q[l] >> 4 & 3) | (q[l + 32] >> 4 & 3) << 2 | (q[l + 64] >> 4 & 3) << 4 |
                                              (q[l + 96] >> 4 & 3) << 6);
    }
  }
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(p.sc[j]);
  b.d = p.d;
  std::memcpy(out, &b, sizeof b);
}

void unpack(const uint8_t* in, KParams& p, uint8_t* codes) {
  BlockQ6K b;
  std::memcpy(&b, in, sizeof b);
  p = {};
  p.d = b.d;
  for (int j = 0; j < 16; ++j) p.sc[j] = b.scales[j];
  if (!codes) return;
  for (int h = 0; h < 2; ++h) {
    uint8_t* q = codes + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const uint8_t a = b.ql[64 * h + l], c = b.ql[64 * h + 32 + l], hi = b.qh[32 * h + l];
      q[l] = static_cast<uint8_t>((a & 15) | (hi & 3) << 4);
      q[l + 32] = static_cast<uint8_t>((c & 15) | (hi >> 2 & 3) << 4);
      q[l + 64] = static_cast<uint8_t>((a >> 4) | (hi >> 4 & 3) << 4);
      q[l + 96] = static_cast<uint8_t>((c >> 4) | (hi >> 6 & 3) << 4);
    }
  }
}

}  // namespace q6k

const KFamily& q6_k_family() {
  static const KFamily f{.name = "q6_k", .bits = 6, .sub = 16, .block_bytes = sizeof(q6k::BlockQ6K), .has_min = false,
                         .sc_lo = -128, .sc_hi = 127, .m_hi = 0, .zero = 32, .ggml_type = 14, .pack = q6k::pack, .unpack = q6k::unpack};
  return f;
}

}  // namespace mq
