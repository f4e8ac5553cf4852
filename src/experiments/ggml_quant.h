// llama.cpp's own K-quant quantizer and dequantizer, from the libggml-base.so that the pinned node-llama-cpp
// package ships (scripts/setup_node.sh installs it into tools/llama/node_modules), loaded at run time with
// dlopen. Nothing of ggml is compiled in: the five functions and the few enum values used are declared from
// ggml.h's documented facts (ggml_quantize_chunk, ggml_type_size, ggml_blck_size, ggml_get_type_traits and its
// struct, the GGML_TYPE_Q*_K numbers in kquant/family.h), and the ABI is checked at load: for every K family,
// ggml_type_size and ggml_blck_size, and the type traits' block size, byte size and name, must equal ours, or the
// load fails with one line. Used by `miniquant kquants` (experiments/29-kquants) and tests/test_ggml_kquant.cpp;
// never by the library.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "miniquant/format.h"

namespace mqexp {

// tools/llama/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so in the source tree.
std::string default_ggml_library();

class GgmlQuant {
 public:
  // The library at `path`: nullopt with `why` set when the file is absent (the package is not installed);
  // mq::Error when it is present but cannot be loaded or its ABI disagrees with ours.
  static std::optional<GgmlQuant> load(const std::string& path, std::string& why);

  // ggml_quantize_chunk of a (rows, cols) matrix into the K family of `s` (ggml's bytes: rows x cols / 256
  // blocks), with `imatrix` (cols) as its importance matrix, or without (null).
  std::vector<uint8_t> quantize(const mq::Scheme& s, const float* w, int64_t rows, int64_t cols, const float* imatrix) const;
  // ggml's to_float of `blocks` (n / 256 blocks of the K family of `s`) into n floats.
  std::vector<float> dequantize(const mq::Scheme& s, const uint8_t* blocks, int64_t n) const;
  const std::string& path() const { return path_; }

 private:
  struct Api;
  std::shared_ptr<const Api> api_;
  std::string path_;
};

}  // namespace mqexp
