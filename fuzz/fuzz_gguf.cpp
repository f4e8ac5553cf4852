// libFuzzer target: the bounds-checked in-memory GGUF reader (mq::gguf::parse) on arbitrary bytes.
// What loads is then used the way an importer would: every metadata value read through its typed
// getters, every tensor's data range checked against its shape and dequantized (so the offsets the
// reader accepted are exercised), and the file re-serialized and re-parsed (the reader accepts what
// the writer writes, and nothing is lost on the way). Any exception other than mq::Error, any crash,
// leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"

namespace {

void touch_values(const mq::gguf::File& f) {
  for (const auto& [key, v] : f.kv) {
    // Each getter either returns or throws mq::Error naming the type; both are fine.
    try { (void)v.as_uint(); } catch (const mq::Error&) {}
    try { (void)v.as_f32(); } catch (const mq::Error&) {}
    try { (void)v.as_bool(); } catch (const mq::Error&) {}
    try { (void)v.as_string(); } catch (const mq::Error&) {}
    try { (void)v.as_i32s(); } catch (const mq::Error&) {}
    try { (void)v.as_f32s(); } catch (const mq::Error&) {}
    if (f.find(key) != &v) __builtin_trap();  // keys are unique
  }
}

bool same(const mq::gguf::File& a, const mq::gguf::File& b) {
  if (a.kv != b.kv || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.ne != y.ne || x.type != y.type || x.data != y.data) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mq::gguf::File f;
  try {
    f = mq::gguf::parse(std::span<const uint8_t>(data, size));
  } catch (const mq::Error&) {
    return 0;
  }
  touch_values(f);
  // What the reader promises: every tensor's bytes match its type and shape, inside the file.
  for (const mq::gguf::Tensor& t : f.tensors) {
    if (t.ne.empty() || t.ne.size() > static_cast<size_t>(mq::gguf::kMaxDims)) __builtin_trap();
    if (static_cast<int64_t>(t.data.size()) != mq::gguf::tensor_bytes(t.type, t.ne[0], t.rows())) __builtin_trap();
    if (t.data.size() > size) __builtin_trap();
    const std::vector<float> y = mq::gguf::dequantize(t);  // must not throw: the sizes were checked
    if (static_cast<int64_t>(y.size()) != t.elements()) __builtin_trap();
  }
  // The writer writes what the reader read; the reader reads it back unchanged.
  std::string again;
  try {
    again = mq::gguf::serialize(f);
  } catch (const mq::Error&) {
    __builtin_trap();  // a file the reader accepted that the writer cannot write back
  }
  const mq::gguf::File g = mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(again.data()), again.size()));
  if (!same(f, g)) __builtin_trap();
  return 0;
}
