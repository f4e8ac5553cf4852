// Overflow-checked size products.
#include "miniquant/util/checked.h"

#include <fmt/core.h>

#include "miniquant/util/error.h"

namespace mq {

void throw_bad_product(int64_t a, int64_t b, std::string_view what) {
  if (a < 0 || b < 0) throw Error(fmt::format("{}: negative size {} x {}", what, a, b));
  throw Error(fmt::format("{}: size {} x {} overflows 64 bits; the input is corrupt or absurd", what, a, b));
}

int64_t checked_product(std::span<const int64_t> dims, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : dims) n = checked_mul(n, d, what);
  return n;
}

}  // namespace mq
