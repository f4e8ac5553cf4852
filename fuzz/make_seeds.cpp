// Writes the fuzzers' seed corpora into <out>/<target>/: small valid files made with the project's
// own writers (so mutations start from inputs that reach deep into the loaders), plus
// structure-aware hostile cases random mutation reaches slowly: deep nesting, long fields,
// overflowing size products, negative and huge dimensions, duplicate keys, NaN values, GGUF counts
// and string lengths beyond the file, overlapping / misaligned / out-of-range tensor offsets.
#include <cstdio>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"
#include "miniquant/util/io.h"
#include "miniquant/npy.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"
#include "minigpt/checkpoint.h"
#include "minigpt/gguf_export.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/safetensors.h"
#include "minigpt/tokenizer.h"

namespace fs = std::filesystem;
using namespace minigpt;

namespace {

std::string g_out;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_out + "/" + target);
  mq::write_file_atomic(g_out + "/" + target + "/" + name, bytes);
}

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

std::string st_raw(const std::string& header, const std::string& data = "") {
  const uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

std::string npy_raw(const std::string& dict, const std::string& data = "") {
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\0';
  const std::string h = dict + "\n";
  out += static_cast<char>(h.size() & 0xFF);
  out += static_cast<char>((h.size() >> 8) & 0xFF);
  return out + h + data;
}

// The smallest model the config rules allow: one layer of width 128, two tokens, two positions.
ModelConfig smallest() { return {.vocab_size = 2, .n_ctx = 2, .d_model = 128, .n_layer = 1, .n_head = 1, .d_ff = 512}; }

std::string quantized_file(const mq::Scheme& s) {
  Model m(smallest(), 42);
  const QuantPlan plan = QuantPlan::uniform(s.name());
  quantize_model(m, plan);
  const Tokenizer tok({"<unk>", "<sep>"});
  const std::string tmp = g_out + "/.tmp.safetensors";
  save_quantized_model(tmp, m, plan, {tok.to_json(), "0", "{}"});
  std::string bytes = mq::read_file(tmp);
  fs::remove(tmp);
  return bytes;
}

void safetensors_seeds() {
  TensorFile f;
  const float v[6] = {1, 2, 3, 4, 5, 6};
  f.add_f32("a", {2, 3}, v);
  f.add_f32("empty", {0}, nullptr);
  f.tensors.push_back({"h", DType::F16, {2}, {0x00, 0x3C, 0x00, 0xC0}});
  f.metadata["format"] = "x";
  const std::string tmp = g_out + "/.tmp.safetensors";
  write_safetensors(tmp, f);
  put("safetensors", "valid.safetensors", mq::read_file(tmp));
  fs::remove(tmp);
  put("safetensors", "deep_shape_70", st_raw(R"({"w":{"dtype":"F32","shape":)" + nested(70) + R"(,"data_offsets":[0,0]}})"));
  put("safetensors", "deep_shape_10000", st_raw(R"({"w":{"dtype":"F32","shape":)" + nested(10000) + R"(,"data_offsets":[0,0]}})"));
  put("safetensors", "long_dtype", st_raw(R"({"w":{"dtype":")" + std::string(40000, 'F') + R"(","shape":[1],"data_offsets":[0,4]}})", "abcd"));
  put("safetensors", "overflow_shape", st_raw(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}})"));
  put("safetensors", "overlap", st_raw(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", "abcd"));
  put("safetensors", "duplicate", st_raw(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "ab"));
  put("safetensors", "negative", st_raw(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "a"));
}

void checkpoint_seeds() {
  put("checkpoint", "int2_g64.safetensors", quantized_file(mq::Scheme::integer(2, 64)));
  put("checkpoint", "int4_g64_asym.safetensors", quantized_file(mq::Scheme::integer(4, 64, false)));
  put("checkpoint", "int8_per_tensor.safetensors", quantized_file(mq::Scheme::integer(8, mq::kPerTensor)));
  // Metadata-only files: absurd sizes, deep config, scheme names that are not schemes.
  auto meta_only = [](const nlohmann::json& meta) { return st_raw(nlohmann::json{{"__metadata__", meta}}.dump()); };
  const std::string cfg = R"({"vocab_size":2,"n_ctx":200000,"d_model":128,"n_layer":1,"n_head":1,"d_ff":512})";
  put("checkpoint", "huge_ctx", meta_only({{"format", kCheckpointFormat}, {"model_config", cfg}}));
  put("checkpoint", "deep_config", meta_only({{"format", kCheckpointFormat}, {"model_config", nested(10000)}}));
  put("checkpoint", "int_overflow", meta_only({{"format", kCheckpointFormat},
                                               {"model_config", R"({"vocab_size":2,"n_ctx":2,"d_model":4294967424,"n_layer":1,"n_head":1,"d_ff":512})"}}));
  put("checkpoint", "bad_scheme", meta_only({{"format", kCheckpointFormat},
                                             {"model_config", R"({"vocab_size":2,"n_ctx":2,"d_model":128,"n_layer":1,"n_head":1,"d_ff":512})"},
                                             {"quantization", R"({"layers":{"h.0.attn.c_attn":"int9-g7"}})"}}));
}

void config_seeds() {
  put("model_config", "valid.json", R"({"vocab_size": 611, "n_ctx": 128, "d_model": 256, "n_layer": 4, "n_head": 4, "d_ff": 1024})");
  put("model_config", "relaxed.json", R"({"vocab_size": 2, "n_ctx": 1, "d_model": 128, "n_layer": 1, "n_head": 128, "d_ff": 512})");
  put("model_config", "int_overflow.json", R"({"vocab_size": 611, "n_ctx": 128, "d_model": 4294967552, "n_layer": 4, "n_head": 4, "d_ff": 1024})");
  put("model_config", "huge.json", R"({"vocab_size": 1048576, "n_ctx": 65536, "d_model": 32768, "n_layer": 1024, "n_head": 4, "d_ff": 32768})");
  put("model_config", "duplicate.json", R"({"vocab_size": 611, "vocab_size": 612, "n_ctx": 128, "d_model": 256, "n_layer": 4, "n_head": 4, "d_ff": 1024})");
  put("model_config", "deep.json", R"({"vocab_size": )" + nested(10000) + "}");
  put("model_config", "long_key.json", "{\"" + std::string(40000, 'k') + "\": 1}");
  put("train_config", "valid.json", R"({"steps": 1000, "batch": 16, "lr": 0.001, "warmup": 100, "min_lr": 0.0001, "weight_decay": 0.1,
    "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "clip": 1.0, "seed": 42, "eval_interval": 100, "eval_batches": 8,
    "checkpoint_interval": 0, "checkpoint_path": "", "resume_from": ""})");
  put("train_config", "overflow.json", R"({"steps": 5000000000, "seed": 18446744073709551615, "lr": 1e308, "min_lr": 1e-320})");
  put("train_config", "types.json", R"({"steps": 2.5, "lr": "fast", "checkpoint_path": 7, "batch": -1})");
  put("train_config", "deep.json", R"({"lr": )" + nested(10000) + "}");
  put("train_config", "duplicate.json", R"({"steps": 1, "steps": 2})");
  put("train_config", "long_string.json", R"({"checkpoint_path": ")" + std::string(40000, 'p') + "\"}");
}

