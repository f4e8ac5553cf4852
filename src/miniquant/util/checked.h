// Overflow-checked size arithmetic: every rows x cols or shape product taken from a file, a flag
// or a config goes through these, so a hostile size fails with a message instead of wrapping into
// a tiny buffer that is then written past its end.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace mq {

// Throws the mq::Error for a failed checked_mul (out of line: the check itself stays inline, as
// the kernels compute row sizes with it).
[[noreturn]] void throw_bad_product(int64_t a, int64_t b, std::string_view what);

// a * b for sizes; throws mq::Error "<what>: a x b ..." when either is negative or the product
// does not fit in int64.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out)) throw_bad_product(a, b, what);
  return out;
}
// Product of all dims (1 for none), with the same checks.
int64_t checked_product(std::span<const int64_t> dims, std::string_view what);
inline int64_t checked_product(std::initializer_list<int64_t> dims, std::string_view what) {
  return checked_product(std::span<const int64_t>(dims.begin(), dims.size()), what);
}

}  // namespace mq
