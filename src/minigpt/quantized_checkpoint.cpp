// Writing and reading quantized checkpoints on top of the fp32 checkpoint format.
#include "minigpt/quantized_checkpoint.h"

#include <algorithm>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "minigpt/embedding.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/tensor_checks.h"

namespace minigpt {
namespace {

NamedTensor bytes_tensor(std::string name, DType dt, std::vector<int64_t> shape, const void* data, size_t n) {
  NamedTensor t{std::move(name), dt, std::move(shape), std::vector<uint8_t>(n)};
  if (n) std::memcpy(t.bytes.data(), data, n);
  return t;
}

DType float_dtype(const mq::Scheme& s) {
  return s.kind == mq::Kind::fp32 ? DType::F32 : s.kind == mq::Kind::fp16 ? DType::F16 : DType::BF16;
}

// Replaces the fp32 weight `w` of `f` by the stored form of `q`: integer schemes as codes (U8 [rows,
// row_bytes]), scales (F16 [count]) and, asymmetric only, zero-points (U8); K families as their blocks (U8
// [rows, row_bytes]); float schemes as codes under
// their own dtype (so the reader can tell fp16 from bf16), with no scales.
void put_quantized(TensorFile& f, const std::string& w, const mq::QTensor& q) {
  std::erase_if(f.tensors, [&](const NamedTensor& t) { return t.name == w; });
  if (q.scheme.is_integer()) {
    f.tensors.push_back(bytes_tensor(w + ".codes", DType::U8, {q.rows, q.row_bytes()}, q.codes.data(), q.codes.size()));
    f.tensors.push_back(
        bytes_tensor(w + ".scales", DType::F16, {static_cast<int64_t>(q.scales.size())}, q.scales.data(), q.scales.size() * 2));
  } else if (q.scheme.is_kquant()) {  // the super-blocks, their scales inside
    f.tensors.push_back(bytes_tensor(w + ".codes", DType::U8, {q.rows, q.row_bytes()}, q.codes.data(), q.codes.size()));
  } else {
    f.tensors.push_back(bytes_tensor(w + ".codes", float_dtype(q.scheme), {q.rows, q.cols}, q.codes.data(), q.codes.size()));
  }
  if (!q.zeros.empty())
    f.tensors.push_back(
        bytes_tensor(w + ".zeros", DType::U8, {static_cast<int64_t>(q.zeros.size())}, q.zeros.data(), q.zeros.size()));
}

// (layer, kind) of a Linear weight's parameter name, "h.<layer>.<attn.c_attn|attn.c_proj|mlp.c_fc|mlp.c_proj>.weight".
LinearInfo linear_of(const ParamTensor& t) {
  static const std::pair<const char*, LinearKind> kinds[] = {{".attn.c_attn.weight", LinearKind::qkv},
                                                             {".attn.c_proj.weight", LinearKind::attn_out},
                                                             {".mlp.c_fc.weight", LinearKind::mlp_up},
                                                             {".mlp.c_proj.weight", LinearKind::mlp_down}};
  LinearInfo li;
  li.name = t.name.substr(0, t.name.size() - std::string(".weight").size());
  li.layer = std::stoi(t.name.substr(2));  // the layout's own names: "h.<digits>."
  for (const auto& [suffix, kind] : kinds)
    if (t.name.ends_with(suffix)) li.kind = kind;
  li.out = t.shape[0];
  li.in = t.shape[1];
  return li;
}

}  // namespace

void save_quantized_model(const std::string& path, const Model& m, const QuantPlan& plan, const CheckpointMeta& meta,
                          const nlohmann::json& info) {
  TensorFile f = model_to_tensor_file(m, meta);
  nlohmann::json schemes = nlohmann::json::object();
  for (const auto& [name, q] : stored_weights(m)) {  // fp32 Linears: their master weight is already in f
    put_quantized(f, name + ".weight", q);
    schemes[name] = q.scheme.name();
  }
  if (const auto* he = dynamic_cast<const HalfEmbedding*>(&m.embedding())) {
    const mq::QTensor t = he->table().weight();
    std::erase_if(f.tensors, [](const NamedTensor& x) { return x.name == "wte"; });
    f.tensors.push_back(bytes_tensor("wte", DType::F16, {t.rows, t.cols}, t.codes.data(), t.codes.size()));
  }
  nlohmann::json q = info;
  q["plan"] = plan.to_json();
  q["layers"] = schemes;
  q["embedding"] = m.embedding().format_name();
  f.metadata[kMetaQuantization] = q.dump();
  write_safetensors(path, f);
}

Model load_any_model(const std::string& path, const std::string& expected_vocab_hash, CheckpointMeta* meta, QuantPlan* plan) {
  TensorFile f = read_safetensors(path);
  const Checksums sums = f.checksums;
  Model m = load_any_model_from(std::move(f), path, expected_vocab_hash, meta, plan);
  note_if_unverified(path, sums);
  return m;
}

Model load_any_model_from(TensorFile f, const std::string& path, const std::string& expected_vocab_hash, CheckpointMeta* meta,
                          QuantPlan* plan) {
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
    const nlohmann::json info = mq::parse_json_checked(it->second, "\"quantization\" metadata");
    if (!info.is_object() || !info.contains("layers") || !info["layers"].is_object() || !info.contains("plan") ||
        !info.contains("embedding") || !info["embedding"].is_string())
      throw mq::Error("\"quantization\" metadata needs \"plan\", \"layers\" and \"embedding\"");
    layers = info["layers"];
    embedding = info["embedding"].get<std::string>();
    p = QuantPlan::from_json(info["plan"], "plan");
  } catch (const mq::UsageError& e) {  // a damaged plan is a bad file, not a bad command line
    throw fail(fmt::format("its recorded plan is not valid: {}; re-run miniquant quantize", e.what()));
  } catch (const mq::Error& e) {
    throw fail(fmt::format("{}; re-run miniquant quantize", e.what()));
  }
  if (embedding != "fp32" && embedding != "fp16") throw fail(fmt::format("embedding format \"{}\" is not fp32 or fp16", mq::clip_text(embedding)));
  auto config_it = f.metadata.find(kMetaConfig);
  if (config_it == f.metadata.end()) throw fail("no model_config metadata; re-run miniquant quantize");
  ModelConfig config;
  try {
    config = model_config_from_text(config_it->second, "model_config metadata");
  } catch (const mq::Error& e) {
    throw fail(e.what());
  }
  try {
    p.validate(config);
  } catch (const mq::UsageError& e) {
    throw fail(fmt::format("its recorded plan does not fit the model: {}", e.what()));
  }
  // The Linears' names and shapes from the layout alone: no parameters are allocated before the
  // file's tensors have been checked against them.
  const ParamLayout layout(config);
  std::vector<LinearInfo> linears;
  for (const auto& t : layout.tensors())
    if (t.kind == ParamKind::LinearWeight) linears.push_back(linear_of(t));
  for (auto l = layers.begin(); l != layers.end(); ++l)
    if (std::none_of(linears.begin(), linears.end(), [&](const LinearInfo& li) { return li.name == l.key(); }))
      throw fail(fmt::format("\"quantization\" metadata names layer \"{}\", which the model does not have; "
                             "re-run miniquant quantize", mq::clip_text(l.key())));

