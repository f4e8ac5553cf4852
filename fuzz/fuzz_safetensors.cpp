// libFuzzer target: the safetensors reader on arbitrary bytes. Any exception other than
// mq::Error, any crash, leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "miniquant/error.h"
#include "minigpt/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const minigpt::TensorFile f =
        minigpt::read_safetensors_buffer(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    // What the reader promises: every tensor's bytes match its shape and dtype.
    for (const auto& t : f.tensors) {
      size_t n = minigpt::dtype_size(t.dtype);
      for (int64_t d : t.shape) n *= static_cast<size_t>(d);
      if (n != t.bytes.size()) __builtin_trap();
    }
  } catch (const mq::Error&) {
  }
  return 0;
}
