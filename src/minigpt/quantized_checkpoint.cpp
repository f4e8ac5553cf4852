// Writing and reading quantized checkpoints on top of the fp32 checkpoint format.
#include "minigpt/quantized_checkpoint.h"

#include <cstring>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/safetensors.h"

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
    f.tensors.push_back(bytes_tensor(w + ".codes", DType::U8, {q.rows, q.row_bytes()}, q.codes.data(), q.codes.size()));
    f.tensors.push_back(bytes_tensor(w + ".scales", DType::F16, {static_cast<int64_t>(q.scales.size())}, q.scales.data(),
                                     q.scales.size() * 2));
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
  TensorFile f = read_safetensors(path);
  auto it = f.metadata.find(kMetaQuantization);
  if (quant_info) *quant_info = it == f.metadata.end() ? "" : it->second;
  if (it == f.metadata.end()) return model_from_tensor_file(f, path, expected_vocab_hash, meta);

  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("quantized checkpoint {}: {}", path, what)); };
  nlohmann::json layers;
  try {
    layers = nlohmann::json::parse(it->second).at("layers");
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("\"quantization\" metadata is not valid ({}); re-run miniquant quantize", e.what()));
  }
  auto config_it = f.metadata.find(kMetaConfig);
  if (config_it == f.metadata.end()) throw fail("no model_config metadata; re-run miniquant quantize");
  const Model shape_only(model_config_from_json(nlohmann::json::parse(config_it->second)), 0);

  // Rebuild each quantized weight, and put its dequantized values where the fp32 loader expects them.
  std::vector<std::pair<std::string, mq::QTensor>> qs;
  for (const LinearInfo& li : shape_only.linears()) {
    if (!layers.contains(li.name)) continue;
    const std::string w = li.name + ".weight";
    mq::QTensor q;
    q.scheme = mq::Scheme::parse(layers[li.name].get<std::string>());
    q.name = w;
    q.rows = li.out;
    q.cols = li.in;
    const NamedTensor* codes = f.find(w + ".codes");
    const NamedTensor* scales = f.find(w + ".scales");
    const NamedTensor* zeros = f.find(w + ".zeros");
    if (!codes || !scales) throw fail(fmt::format("{} is quantized but its codes or scales are missing", li.name));
    q.codes.assign(codes->bytes.begin(), codes->bytes.end());
    q.scales.resize(scales->bytes.size() / 2);
    std::memcpy(q.scales.data(), scales->bytes.data(), q.scales.size() * 2);
    if (zeros) q.zeros = zeros->bytes;
    const mq::Storage st = q.storage();
    if (static_cast<int64_t>(q.codes.size()) != st.code_bytes || static_cast<int64_t>(q.scales.size()) * 2 != st.scale_bytes ||
        static_cast<int64_t>(q.zeros.size()) != st.zero_bytes)
      throw fail(fmt::format("{} ({}): stored sizes do not match {}x{} in that scheme", li.name, q.scheme.name(), li.out, li.in));
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
