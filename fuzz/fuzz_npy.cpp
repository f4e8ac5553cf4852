// libFuzzer target: the .npy reader on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "miniquant/error.h"
#include "miniquant/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const mq::Matrix m = mq::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    if (static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols) != m.data.size()) __builtin_trap();
  } catch (const mq::Error&) {
  }
  return 0;
}
