// MiniGPT <-> safetensors: parameter tensors by GPT-2 name, versioned metadata, strict checks.
#include "minigpt/checkpoint.h"

#include <algorithm>
#include <cstring>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "minigpt/tensor_checks.h"

namespace minigpt {

TensorFile model_to_tensor_file(const Model& m, const CheckpointMeta& meta) {
  TensorFile f;
  for (const auto& t : m.layout().tensors())
    f.add_f32(t.name, std::vector<int64_t>(t.shape.begin(), t.shape.end()), m.params() + t.offset);
  f.metadata[kMetaFormat] = kCheckpointFormat;
  f.metadata[kMetaConfig] = to_json(m.config()).dump();
  f.metadata[kMetaVocab] = meta.vocab_json;
  f.metadata[kMetaVocabHash] = meta.vocab_hash;
  f.metadata[kMetaTrain] = meta.train_info;
  return f;
}

Model model_from_tensor_file(const TensorFile& f, const std::string& path, const std::string& expected_vocab_hash,
                             CheckpointMeta* meta, const std::vector<std::string>& held_elsewhere) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("checkpoint {}: {}", path, what)); };
  auto it = f.metadata.find(kMetaFormat);
  if (it == f.metadata.end())
    throw fail(fmt::format("no \"format\" metadata, so it is not a MiniGPT checkpoint (this build reads \"{}\"); "
                           "re-train or convert with miniquant", kCheckpointFormat));
  if (it->second != kCheckpointFormat)
    throw fail(fmt::format("format is \"{}\" but this build reads \"{}\"; re-train or convert with miniquant",
                           it->second, kCheckpointFormat));
  it = f.metadata.find(kMetaConfig);
  if (it == f.metadata.end()) throw fail("no \"model_config\" metadata; re-save the checkpoint with miniquant");
  ModelConfig c;
  try {
    c = model_config_from_text(it->second, "model_config metadata");
  } catch (const mq::Error& e) {  // also the config's UsageErrors: here the file is at fault, not the caller
    throw fail(e.what());
  }
  if (!expected_vocab_hash.empty()) {
    it = f.metadata.find(kMetaVocabHash);
    const std::string got = it == f.metadata.end() ? std::string("(none)") : it->second;
    if (got != expected_vocab_hash)
      throw fail(fmt::format("vocabulary hash {} differs from the expected {}: the model was trained on another "
                             "vocabulary; use the matching corpus/tokenizer or re-train", got, expected_vocab_hash));
  }
  // Every tensor is checked against the config before the model is allocated: the config's sizes
  // must be backed by bytes actually in the file, so a tiny file cannot ask for gigabytes.
  const ParamLayout layout(c);
  std::vector<const NamedTensor*> found;
  for (const auto& t : layout.tensors()) {
    if (std::find(held_elsewhere.begin(), held_elsewhere.end(), t.name) != held_elsewhere.end()) {
      found.push_back(nullptr);  // the caller restores it from its stored form
      continue;
    }
    const NamedTensor* nt = f.find(t.name);
    if (!nt) throw fail(fmt::format("tensor \"{}\" is missing; the file is incomplete, re-train or re-save it", t.name));
    const std::vector<int64_t> want(t.shape.begin(), t.shape.end());
    if (nt->shape != want)
      throw fail(fmt::format("tensor \"{}\" has shape [{}] but the model config needs [{}]", t.name,
                             fmt::join(nt->shape, ", "), fmt::join(want, ", ")));
    if (nt->dtype != DType::F32)
      throw fail(fmt::format("tensor \"{}\" is {} but a float checkpoint stores F32", t.name, dtype_name(nt->dtype)));
    check_finite(*nt, path);
    found.push_back(nt);
  }
  Model m(c);
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& t = layout.tensors()[i];
    if (t.size && found[i]) std::memcpy(m.params() + t.offset, found[i]->bytes.data(), t.size * sizeof(float));
  }
  if (meta) {
    auto get = [&](const char* k) {
      auto i = f.metadata.find(k);
      return i == f.metadata.end() ? std::string() : i->second;
    };
    *meta = {get(kMetaVocab), get(kMetaVocabHash), get(kMetaTrain)};
  }
  return m;
}

void save_model(const std::string& path, const Model& m, const CheckpointMeta& meta) {
  write_safetensors(path, model_to_tensor_file(m, meta));
}

Model load_model(const std::string& path, const std::string& expected_vocab_hash, CheckpointMeta* meta) {
  return model_from_tensor_file(read_safetensors(path), path, expected_vocab_hash, meta);
}

}  // namespace minigpt
