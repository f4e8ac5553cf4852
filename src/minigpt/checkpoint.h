// MiniGPT checkpoints on top of safetensors: fp32 parameters under their GPT-2 names plus
// metadata (format version, model config, vocabulary and its hash, training info).
#pragma once
#include <string>
#include <vector>

#include "minigpt/model.h"
#include "minigpt/safetensors.h"

namespace minigpt {

// Bumped whenever the tensor set or metadata meaning changes; readers refuse other versions.
inline constexpr const char* kCheckpointFormat = "minigpt-1";

struct CheckpointMeta {
  std::string vocab_json;  // opaque to the model: the tokenizer's vocabulary, as given by the caller
  std::string vocab_hash;  // 64-bit hash string of the vocabulary, compared on load
  std::string train_info;  // JSON string: steps, losses, config... whatever the trainer reports
};

// Metadata keys used in __metadata__.
inline constexpr const char* kMetaFormat = "format";
inline constexpr const char* kMetaConfig = "model_config";
inline constexpr const char* kMetaVocab = "vocab";
inline constexpr const char* kMetaVocabHash = "vocab_hash";
inline constexpr const char* kMetaTrain = "train_info";

// The model's parameters (F32, GPT-2 names and shapes) and our metadata, ready to write;
// the trainer appends its optimizer state before writing.
TensorFile model_to_tensor_file(const Model& m, const CheckpointMeta& meta);
// Rebuilds a model, checking format version, config, every tensor's presence, dtype and
// shape, and (if expected_vocab_hash is not empty) the vocabulary hash. `path` is for messages.
// Parameters named in `held_elsewhere` are not read (they stay at their initial values): a quantized
// checkpoint stores those weights in another form and its loader restores them.
Model model_from_tensor_file(const TensorFile& f, const std::string& path, const std::string& expected_vocab_hash = "",
                             CheckpointMeta* meta = nullptr, const std::vector<std::string>& held_elsewhere = {});

void save_model(const std::string& path, const Model& m, const CheckpointMeta& meta);
Model load_model(const std::string& path, const std::string& expected_vocab_hash = "", CheckpointMeta* meta = nullptr);

}  // namespace minigpt
