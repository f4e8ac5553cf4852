// The five K families' blocks, byte for byte ggml's (ggml-common.h: block_q2_K .. block_q6_K), one struct per
// family with its size checked. The family files pack and unpack them (kquant/q*_k.cpp); the kernel's decoders
// read them in place (kernels/kquant_decode.h). Stored fp16 factors are uint16_t bits.
#pragma once
#include <cstdint>

namespace mq::kblocks {

// q2_k, 2.625 bits per weight: 16 sub-blocks of 16 weights, w = d sc q - dmin m, 2-bit q, 4-bit sc and m.
struct BlockQ2K {
  uint8_t scales[16];  // sub-block b: sc_b in bits 0-3, m_b in bits 4-7
  uint8_t qs[64];      // weight 128 h + 32 k + l (h < 2, k < 4, l < 32): bits 2k..2k+1 of qs[32 h + l]
  uint16_t d;          // fp16
  uint16_t dmin;       // fp16
};
static_assert(sizeof(BlockQ2K) == 84, "ggml block_q2_K is 84 bytes");

// q3_k, 3.4375 bits per weight: 16 sub-blocks of 16 weights, w = d sc (q - 4), 3-bit q (two low bits and a
// high bit stored apart), signed 6-bit sc.
struct BlockQ3K {
  uint8_t hmask[32];   // high code bit of weight j: bit j / 32 of hmask[j % 32]
  uint8_t qs[64];      // low two code bits, laid out as q2_k's codes
  uint8_t scales[12];  // sc_b + 32 (6 bits): low nibble in scales[b] (b < 8) or the high nibble of
                       // scales[b - 8]; top two bits in bits 2 (b / 4)..+1 of scales[8 + b % 4]
  uint16_t d;          // fp16
};
static_assert(sizeof(BlockQ3K) == 110, "ggml block_q3_K is 110 bytes");

// q4_k, 4.5 bits per weight: 8 sub-blocks of 32 weights, w = d sc q - dmin m, 4-bit q, 6-bit sc and m.
struct BlockQ4K {
  uint16_t d;          // fp16
  uint16_t dmin;       // fp16
  uint8_t scales[12];  // kbits::pack_scales_mins6
  uint8_t qs[128];     // weights 64 c .. 64 c + 63 in qs[32 c .. 32 c + 31], as kbits::pack_halves
};
static_assert(sizeof(BlockQ4K) == 144, "ggml block_q4_K is 144 bytes");

// q5_k, 5.5 bits per weight: 8 sub-blocks of 32 weights, w = d sc q - dmin m, 5-bit q (four low bits as
// q4_k's, the fifth stored apart), 6-bit sc and m.
struct BlockQ5K {
  uint16_t d;          // fp16
  uint16_t dmin;       // fp16
  uint8_t scales[12];  // kbits::pack_scales_mins6
  uint8_t qh[32];      // fifth code bit: weight 64 c + l in bit 2c of qh[l], weight 64 c + 32 + l in bit 2c + 1 (l < 32)
  uint8_t qs[128];     // four low code bits, as q4_k's codes
};
static_assert(sizeof(BlockQ5K) == 176, "ggml block_q5_K is 176 bytes");

// q6_k, 6.5625 bits per weight: 16 sub-blocks of 16 weights, w = d sc (q - 32), 6-bit q (four low bits and
// two high bits stored apart), signed 8-bit sc.
struct BlockQ6K {
  // In each half h < 2 (weights 128 h .. 128 h + 127), for l < 32: low nibbles of weights 128 h + l and
  // 128 h + 64 + l in ql[64 h + l] (low, high), of 128 h + 32 + l and 128 h + 96 + l in ql[64 h + 32 + l];
  // the top two bits of 128 h + 32 k + l in bits 2k..2k+1 of qh[32 h + l].
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];  // sc_b
  uint16_t d;         // fp16
};
static_assert(sizeof(BlockQ6K) == 210, "ggml block_q6_K is 210 bytes");

}  // namespace mq::kblocks
