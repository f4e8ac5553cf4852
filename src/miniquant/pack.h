// Packing of N-bit integer code fields (N in 1..8) into bytes, one row at a time.
#pragma once
#include <cstdint>

namespace mq {

// Bit order: a row is one little-endian bit stream. Field i occupies stream bits
// [i*N, i*N + N), least significant bit first, so
//   N = 8: byte i holds field i;
//   N = 4: byte j holds field 2j in its low nibble (bits 0-3) and field 2j+1 in its high nibble;
//   N = 2: byte j holds fields 4j..4j+3, field 4j+k in bits 2k..2k+1;
//   N = 3: every 3 bytes hold 8 fields, and a field may straddle a byte boundary.
// The last byte of a row is zero-padded, so every row starts on a byte boundary.
// Fields are unsigned (0 .. 2^N - 1); how codes map to fields is the quantizer's business.

// fields: (n) values < 2^bits;  out: (ceil(n*bits/8)) bytes, fully overwritten.
void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out);
// packed: (ceil(n*bits/8)) bytes;  fields: (n) values.
void unpack_fields(const uint8_t* packed, int64_t n, int bits, uint8_t* fields);
// One field, for reference code that walks a row element by element.
inline uint8_t field_at(const uint8_t* packed, int64_t i, int bits) {
  const int64_t bit = i * bits;
  const uint32_t lo = packed[bit >> 3];
  // Only fetch the next byte when the field crosses into it: the row may end here.
  const uint32_t hi = ((bit & 7) + bits > 8) ? packed[(bit >> 3) + 1] : 0u;
  return static_cast<uint8_t>(((lo | (hi << 8)) >> (bit & 7)) & ((1u << bits) - 1u));
}

}  // namespace mq
