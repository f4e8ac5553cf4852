// Writing and reading quantized checkpoints on top of the fp32 checkpoint format.
#include "minigpt/quantized_checkpoint.h"

#include <algorithm>
#include <cstring>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/json_checked.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/safetensors.h"
#include "minigpt/tensor_checks.h"

namespace minigpt {
namespace {

NamedTensor bytes_tensor(std::string name, DType dt, std::vector<int64_t> shape, const void* data, size_t n) {
  NamedTensor t{std::move(name), dt, std::move(shape), std::vector<uint8_t>(n)};
  if (n) std::memcpy(t.bytes.data(), data, n);
  return t;
}

}  // namespace

void save_quantized_model(const std::string& path, const Model& m,
                          const std::vector<std::pair<std::string, mq::QTensor>>& layers, const CheckpointMeta& meta,
                          const std::string& info_json) {
  TensorFile f = model_to_tensor_file(m, meta);
  nlohmann::json info = nlohmann::json::parse(info_json);
  nlohmann::json schemes = nlohmann::json::object();
  for (const auto& [name, q] : layers) {
    const std::string w = name + ".weight";
    std::erase_if(f.tensors, [&](const NamedTensor& t) { return t.name == w; });
    // Float schemes store their values under their own dtype, so the reader can tell fp16 from bf16;
    // they have no scales, and a zero-length tensor would only be noise.
    if (q.scheme.is_integer()) {
      f.tensors.push_back(bytes_tensor(w + ".codes", DType::U8, {q.rows, q.row_bytes()}, q.codes.data(), q.codes.size()));
      f.tensors.push_back(bytes_tensor(w + ".scales", DType::F16, {static_cast<int64_t>(q.scales.size())},
                                       q.scales.data(), q.scales.size() * 2));
    } else {
      const DType dt = q.scheme.kind == mq::Kind::fp32 ? DType::F32 : q.scheme.kind == mq::Kind::fp16 ? DType::F16 : DType::BF16;
      f.tensors.push_back(bytes_tensor(w + ".codes", dt, {q.rows, q.cols}, q.codes.data(), q.codes.size()));
    }
    if (!q.zeros.empty())
      f.tensors.push_back(bytes_tensor(w + ".zeros", DType::U8, {static_cast<int64_t>(q.zeros.size())}, q.zeros.data(),
                                       q.zeros.size()));
    schemes[name] = q.scheme.name();
  }
  info["layers"] = schemes;
  f.metadata[kMetaQuantization] = info.dump();
  write_safetensors(path, f);
}

Model load_any_model(const std::string& path, const std::string& expected_vocab_hash, CheckpointMeta* meta,
                     std::string* quant_info) {
  return load_any_model_from(read_safetensors(path), path, expected_vocab_hash, meta, quant_info);
}

Model load_any_model_from(TensorFile f, const std::string& path, const std::string& expected_vocab_hash,
                          CheckpointMeta* meta, std::string* quant_info) {
  auto it = f.metadata.find(kMetaQuantization);
  if (quant_info) *quant_info = it == f.metadata.end() ? "" : it->second;
  if (it == f.metadata.end()) return model_from_tensor_file(f, path, expected_vocab_hash, meta);

  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("quantized checkpoint {}: {}", path, what)); };
  nlohmann::json layers;
  try {
    const nlohmann::json info = mq::parse_json_checked(it->second, "\"quantization\" metadata");
    if (!info.is_object() || !info.contains("layers") || !info["layers"].is_object())
      throw mq::Error("\"quantization\" metadata has no \"layers\" object");
    layers = info["layers"];
  } catch (const mq::Error& e) {
    throw fail(fmt::format("{}; re-run miniquant quantize", e.what()));
  }
  auto config_it = f.metadata.find(kMetaConfig);
  if (config_it == f.metadata.end()) throw fail("no model_config metadata; re-run miniquant quantize");
  ModelConfig config;
  try {
    config = model_config_from_text(config_it->second, "model_config metadata");
  } catch (const mq::Error& e) {
    throw fail(e.what());
  }
  // The Linears' names and shapes from the layout alone: no parameters are allocated before the
  // file's tensors have been checked against them.
  const ParamLayout layout(config);
  std::vector<LinearInfo> linears;
  for (const auto& t : layout.tensors())
    if (t.kind == ParamKind::LinearWeight)
      linears.push_back({t.name.substr(0, t.name.size() - std::string(".weight").size()), t.shape[1], t.shape[0]});
  for (auto l = layers.begin(); l != layers.end(); ++l)
    if (std::none_of(linears.begin(), linears.end(), [&](const LinearInfo& li) { return li.name == l.key(); }))
      throw fail(fmt::format("\"quantization\" metadata names layer \"{}\", which the model does not have; "
                             "re-run miniquant quantize", mq::clip_text(l.key())));

  // Rebuild each quantized weight, and put its dequantized values where the fp32 loader expects them.
  std::vector<std::pair<std::string, mq::QTensor>> qs;
  for (const LinearInfo& li : linears) {
    if (!layers.contains(li.name)) continue;
    const std::string w = li.name + ".weight";
    if (f.find(w)) throw fail(fmt::format("{} is quantized but also stored in fp32", li.name));
    mq::QTensor q = quantized_tensor_from_file(f, w, stored_scheme(layers[li.name], li.name, path), li.out, li.in, path);
    const std::vector<float> d = mq::dequantize(q);
    f.add_f32(w, {li.out, li.in}, d.data());
    qs.emplace_back(li.name, std::move(q));
  }
  Model m = model_from_tensor_file(f, path, expected_vocab_hash, meta);
  for (auto& [name, q] : qs)
    m.set_projection(name, std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(q))));
  return m;
}

}  // namespace minigpt
