// Writing and reading GGUF v3 files (see types.h for the layout).
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "miniquant/gguf/types.h"

namespace mq::gguf {

// The file's bytes: header, metadata, tensor infos (offsets computed here, each tensor padded to
// f.alignment()), padding, data. Throws mq::UsageError for what GGUF cannot hold (duplicate or
// over-long names, more than 4 dimensions, a tensor whose data size does not match its shape).
std::string serialize(const File& f);
// Metadata key prefix of a tensor's SHA-256 ("miniquant.sha256.blk.0.attn_qkv.weight"): one string key per
// tensor, which llama.cpp ignores like any key it does not know.
inline constexpr const char* kChecksumPrefix = "miniquant.sha256.";
// Records the SHA-256 of every tensor's data under kChecksumPrefix + name (our exports call it last).
void add_tensor_checksums(File& f);

// serialize() written atomically (temp file + rename): a failure leaves no partial file.
void write(const std::string& path, const File& f);

// Parses a whole file held in memory. Every count, length, offset and shape is checked against the
// buffer before it is used, so a corrupt or hostile file is an mq::Error naming what is wrong and
// where (byte offset), never an allocation larger than the buffer or a read outside it.
// Accepts exactly what the writer produces plus what GGUF v3 allows (any key order, any metadata
// types, nested arrays rejected as llama.cpp does); tensor types outside TensorType are an error.
// Tensors that carry a checksum key (add_tensor_checksums) are verified unless mq::verify_checksums()
// is off; a mismatch names the tensor.
File parse(std::span<const uint8_t> bytes);
File read(const std::string& path);  // mq::read_file + parse; errors name the path

}  // namespace mq::gguf
