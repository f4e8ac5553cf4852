// The integer families' layouts as the kernels read them: one struct per family of the format table (Int8Family,
// Int4Family, Int3Family, Int2Family), in the spirit of ggml's one struct per block. Every fact a kernel needs about
// a family lives here, named for what it is (fields of whole bytes, 3-byte pieces, ...): the kernels are templates
// over the family type (never over its width) and branch on these names. A new integer family, even a second one
// of the same width, is a new struct here, a format-table row of the same name, and its kernel rows (the family
// as a template argument); and a row in block_layouts() (blocked_pack.cpp) if it has the 16-row block layout.
//
// Two layouts per family:
// - the 16-row block layout (blocked.h): per block of 16 output rows, steps of kColumns input columns; Step is
//   one step's bytes, slot() where field (lane, column) lives, and the bf16 tile's view of a step's registers;
// - the row-major packed rows (pack.h), read in 4-byte words by word_kernel.h: the bf16 word decoder's
//   fields per lane and per word.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>

namespace mq {

// Where field (lane, column c) of a 16-row block lives: byte offset from the block's start, and the bit shift of
// the field inside that byte (int3 fields may run on into the next byte).
struct BlockSlot {
  int64_t byte;
  int shift;
};

// Members of every family:
//   kName, kBits             its row of the format table, and its field width (arithmetic only: never chooses code)
//   Step, kColumns           one step of one block, and the columns it covers (per lane)
//   slot(lane, c)            the field's place in a block (c counts from the block's first column)
//   pair_cols(k)             the two columns of a step that bf16 activation pair k multiplies (word k of the
//                            step's activation words, low half first)
//   kByteFields              fields are whole bytes: vpdpbusd reads them as they are; the bf16 tile reads each
//                            as two nibbles (a 256-entry table does not fit a register), values scaled by kUnit
//   kSpread                  a step is 3-byte pieces that AVX-512 VBMI spreads over 16-bit words (vpermi2b):
//                            its ISA paths need VBMI
//   kRegs, kFieldBits, kFields, reg(f), shift(f), pair(f), low(f)
//                            the bf16 tile's view: registers per step; bits per field as decoded; fields per
//                            16-bit half; field f's register, its shift inside each 16-bit half, its
//                            activation pair word, and whether it is a low nibble (scaled by 1/16)
//   kDotTransposed           the +a8 / +a16 block kernels (dynamic.cpp) decode a step into byte registers whose lane
//                            holds columns 4b + j (register j, byte b) rather than 4j + b, so they read each step's
//                            activations transposed 4 x 4 (int2's 2-bit fields)
//   kTableZero               the symmetric zero-point in the decoded field's units
//   kWordBf16                the row-major bf16 word decoder exists (word_decoders.h DecIntBf16)
//   kLaneFields, kWordFields, kWordBlockBytes(L)
//                            that decoder's fields per 32-bit lane, fields per word (per piece), and bytes of
//                            one block of L lanes

struct Int8Family {
  static constexpr std::string_view kName = "int8";  // its row of the format table
  static constexpr int kBits = 8;                     // field width
  struct Step {  // 8 columns x 16 rows of byte fields: [half][lane][byte] = field(r, 8s + 4 half + byte)
    uint8_t half[2][16][4];
  };
  static_assert(sizeof(Step) == 128, "two 64-byte loads per k8 step");
  static constexpr int64_t kColumns = 8;
  static constexpr BlockSlot slot(int64_t lane, int64_t c) {
    return {(c / 8) * 128 + ((c % 8) / 4) * 64 + lane * 4 + c % 4, 0};
  }
  // Pair 2h + j is fields 2j and 2j + 1 (low and high nibbles) of half h's word.
  static constexpr std::pair<int, int> pair_cols(int k) {
    constexpr int kCols[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
    return {kCols[k][0], kCols[k][1]};
  }
  static constexpr bool kByteFields = true, kSpread = false;
  static constexpr bool kDotTransposed = false;  // two 64-byte loads of whole bytes
  static constexpr int kRegs = 2, kFieldBits = 4, kFields = 8;
  static constexpr int reg(int f) { return f / 4; }
  static constexpr int shift(int f) { return 4 * (f % 4); }
  static constexpr int pair(int f) { return 2 * (f / 4) + (f % 4) / 2; }
  static constexpr bool low(int f) { return f % 2 == 0; }
  static constexpr int kTableZero = 8;  // the high nibble's share of 128
  static constexpr float kUnit = 16.0f;  // values decode as (u - z) / 16
  static constexpr bool kWordBf16 = false;
};

struct Int4Family {
  static constexpr std::string_view kName = "int4";  // its row of the format table
  static constexpr int kBits = 4;                     // field width
  struct Step {  // 8 columns x 16 rows of nibbles: [lane][byte], low nibble column b, high nibble column 4 + b
    uint8_t lane[16][4];
  };
  static_assert(sizeof(Step) == 64, "one 64-byte load per k8 step");
  static constexpr int64_t kColumns = 8;
  static constexpr BlockSlot slot(int64_t lane, int64_t c) { return {(c / 8) * 64 + lane * 4 + c % 4, c % 8 >= 4 ? 4 : 0}; }
  // Pair K is field K of the lane's word: the nibbles of bytes K / 2 .. in both 16-bit halves.
  static constexpr std::pair<int, int> pair_cols(int k) {
    constexpr int kCols[4][2] = {{0, 2}, {4, 6}, {1, 3}, {5, 7}};
    return {kCols[k][0], kCols[k][1]};
  }
  static constexpr bool kByteFields = false, kSpread = false;
  static constexpr bool kDotTransposed = false;  // low nibbles columns 0-3, high 4-7
  static constexpr int kRegs = 1, kFieldBits = 4, kFields = 4;
  static constexpr int reg(int) { return 0; }
  static constexpr int shift(int f) { return 4 * f; }
  static constexpr int pair(int f) { return f; }
  static constexpr bool low(int) { return false; }
  static constexpr int kTableZero = 8;
  static constexpr float kUnit = 1.0f;
  static constexpr bool kWordBf16 = true;
  static constexpr int kLaneFields = 8, kWordFields = 4;
  static constexpr int64_t kWordBlockBytes(int64_t lanes) { return 4 * lanes; }
};

struct Int3Family {
  static constexpr std::string_view kName = "int3";  // its row of the format table
  static constexpr int kBits = 3;                     // field width
  struct Step {  // 16 columns x 16 rows of 3-bit fields: [lane][piece][byte], piece p = columns 8p .. 8p+7
    uint8_t lane[16][2][3];
  };
  static_assert(sizeof(Step) == 96, "a 64-byte and a 32-byte load per k16 step");
  static constexpr int64_t kColumns = 16;
  static constexpr BlockSlot slot(int64_t lane, int64_t c) {
    const int bit = 24 * static_cast<int>((c % 16) / 8) + 3 * static_cast<int>(c % 8);  // in the lane's 6 bytes
    return {(c / 16) * 96 + lane * 6 + bit / 8, bit % 8};
  }
  // Pair K is field K of both pieces: columns K and 8 + K.
  static constexpr std::pair<int, int> pair_cols(int k) { return {k, 8 + k}; }
  static constexpr bool kByteFields = false, kSpread = true;
  static constexpr bool kDotTransposed = false;  // register j: columns 4j .. 4j+3 (isa_x86.h pieces3)
  // Spread: register 0 holds each piece's bytes 0, 1 (fields 0 .. 4 at bits 0, 3, .., 12), register 1 its
  // bytes 1, 2 (fields 5 .. 7 at bits 7, 10, 13).
  static constexpr int kRegs = 2, kFieldBits = 3, kFields = 8;
  static constexpr int reg(int f) { return f < 5 ? 0 : 1; }
  static constexpr int shift(int f) { return f < 5 ? 3 * f : 3 * f - 8; }
  static constexpr int pair(int f) { return f; }
  static constexpr bool low(int) { return false; }
  static constexpr int kTableZero = 4;
  static constexpr float kUnit = 1.0f;
  // Row-major: 96-byte blocks of 32 three-byte pieces of 8 fields, piece i in word i of two registers, so
  // fp32 lane j sums pieces 2j and 2j + 1.
  static constexpr bool kWordBf16 = true;
  static constexpr int kLaneFields = 16, kWordFields = 8;
  static constexpr int64_t kWordBlockBytes(int64_t lanes) { return 6 * lanes; }
};

struct Int2Family {
  static constexpr std::string_view kName = "int2";  // its row of the format table
  static constexpr int kBits = 2;                     // field width
  struct Step {  // 16 columns x 16 rows of 2-bit fields: [lane][byte], byte b bits 2j .. 2j+1 = column 4b + j
    uint8_t lane[16][4];
  };
  static_assert(sizeof(Step) == 64, "one 64-byte load per k16 step");
  static constexpr int64_t kColumns = 16;
  static constexpr BlockSlot slot(int64_t lane, int64_t c) {
    return {(c / 16) * 64 + lane * 4 + (c % 16) / 4, 2 * static_cast<int>(c % 4)};
  }
  // Pair K is field K of both 16-bit halves: columns K and 8 + K.
  static constexpr std::pair<int, int> pair_cols(int k) { return {k, 8 + k}; }
  static constexpr bool kByteFields = false, kSpread = false;
  static constexpr bool kDotTransposed = true;  // bits 2j of byte b: column 4b + j
  static constexpr int kRegs = 1, kFieldBits = 2, kFields = 8;
  static constexpr int reg(int) { return 0; }
  static constexpr int shift(int f) { return 2 * f; }
  static constexpr int pair(int f) { return f; }
  static constexpr bool low(int) { return false; }
  static constexpr int kTableZero = 2;
  static constexpr float kUnit = 1.0f;
  static constexpr bool kWordBf16 = true;
  static constexpr int kLaneFields = 16, kWordFields = 8;
  static constexpr int64_t kWordBlockBytes(int64_t lanes) { return 4 * lanes; }
};

}  // namespace mq
