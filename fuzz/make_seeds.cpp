// Writes the fuzzers' seed corpora into <out>/<target>/: small valid files made with the project's
// own writers (so mutations start from inputs that reach deep into the loaders), plus
// structure-aware hostile cases random mutation reaches slowly: deep nesting, long fields,
// overflowing size products, negative and huge dimensions, duplicate keys, NaN values.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/util/io.h"
#include "miniquant/npy.h"
#include "miniquant/quantize.h"
#include "minigpt/checkpoint.h"
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
  return 0;
}