void npy_seeds() {
  mq::Matrix m{2, 3, {1, 2, 3, 4, 5, 6}};
  mq::save_npy(g_out + "/.tmp.npy", m);
  put("npy", "valid_f4.npy", mq::read_file(g_out + "/.tmp.npy"));
  fs::remove(g_out + "/.tmp.npy");
  const std::string d8(16, '\0');
  put("npy", "f8_fortran.npy", npy_raw("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1), }", d8));
  put("npy", "f2_1d.npy", npy_raw("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", std::string(6, '\x3c')));
  put("npy", "long_descr.npy", npy_raw("{'descr': '" + std::string(40000, 'f') + "', 'fortran_order': False, 'shape': (1,), }", "abcd"));
  put("npy", "overflow.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"));
  put("npy", "negative.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }"));
  put("npy", "huge_dim.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }"));
  std::string dims;
  for (int i = 0; i < 40; ++i) dims += "1, ";
  put("npy", "many_dims.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }"));
}


// ---- GGUF -----------------------------------------------------------------------------------------

// Raw GGUF bytes, for headers the writer refuses to produce.
struct GgufRaw {
  std::string b = std::string("GGUF", 4);
  template <class T>
  GgufRaw& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  GgufRaw& str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  // A tensor info: name, dims, ggml type, offset.
  GgufRaw& tensor(const std::string& name, std::initializer_list<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name);
    put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) put<uint64_t>(n);
    put<uint32_t>(type);
    return put<uint64_t>(offset);
  }
  // Zero padding to 32 and `data` bytes of data.
  std::string with_data(size_t data) const {
    std::string out = b;
    out.resize((out.size() + 31) / 32 * 32, '\0');
    return out + std::string(data, '\x3c');
  }
};

