// Checksums of the tensors in the files we write (safetensors checkpoints, quantized checkpoints, GGUF
// exports): each writer records the SHA-256 of every tensor's bytes, each loader verifies them, so a
// flipped bit is an error naming the tensor instead of a different model that loads. What is shared:
// whether to verify (`--no-verify` turns it off for the process, for speed) and the one-line note for
// a file that carries no checksums (written by another tool or an older miniquant: it still loads).
#pragma once
#include <string>
#include <string_view>

namespace mq {

void set_verify_checksums(bool on);  // default on
bool verify_checksums();

// "sha256 mismatch" text shared by the loaders: "checksum mismatch in tensor '<name>' (recorded <12 hex>...,
// computed <12 hex>...): the file is corrupt; re-copy it or write it again (--no-verify loads it anyway)".
std::string checksum_mismatch(std::string_view tensor, std::string_view recorded, std::string_view computed);
// True when `s` is 64 lower-case hex digits.
bool is_sha256_hex(std::string_view s);

// Prints "miniquant: note: <text>" on stderr the first time it is called for `key` (a path) in this
// process, so loading the same file for several methods says it once.
void note_once(const std::string& key, const std::string& text);

}  // namespace mq
