// N-bit field packing; fast paths for the widths that divide a byte (8, 4, 2, 1: no field straddles two bytes), a
// bit stream otherwise.
#include "miniquant/pack.h"

#include <cstring>

namespace mq {

void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out) {
  if (n == 0) return;  // empty rows may come with null pointers, which memcpy must not see
  const int64_t nbytes = (n * bits + 7) / 8;
  if (8 % bits == 0) {
    const int64_t per = 8 / bits;  // fields per byte
    if (per == 1) {
      std::memcpy(out, fields, static_cast<size_t>(n));
      return;
    }
    for (int64_t j = 0; j < nbytes; ++j) {
      unsigned v = 0;
      for (int64_t k = 0; k < per && j * per + k < n; ++k) v |= unsigned{fields[j * per + k]} << (k * bits);
      out[j] = static_cast<uint8_t>(v);  // a short last byte: its high fields are zero padding
    }
    return;
  }
  std::memset(out, 0, static_cast<size_t>(nbytes));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bit = i * bits;
    const uint32_t v = static_cast<uint32_t>(fields[i]) << (bit & 7);
    out[bit >> 3] = static_cast<uint8_t>(out[bit >> 3] | (v & 0xFF));
    if ((bit & 7) + bits > 8) out[(bit >> 3) + 1] = static_cast<uint8_t>(out[(bit >> 3) + 1] | (v >> 8));
  }
}

void unpack_fields(const uint8_t* packed, int64_t n, int bits, uint8_t* fields) {
  if (n == 0) return;
  if (8 % bits == 0) {
    const int64_t per = 8 / bits;
    if (per == 1) {
      std::memcpy(fields, packed, static_cast<size_t>(n));
      return;
    }
    const unsigned mask = (1u << bits) - 1u;
    for (int64_t i = 0; i < n; ++i) fields[i] = static_cast<uint8_t>((packed[i / per] >> ((i % per) * bits)) & mask);
    return;
  }
  for (int64_t i = 0; i < n; ++i) fields[i] = field_at(packed, i, bits);
}

}  // namespace mq