GgufRaw gguf_header(uint64_t n_tensors, uint64_t n_kv) {
  GgufRaw r;
  r.put<uint32_t>(3).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  return r;
}

// Every tensor type the project reads, on a few small rows, and every metadata value type.
mq::gguf::File gguf_small(uint32_t alignment) {
  using namespace mq::gguf;
  File f;
  if (alignment) f.set(kAlignmentKey, Value::u32(alignment));
  f.set("general.architecture", Value::string("gpt2"));
  f.set("a.u64", Value::u64(1ULL << 40));
  f.set("a.i32", Value::i32(-5));
  f.set("a.f32", Value::f32(1e-5f));
  f.set("a.bool", Value::boolean(true));
  f.set("a.strings", Value::strings({"<unk>", "\xe2\x96\x81the", ""}));
  f.set("a.i32s", Value::i32s({3, -1, 7}));
  f.set("a.f32s", Value::f32s({0.5f, -2.0f}));
  const std::vector<float> w = mq::gaussian_matrix(2, 64, 42);
  f.tensors.push_back(from_floats(w.data(), 2, 64, TensorType::F32, "w.f32"));
  f.tensors.push_back(from_floats(w.data(), 1, 5, TensorType::F16, "v.f16", true));  // 10 bytes: padding follows
  f.tensors.push_back(from_floats(w.data(), 2, 32, TensorType::BF16, "w.bf16"));
  f.tensors.push_back(from_qtensor(mq::quantize(w.data(), 2, 64, mq::Scheme::integer(8, 32)), "w.q8_0"));
  f.tensors.push_back(from_qtensor(mq::quantize(w.data(), 2, 64, mq::Scheme::integer(4, 32)), "w.q4_0"));
  f.tensors.push_back(from_qtensor(mq::quantize(w.data(), 2, 64, mq::Scheme::integer(4, 64, false)), "w.q4_1"));
  return f;
}

// The exporter's output for the smallest MiniGPT quantized with `scheme`.
std::string gguf_model(const std::string& scheme) {
  Model m(smallest(), 42);
  const QuantPlan plan = QuantPlan::uniform(scheme);
  quantize_model(m, plan);
  const Tokenizer tok({"<unk>", "<sep>"});
  GgufExportOptions o;
  o.embedding = plan.is_identity() ? mq::gguf::TensorType::F32 : mq::gguf::TensorType::F16;
  o.scheme_label = scheme;
  return mq::gguf::serialize(to_gguf(m, tok, o));
}

