// Writing and reading quantized checkpoints on top of the fp32 checkpoint format.
#include "minigpt/quantized_checkpoint.h"

#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/embedding.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/safetensors.h"

namespace minigpt {
namespace {

NamedTensor bytes_tensor(std::string name, DType dt, std::vector<int64_t> shape, const void* data, size_t n) {
  NamedTensor t{std::move(name), dt, std::move(shape), std::vector<uint8_t>(n)};
  if (n) std::memcpy(t.bytes.data(), data, n);
  return t;
}

// Replaces tensor `name` of `f` by the stored form of `q`: codes (U8 [rows, row_bytes]), scales
// (F16 [count]) and, asymmetric schemes only, zero-points (U8 [bytes]); an fp16 table is one F16 tensor.
void put_quantized(TensorFile& f, const std::string& name, const mq::QTensor& q) {
  std::erase_if(f.tensors, [&](const NamedTensor& t) { return t.name == name; });
  if (q.scheme.kind == mq::Kind::fp16) {
    f.tensors.push_back(bytes_tensor(name, DType::F16, {q.rows, q.cols}, q.codes.data(), q.codes.size()));
    return;
  }
  f.tensors.push_back(bytes_tensor(name + ".codes", DType::U8, {q.rows, q.row_bytes()}, q.codes.data(), q.codes.size()));
  f.tensors.push_back(bytes_tensor(name + ".scales", DType::F16, {static_cast<int64_t>(q.scales.size())}, q.scales.data(),
                                   q.scales.size() * 2));
  if (!q.zeros.empty())
    f.tensors.push_back(
        bytes_tensor(name + ".zeros", DType::U8, {static_cast<int64_t>(q.zeros.size())}, q.zeros.data(), q.zeros.size()));
}

}  // namespace

void save_quantized_model(const std::string& path, const Model& m, const QuantPlan& plan, const CheckpointMeta& meta,
                          const nlohmann::json& info) {
  TensorFile f = model_to_tensor_file(m, meta);
  nlohmann::json schemes = nlohmann::json::object();
  for (const LinearInfo& li : m.linears()) {
    const auto* qp = dynamic_cast<const QuantizedProjection*>(&m.projection(li.name));
    if (!qp) continue;  // fp32: its master weight is already in f
    const mq::QTensor q = qp->linear().weight();
    put_quantized(f, li.name + ".weight", q);
    schemes[li.name] = q.scheme.name();
  }
  if (const auto* he = dynamic_cast<const HalfEmbedding*>(&m.embedding())) put_quantized(f, "wte", he->table().weight());
  nlohmann::json q = info;
  q["plan"] = plan.to_json();
  q["layers"] = schemes;
  q["embedding"] = m.embedding().format_name();
  f.metadata[kMetaQuantization] = q.dump();
  write_safetensors(path, f);
}

Model load_any_model(const std::string& path, const std::string& expected_vocab_hash, CheckpointMeta* meta, QuantPlan* plan) {
  TensorFile f = read_safetensors(path);
  auto it = f.metadata.find(kMetaQuantization);
  if (it == f.metadata.end()) {
    if (plan) *plan = QuantPlan::uniform("fp32");
    return model_from_tensor_file(f, path, expected_vocab_hash, meta);
  }

  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("quantized checkpoint {}: {}", path, what)); };
  QuantPlan p;
  nlohmann::json layers;
  std::string embedding;
  try {
    const nlohmann::json q = nlohmann::json::parse(it->second);
    p = QuantPlan::from_json(q.at("plan"), "plan");
    layers = q.at("layers");
    embedding = q.at("embedding").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("\"quantization\" metadata is not valid ({}); re-run miniquant quantize", e.what()));
  } catch (const mq::UsageError& e) {  // a damaged plan is a bad file, not a bad command line
    throw fail(fmt::format("its recorded plan is not valid: {}", e.what()));
  }
  auto config_it = f.metadata.find(kMetaConfig);
  if (config_it == f.metadata.end()) throw fail("no model_config metadata; re-run miniquant quantize");
  ModelConfig config;
  try {
    config = model_config_from_json(nlohmann::json::parse(config_it->second));
  } catch (const std::exception& e) {
    throw fail(fmt::format("model_config metadata is not valid ({})", e.what()));
  }
  const Model shape_only(config, 0);

  // Each stored quantized weight, checked against the scheme the file names for it.
  auto read_quantized = [&](const std::string& name, const std::string& scheme, int64_t rows, int64_t cols) {
    mq::QTensor q;
    try {
      q.scheme = mq::Scheme::parse(scheme);
    } catch (const mq::UsageError& e) {
      throw fail(fmt::format("{}: {}", name, e.what()));
    }
    q.name = name;
    q.rows = rows;
    q.cols = cols;
    const mq::Storage st = q.storage();
    if (q.scheme.kind == mq::Kind::fp16) {
      const NamedTensor* t = f.find(name);
      if (!t || t->dtype != DType::F16 || t->shape != std::vector<int64_t>{rows, cols})
        throw fail(fmt::format("{} should be an F16 tensor [{}, {}]", name, rows, cols));
      q.codes.assign(t->bytes.begin(), t->bytes.end());
      return q;
    }
    const NamedTensor* codes = f.find(name + ".codes");
    const NamedTensor* scales = f.find(name + ".scales");
    const NamedTensor* zeros = f.find(name + ".zeros");
    if (!codes || !scales) throw fail(fmt::format("{} is quantized but its codes or scales are missing", name));
    if (codes->dtype != DType::U8 || codes->shape != std::vector<int64_t>{rows, q.row_bytes()} ||
        scales->dtype != DType::F16 || static_cast<int64_t>(scales->bytes.size()) != st.scale_bytes ||
        (zeros && zeros->dtype != DType::U8) || static_cast<int64_t>(zeros ? zeros->bytes.size() : 0) != st.zero_bytes)
      throw fail(fmt::format("{} ({}): stored dtypes or sizes do not match {}x{} in that scheme", name, scheme, rows, cols));
    q.codes.assign(codes->bytes.begin(), codes->bytes.end());
    q.scales.resize(scales->bytes.size() / 2);
    std::memcpy(q.scales.data(), scales->bytes.data(), q.scales.size() * 2);
    if (zeros) q.zeros = zeros->bytes;
    return q;
  };

  std::vector<std::string> held;
  std::vector<std::pair<LinearInfo, mq::QTensor>> qs;
  for (const LinearInfo& li : shape_only.linears()) {
    if (!layers.contains(li.name)) {
      if (!p.recipe_for(li.layer, li.kind).keeps_fp32())
        throw fail(fmt::format("the plan quantizes {} but the file does not store it quantized", li.name));
      continue;
    }
    const std::string w = li.name + ".weight";
    if (!layers[li.name].is_string()) throw fail(fmt::format("the scheme of {} is not a string", li.name));
    qs.emplace_back(li, read_quantized(w, layers[li.name].get<std::string>(), li.out, li.in));
    held.push_back(w);
  }
  mq::QTensor wte;
  if (embedding == "fp16") {
    wte = read_quantized("wte", "fp16", config.vocab_size, config.d_model);
    held.push_back("wte");
  } else if (embedding != "fp32") {
    throw fail(fmt::format("embedding format \"{}\" is not fp32 or fp16", embedding));
  }
  Model m = model_from_tensor_file(f, path, expected_vocab_hash, meta, held);
  for (auto& [li, q] : qs) {
    const LinearRecipe r = p.recipe_for(li.layer, li.kind);
    if (r.scheme != q.scheme)
      throw fail(fmt::format("{} is stored as {} but the recorded plan says {}", li.name, q.scheme.name(), r.name()));
    m.set_projection(li.name, std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(q), r.act)));
    m.drop_master(li.name);
  }
  if (embedding == "fp16") {
    m.set_embedding(std::make_unique<HalfEmbedding>(std::move(wte)));
    m.drop_master("wte");
  }
  if (plan) *plan = std::move(p);
  return m;
}

}  // namespace minigpt
