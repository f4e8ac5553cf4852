// Generic safetensors files: named tensors (dtype, shape, raw little-endian bytes) plus a
// string-to-string metadata map. Knows nothing about MiniGPT; quantized checkpoints reuse it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace minigpt {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // the safetensors spelling: "F32", "U8", ...
// Throws mq::Error for an unknown spelling.
DType parse_dtype(const std::string& s);

struct NamedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // (product(shape) * dtype_size) raw little-endian data
};

struct TensorFile {
  std::vector<NamedTensor> tensors;  // written in this order
  std::map<std::string, std::string> metadata;

  const NamedTensor* find(const std::string& name) const;
  void add_f32(const std::string& name, std::vector<int64_t> shape, const float* data);
};

// Atomic: writes `path.tmp`, fsyncs it, renames it over `path`, fsyncs the directory, so a
// crash leaves either the old file or the new one, never half of one.
void write_safetensors(const std::string& path, const TensorFile& f);

// Validates everything (sizes, header JSON, dtypes, shapes vs byte ranges, offsets, overlap,
// truncation) and throws mq::Error naming the file, the problem and what to do.
// Zero-length tensors are legal anywhere in the data section.
TensorFile read_safetensors(const std::string& path);
// The same from a whole file already in memory (`name` is for messages); the fuzzer's entry point.
TensorFile read_safetensors_buffer(std::string_view bytes, const std::string& name);

}  // namespace minigpt
