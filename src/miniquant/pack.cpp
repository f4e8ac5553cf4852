// N-bit field packing; fast paths for the byte-aligned widths (8, 4, 2), a bit stream otherwise.
#include "miniquant/pack.h"

#include <cstring>

namespace mq {

void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out) {
  if (n == 0) return;  // empty rows may come with null pointers, which memcpy must not see
  const int64_t nbytes = (n * bits + 7) / 8;
  if (bits == 8) {
    std::memcpy(out, fields, static_cast<size_t>(n));
    return;
  }
  if (bits == 4) {
    int64_t j = 0;
    for (; 2 * j + 1 < n; ++j) out[j] = static_cast<uint8_t>(fields[2 * j] | (fields[2 * j + 1] << 4));
    if (j < nbytes) out[j] = fields[2 * j];  // odd n: the high nibble of the last byte is padding
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
  if (bits == 8) {
    std::memcpy(fields, packed, static_cast<size_t>(n));
    return;
  }
  if (bits == 4) {
    for (int64_t i = 0; i < n; ++i) fields[i] = (packed[i >> 1] >> ((i & 1) * 4)) & 0x0F;
    return;
  }
  for (int64_t i = 0; i < n; ++i) fields[i] = field_at(packed, i, bits);
}

}  // namespace mq