  std::vector<std::string> held;
  std::vector<std::pair<LinearInfo, mq::QTensor>> qs;
  for (const LinearInfo& li : linears) {
    const LinearRecipe r = p.recipe_for(li.layer, li.kind);
    if (!layers.contains(li.name)) {
      if (!r.keeps_fp32()) throw fail(fmt::format("the plan quantizes {} but the file does not store it quantized", li.name));
      continue;
    }
    const std::string w = li.name + ".weight";
    if (f.find(w)) throw fail(fmt::format("{} is quantized but also stored in fp32", li.name));
    mq::QTensor q = quantized_tensor_from_file(f, w, stored_scheme(layers[li.name], li.name, path), li.out, li.in, path);
    if (r.scheme != q.scheme)
      throw fail(fmt::format("{} is stored as {} but the recorded plan says {}", li.name, q.scheme.name(), r.name()));
    qs.emplace_back(li, std::move(q));
    held.push_back(w);
  }
  mq::QTensor wte;
  if (embedding == "fp16") {
    const NamedTensor* t = f.find("wte");
    if (!t || t->dtype != DType::F16 || t->shape != std::vector<int64_t>{config.vocab_size, config.d_model})
      throw fail(fmt::format("the fp16 embedding \"wte\" should be an F16 tensor [{}, {}]", config.vocab_size, config.d_model));
    check_finite(*t, path);
    wte.scheme = mq::Scheme::fp16();
    wte.name = "wte";
    wte.rows = config.vocab_size;
    wte.cols = config.d_model;
    wte.codes.assign(t->bytes.begin(), t->bytes.end());
    held.push_back("wte");
  }
  Model m = model_from_tensor_file(f, path, expected_vocab_hash, meta, held);
  for (auto& [li, q] : qs) {
    m.set_projection(li.name, std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(q), p.recipe_for(li.layer, li.kind).act)));
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
