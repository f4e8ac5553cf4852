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

// Whether a read file's tensors were checked against the SHA-256 it records (util/integrity.h).
enum class Checksums { verified, absent, not_checked };

struct TensorFile {
  std::vector<NamedTensor> tensors;  // written in this order
  std::map<std::string, std::string> metadata;  // without kMetaChecksums: the reader checks and removes it
  Checksums checksums = Checksums::absent;      // set by the readers

  const NamedTensor* find(const std::string& name) const;
  void add_f32(const std::string& name, std::vector<int64_t> shape, const float* data);
};

// The metadata key holding the SHA-256 of every tensor's bytes: a JSON object {"<tensor>": "<64 hex>"}.
inline constexpr const char* kMetaChecksums = "tensor_sha256";
// Largest header accepted. Ours are small: the shipped MiniGPT's is 26 KB (its 17.5 KB vocabulary
// included), a quantized one's ~40 KB, and one carrying GPT-2's 50,257-token vocabulary would be about
// 0.7 MB; 4 MiB leaves 6x over that. The format's reference reader allows 100 MB, and an 80 MB header
// parsed into 2.07 GB of JSON values before it was refused.
inline constexpr uint64_t kMaxSafetensorsHeader = uint64_t{4} << 20;

// Atomic: writes `path.tmp`, fsyncs it, renames it over `path`, fsyncs the directory, so a
// crash leaves either the old file or the new one, never half of one. Records the SHA-256 of every
// tensor under kMetaChecksums (replacing any the caller's metadata holds).
void write_safetensors(const std::string& path, const TensorFile& f);

// Validates everything (sizes, header JSON, dtypes, shapes vs byte ranges, offsets, overlap,
// truncation) and throws mq::Error naming the file, the problem and what to do. The header is
// refused above kMaxSafetensorsHeader before it is read, and parsed within 16 bytes of JSON values per
// byte of it. When the file records checksums they are verified (unless mq::verify_checksums() is
// off), the first tensor that differs named. Zero-length tensors are legal anywhere in the data section.
TensorFile read_safetensors(const std::string& path);
// The same from a whole file already in memory (`name` is for messages); the fuzzer's entry point.
TensorFile read_safetensors_buffer(std::string_view bytes, const std::string& name);

// After a file loaded: the one-line note (once per path) when it carries no checksums, so it was not
// verified. Nothing when it was verified or the user turned verification off.
void note_if_unverified(const std::string& path, Checksums c);

// SHA-256 of the file as write_safetensors would write it without checksums: the identity of a
// checkpoint's content, for results keyed by their checkpoint. For a file written by miniquant before
// checksums existed it is the file's own SHA-256, and adding checksums to such a file (metadata only)
// leaves it unchanged.
std::string content_sha256(const std::string& path);

}  // namespace minigpt
