// A K-quant family (llama.cpp's q2_K .. q6_K): what is specific to one family is only its byte layout and
// its ranges, described here; everything else (decoding a block's grid, dequantizing, the scale search, GPTQ
// on the grid, the kernels) is generic over this description (../kquant.h, ../kquant_search.h, kernels/kquant.cpp).
//
// A super-block holds kSuperBlock (256) consecutive weights of one row, in `nsub()` sub-blocks of `sub`
// weights. Every family's weight j of sub-block b dequantizes as ggml computes it:
//   D_b = fp16(d) * sc_b          (float times integer, one rounding)
//   M_b = fp16(dmin) * m_b        (families with mins; 0 otherwise)
//   w_j = D_b * (q_j - zero) - M_b
// with the code q_j in [0, 2^bits - 1], the integer sub-block scale sc_b in [sc_lo, sc_hi] (signed for the
// families without mins, which use the sign to put the largest weight on the longer end of q - zero) and the
// integer min m_b in [0, m_hi]. ggml writes exactly these float operations (dequantize_row_q*_K), so a
// block decodes to the same floats here and there; tests/test_ggml_kquant.cpp checks it against ggml itself.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "miniquant/kquant/superblock.h"

namespace mq {

inline constexpr int kMaxSubBlocks = kSuperBlock / 16;

// One super-block's stored parameters, unpacked to plain integers.
struct KParams {
  uint16_t d = 0;     // fp16 bits of the scale of the sub-block scales
  uint16_t dmin = 0;  // fp16 bits of the scale of the mins (families with mins; 0 otherwise)
  std::array<int, kMaxSubBlocks> sc{};  // (nsub) integer scales
  std::array<int, kMaxSubBlocks> m{};   // (nsub) integer mins (families with mins)
  friend bool operator==(const KParams&, const KParams&) = default;
};

struct KFamily {
  std::string_view name;  // "q4_k": the scheme name
  int bits = 0;           // code width
  int sub = 0;            // weights per sub-block (16 or 32)
  int block_bytes = 0;    // sizeof the ggml block
  bool has_min = false;
  int sc_lo = 0, sc_hi = 0;  // integer scale range
  int m_hi = 0;              // integer min range [0, m_hi] (families with mins)
  int zero = 0;              // subtracted from every code (q3_k: 4, q6_k: 32)
  uint32_t ggml_type = 0;    // GGML_TYPE_Q*_K (ggml.h numbering; also the GGUF tensor type)
  // Writes one block: params (ranges as above) and codes (kSuperBlock values < 2^bits) -> block_bytes bytes.
  void (*pack)(const KParams& p, const uint8_t* codes, uint8_t* block) = nullptr;
  // Reads one block: its params, and its codes when `codes` (kSuperBlock) is not null.
  void (*unpack)(const uint8_t* block, KParams& p, uint8_t* codes) = nullptr;

  int nsub() const { return kSuperBlock / sub; }
  int qmax() const { return (1 << bits) - 1; }
  // Bytes of the code fields in one block (the rest are scales, mins and the fp16 factors).
  int code_bytes() const { return kSuperBlock * bits / 8; }
};

// The five families, each defined in its own file (kquant/q2_k.cpp ... q6_k.cpp); the format table lists
// them, and everything else reaches a family through traits_of(scheme).kquant.
const KFamily& q2_k_family();
const KFamily& q3_k_family();
const KFamily& q4_k_family();
const KFamily& q5_k_family();
const KFamily& q6_k_family();

}  // namespace mq