void gguf_seeds() {
  using mq::gguf::serialize;
  put("gguf", "small.gguf", serialize(gguf_small(0)));
  put("gguf", "small_align64.gguf", serialize(gguf_small(64)));
  put("gguf", "empty.gguf", serialize(mq::gguf::File{}));
  // The smallest MiniGPT as export-gguf writes it: Q8_0, Q4_0, Q4_1 Linears; F16 / F32 embedding.
  put("gguf", "model_int8.gguf", gguf_model("int8-per-channel"));
  put("gguf", "model_int4_g32.gguf", gguf_model("int4-g32"));
  put("gguf", "model_int4_g64_asym.gguf", gguf_model("int4-g64-asym"));
  const std::string small = serialize(gguf_small(0));
  put("gguf", "truncated.gguf", small.substr(0, small.size() - 7));
  // Counts that claim more than any file holds.
  put("gguf", "huge_tensor_count", gguf_header(UINT64_MAX, 0).b);
  put("gguf", "huge_kv_count", gguf_header(0, uint64_t{1} << 62).b);
  // Absurd string lengths: a key, a value, a tensor name.
  put("gguf", "huge_key_length", gguf_header(0, 1).put<uint64_t>(UINT64_MAX - 3).b + "abc");
  put("gguf", "huge_string_value", gguf_header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(uint64_t{1} << 40).b + "abc");
  put("gguf", "huge_string_array", gguf_header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(UINT64_MAX).b);
  put("gguf", "huge_number_array", gguf_header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(12).put<uint64_t>(uint64_t{1} << 61).b);
  put("gguf", "nested_array", gguf_header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1).b);
  put("gguf", "long_key", gguf_header(0, 1).str(std::string(40000, 'k')).put<uint32_t>(4).put<uint32_t>(7).b);
  put("gguf", "bad_bool", gguf_header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).b);
  put("gguf", "duplicate_key", gguf_header(0, 2).str("k").put<uint32_t>(4).put<uint32_t>(1).str("k").put<uint32_t>(4).put<uint32_t>(2).b);
  put("gguf", "long_tensor_name", gguf_header(1, 0).tensor(std::string(40000, 'n'), {32}, 0, 0).with_data(128));
  // Alignment: zero, not a power of two, the largest u32 power of two, the wrong type.
  for (uint32_t a : {0u, 3u, 0x80000000u})
    put("gguf", fmt::format("alignment_{}", a),
        gguf_header(1, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(a).tensor("t", {32}, 0, 0).with_data(128));
  put("gguf", "alignment_u64", gguf_header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32).b);
  // Shapes: a product that overflows 64 bits, too many dimensions, a zero dimension, rows not a
  // multiple of the block, an unknown ggml type.
  put("gguf", "overflow_shape", gguf_header(1, 0).tensor("t", {uint64_t{1} << 32, uint64_t{1} << 32, 16}, 0, 0).with_data(64));
  put("gguf", "five_dims", gguf_header(1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).with_data(64));
  put("gguf", "zero_dim", gguf_header(1, 0).tensor("t", {0, UINT64_MAX}, 0, 0).with_data(0));
  put("gguf", "q4_0_ragged_row", gguf_header(1, 0).tensor("t", {33, 2}, 2, 0).with_data(64));
  put("gguf", "unknown_type", gguf_header(1, 0).tensor("t", {32}, 99, 0).with_data(128));
  // Offsets: out of range, overlapping (both at 0), misaligned, past the end, and a data section cut short.
  put("gguf", "offset_out_of_range", gguf_header(1, 0).tensor("t", {32}, 0, UINT64_MAX - 16).with_data(128));
  put("gguf", "offsets_overlap", gguf_header(2, 0).tensor("a", {32}, 0, 0).tensor("b", {32}, 0, 0).with_data(256));
  put("gguf", "offset_misaligned", gguf_header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 33).with_data(128));
  put("gguf", "offset_past_end", gguf_header(1, 0).tensor("t", {32, 4}, 8, 0).with_data(34));
  put("gguf", "duplicate_tensor", gguf_header(2, 0).tensor("a", {32}, 0, 0).tensor("a", {32}, 0, 128).with_data(256));
  put("gguf", "version_2", GgufRaw().put<uint32_t>(2).put<uint64_t>(0).put<uint64_t>(0).b);
}

// ---- quant maps ------------------------------------------------------------------------------------

