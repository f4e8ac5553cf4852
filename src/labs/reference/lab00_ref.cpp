// Lab 00 built on the library: every function is miniquant's own, so the grader passes on it (CI
// grades this build and the untouched starter file).
#include "lab00.h"

#include "miniquant/pack.h"

namespace lab {

mq::Grid symmetric_grid(float absmax, const mq::Scheme& s) { return mq::symmetric_grid(absmax, s); }
uint8_t encode(float w, const mq::Grid& g, const mq::Scheme& s) { return mq::encode(w, g, s); }
void pack_fields(const uint8_t* fields, int64_t n, int bits, uint8_t* out) { mq::pack_fields(fields, n, bits, out); }
mq::Storage storage_of(const mq::Scheme& s, int64_t rows, int64_t cols) { return mq::storage_of(s, rows, cols); }
mq::QTensor quantize_ref(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, std::string_view name) {
  return mq::quantize_ref(w, rows, cols, s, name);
}
mq::QuantStats measure_scheme(const float* w, int64_t rows, int64_t cols, const mq::Scheme& s, const std::string& name) {
  return mq::measure_scheme(w, rows, cols, s, name);
}

}  // namespace lab