void quant_map_seeds() {
  put("quant_map", "uniform.json", R"({"config_id": "int4-g64", "default": "int4-g64"})");
  put("quant_map", "fp32.json", R"({"config_id": "fp32", "default": "fp32", "embedding": "fp32"})");
  put("quant_map", "layer_groups.json", R"({"config_id": "mixed", "default": "int4-g64",
    "layer_groups": [{"layers": [0, 3], "quant": "int8-per-channel+a8"}, {"layers": [1], "quant": "int3-g64"}]})");
  put("quant_map", "tensors.json", R"({"config_id": "t", "default": "int4-g128-asym",
    "tensors": [{"match": "mlp_down", "quant": "int8-g32"}, {"match": "qkv", "layers": [2], "quant": "fp16"}],
    "embedding": "fp16"})");
  put("quant_map", "gptq.json", R"({"config_id": "g", "default": "int4-g64-gptq",
    "layer_groups": [{"layers": [0], "quant": "int2-g64-asym-gptq"}],
    "tensors": [{"match": "attn_out", "quant": "int4-per-channel-gptq+a8"}],
    "gptq": {"calibration_windows": 64, "percdamp": 0.01, "block": 128, "act_order": true, "sequential": false}})");
  // The JSON form of a plan, as a quantized checkpoint records it.
  put("quant_map", "to_json.json", QuantPlan::uniform("int4-g64-gptq+a8").to_json().dump());
  // Hostile: nesting, huge / negative / fractional layer numbers, overlapping groups, unknown kinds,
  // schemes and keys, duplicate keys, long strings, non-finite and out-of-int GPTQ settings.
  put("quant_map", "deep_70.json", R"({"config_id": "d", "default": "fp32", "layer_groups": )" + nested(70) + "}");
  put("quant_map", "deep_10000.json", R"({"config_id": "d", "default": )" + nested(10000) + "}");
  put("quant_map", "huge_layer.json", R"({"config_id": "h", "default": "int4-g64", "layer_groups": [{"layers": [4294967296], "quant": "fp16"}]})");
  put("quant_map", "float_layer.json", R"({"config_id": "h", "default": "int4-g64", "tensors": [{"match": "qkv", "layers": [1e300, 2.5], "quant": "fp16"}]})");
  put("quant_map", "negative_layer.json", R"({"config_id": "h", "default": "int4-g64", "layer_groups": [{"layers": [-1], "quant": "fp16"}]})");
  put("quant_map", "overlapping_groups.json", R"({"config_id": "o", "default": "int4-g64",
    "layer_groups": [{"layers": [0, 1], "quant": "fp16"}, {"layers": [1, 2], "quant": "int8-per-channel"}]})");
  put("quant_map", "unknown_kind.json", R"({"config_id": "u", "default": "int4-g64", "tensors": [{"match": "mlp_sideways", "quant": "fp16"}]})");
  put("quant_map", "unknown_scheme.json", R"({"config_id": "u", "default": "int5-g7-gptq+a8"})");
  put("quant_map", "gptq_float.json", R"({"config_id": "u", "default": "fp16-gptq"})");
  put("quant_map", "a8_int2.json", R"({"config_id": "u", "default": "int2-g64+a8"})");
  put("quant_map", "no_fit.json", R"({"config_id": "u", "default": "int4-g96"})");
  put("quant_map", "unknown_key.json", R"({"config_id": "u", "default": "int4-g64", "colour": "blue"})");
  put("quant_map", "duplicate_key.json", R"({"config_id": "u", "default": "int4-g64", "default": "fp16"})");
  put("quant_map", "long_scheme.json", R"({"config_id": "u", "default": "int4-g)" + std::string(40000, '6') + "\"}");
  put("quant_map", "long_id.json", R"({"config_id": ")" + std::string(40000, 'i') + R"(", "default": "int4-g96"})");
  put("quant_map", "gptq_extremes.json", R"({"config_id": "g", "default": "int4-g64-gptq",
    "gptq": {"calibration_windows": 5000000000, "percdamp": 1e999, "block": -3}})");
  put("quant_map", "types.json", R"({"config_id": 7, "default": ["int4-g64"], "layer_groups": {"layers": 1}})");
}

// ---- experiment files: energy coefficients, energy summary, ceilings ---------------------------------

// A committed file of the project (seeds start from what the program really reads).
nlohmann::json committed(const std::string& rel) {
  return nlohmann::json::parse(mq::read_file(std::string(MQ_SOURCE_DIR) + "/" + rel));
}

void experiment_file_seeds() {
  const nlohmann::json coef = committed("data/energy_model.json");
  put("energy_coefficients", "shipped.json", coef.dump(1));
  nlohmann::json c = coef;
  c["coefficients"]["static_watts"]["value"] = -1;
  put("energy_coefficients", "negative.json", c.dump());
  c = coef;
  c["coefficients"]["joules_per_byte_DRAM"]["value"] = "many";
  c["calibrated"] = "yes";
  put("energy_coefficients", "types.json", c.dump());
  c = coef;
  c["coefficients"].erase("joules_per_op_int8");
  put("energy_coefficients", "missing.json", c.dump());
  put("energy_coefficients", "deep_10000.json", R"({"coefficients": )" + nested(10000) + "}");
  put("energy_coefficients", "duplicate.json", R"({"coefficients": {"static_watts": {"value": 1}, "static_watts": {"value": 2}}})");
  put("energy_coefficients", "huge_value.json", R"({"coefficients": {"static_watts": {"value": 1e999}}})");

  // The smallest summary of the shape the report reads (tests/data; the committed experiments/28-energy
  // one predates the rounds) and variants: a failed method, a measured run, a missing phase, a null saving.
  const nlohmann::json s = committed("tests/data/energy_summary_shape.json");
  put("energy_summary", "shape.json", s.dump());
  nlohmann::json f = s;
  f["models"]["minigpt"]["methods"][2] = {{"name", "int8"}, {"status", "failed"}, {"error", "it broke"}};
  put("energy_summary", "failed_method.json", f.dump());
  f = s;
  f["measured"] = true;
  f.erase("model_coefficients");
  put("energy_summary", "measured.json", f.dump());
  f = s;
  f["models"]["minigpt"]["methods"][0]["phases"].erase("total");
  put("energy_summary", "missing_phase.json", f.dump());
  f = s;
  f["models"]["minigpt"]["methods"][2]["savings_vs_fp32"]["energy_per_token"]["total"] = nullptr;
  put("energy_summary", "null_saving.json", f.dump());
  put("energy_summary", "array.json", "[1, 2]");
  put("energy_summary", "deep.json", R"({"models": )" + nested(10000) + "}");

  const nlohmann::json ceil = committed("experiments/01-roofline/ceilings.json");
  put("ceilings", "committed.json", ceil.dump());
  nlohmann::json k = ceil;
  k["threads"] = {-2147483647 - 1, 2147483647};
  put("ceilings", "extreme_threads.json", k.dump());
  k = ceil;
  k["levels"][0]["bytes"] = "big";
  put("ceilings", "types.json", k.dump());
  k = ceil;
  k["ceilings"] = nlohmann::json::array();
  put("ceilings", "no_ceilings.json", k.dump());
  put("ceilings", "array.json", "[1, 2]");
  put("ceilings", "deep.json", R"({"levels": )" + nested(10000) + "}");
}

// ---- issue 53: the option parser and a mixed runs/ unit file ---------------------------------------
void option_and_unit_seeds() {
  for (const char* t : {"0/2", "1/2", "0/1", "0/2/3", "1x/2", "0x1/2", " 0/1", "+0/+1", "1/2 ", "01/2", "99999999999999999999/2", "-1/2",
                        "q4_k[prefill=+a8,decode=weight-only], int8-per-channel", ",,,", "a,[b,c", "]a,b["})
    put("options", std::to_string(std::hash<std::string>{}(t)) + ".txt", t);
  // One committed unit of each kind, and hand edits the merge once copied into results.json.
  const nlohmann::json config = committed("experiments/27-mixed-epi/runs/config/bookends-e8m3l8.json");
  put("mixed_unit", "config.json", config.dump());
  nlohmann::json u = config;
  u["row"]["ppl"] = "abc";
  put("mixed_unit", "ppl_text.json", u.dump());
  u = config;
  u["row"]["bytes"] = -5;
  put("mixed_unit", "bytes_negative.json", u.dump());
  u = config;
  u["row"]["divergence"]["delta_ppl"]["ci95"] = nlohmann::json::array();
  put("mixed_unit", "ci_empty.json", u.dump());
  u = config;
  u["machine"]["host"] = 7;
  put("mixed_unit", "host_number.json", u.dump());
  for (const auto& e : fs::directory_iterator(std::string(MQ_SOURCE_DIR) + "/experiments/27-mixed-epi/runs/sensitivity")) {
    put("mixed_unit", "sensitivity.json", mq::read_file(e.path().string()));
    break;
  }
  put("mixed_unit", "deep.json", R"({"row": )" + nested(10000) + "}");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds <output folder>\n");
    return 2;
  }
  g_out = argv[1];
  fs::create_directories(g_out);
  safetensors_seeds();
  checkpoint_seeds();
  config_seeds();
  npy_seeds();
  gguf_seeds();
  quant_map_seeds();
  experiment_file_seeds();
  option_and_unit_seeds();
  return 0;
}
