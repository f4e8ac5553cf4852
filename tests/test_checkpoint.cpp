// safetensors checkpoints: round trips, and every corruption caught with a useful message.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "minigpt/checkpoint.h"
#include "temp_dir.h"

using namespace minigpt;
namespace fs = std::filesystem;

namespace {
ModelConfig tiny() { return ModelConfig{.vocab_size = 11, .n_ctx = 16, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512}; }
const CheckpointMeta kMeta{R"({"words":["a","b"]})", "0123456789abcdef", R"({"steps":3})"};

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::path(mqtest::temp_path("mq_test", "minigpt_test_checkpoint"));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_bytes(const std::string& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
}

// Rewrites the JSON header text of a real file through `edit`, keeping the data section.
void edit_header(const std::string& p, const std::function<void(std::string&)>& edit) {
  std::string all = read_bytes(p);
  uint64_t hlen;
  std::memcpy(&hlen, all.data(), 8);
  std::string header = all.substr(8, hlen);
  const std::string data = all.substr(8 + hlen);
  edit(header);
  hlen = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &hlen, 8);
  write_bytes(p, out + header + data);
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, "header lacks " << from);
  s.replace(pos, from.size(), to);
}

std::string saved_model(const std::string& name) {
  const std::string p = temp_path(name);
  save_model(p, Model(tiny()), kMeta);
  return p;
}

// Loads and returns the error message (empty if it loaded).
std::string load_error(const std::string& p, const std::string& hash = "") {
  try {
    load_model(p, hash);
  } catch (const mq::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("model checkpoint round trip is bit-exact and keeps metadata") {
  Model m(tiny(), 7);
  const std::string p = temp_path("roundtrip.safetensors");
  save_model(p, m, kMeta);
  CHECK_FALSE(fs::exists(p + ".tmp"));
  CheckpointMeta meta;
  Model r = load_model(p, kMeta.vocab_hash, &meta);
  CHECK(r.config() == m.config());
  CHECK(std::memcmp(r.params(), m.params(), m.num_params() * 4) == 0);
  CHECK(meta.vocab_json == kMeta.vocab_json);
  CHECK(meta.vocab_hash == kMeta.vocab_hash);
  CHECK(meta.train_info == kMeta.train_info);
  // Header is 8-byte aligned so the data section is too.
  uint64_t hlen;
  std::memcpy(&hlen, read_bytes(p).data(), 8);
  CHECK(hlen % 8 == 0);
}

TEST_CASE("generic tensors: U8 codes, F16 scales, I32 and metadata survive") {
  TensorFile f;
  f.tensors.push_back({"codes", DType::U8, {2, 3}, {1, 2, 3, 4, 5, 255}});
  f.tensors.push_back({"scales", DType::F16, {2}, {0x00, 0x3c, 0x00, 0xc0}});
  f.tensors.push_back({"ids", DType::I32, {1}, {7, 0, 0, 0}});
  f.tensors.push_back({"empty", DType::F32, {0, 4}, {}});
  f.metadata["scheme"] = "int4-g64";
  const std::string p = temp_path("generic.safetensors");
  write_safetensors(p, f);
  const TensorFile r = read_safetensors(p);
  REQUIRE(r.tensors.size() == 4);
  for (const auto& t : f.tensors) {
    const NamedTensor* g = r.find(t.name);
    REQUIRE(g);
    CHECK(g->dtype == t.dtype);
    CHECK(g->shape == t.shape);
    CHECK(g->bytes == t.bytes);
  }
  CHECK(r.metadata.at("scheme") == "int4-g64");
  TensorFile bad;
  bad.tensors.push_back({"x", DType::F32, {3}, {1, 2, 3}});
  CHECK_THROWS_WITH_AS(write_safetensors(temp_path("bad.safetensors"), bad), doctest::Contains("has 3 bytes but its shape and dtype need 12"), mq::Error);
}

TEST_CASE("file-level corruption is reported, never a crash") {
  SUBCASE("missing file") {
    CHECK(load_error(temp_path("does-not-exist.safetensors")).find("no such file or directory") != std::string::npos);
  }
  SUBCASE("shorter than 8 bytes") {
    const auto p = saved_model("short.safetensors");
    write_bytes(p, read_bytes(p).substr(0, 5));
    CHECK(load_error(p).find("file is 5 bytes, shorter than the 8-byte header length") != std::string::npos);
  }
  SUBCASE("header length larger than the file") {
    const auto p = saved_model("hlen.safetensors");
    std::string b = read_bytes(p);
    b[5] = '\x01';  // header length now around 2^40
    write_bytes(p, b);
    CHECK(load_error(p).find("is larger than the file") != std::string::npos);
  }
  SUBCASE("header not JSON (flipped byte)") {
    const auto p = saved_model("flip.safetensors");
    std::string b = read_bytes(p);
    b[8] = static_cast<char>(b[8] ^ 0x5a);  // the opening brace
    write_bytes(p, b);
    CHECK(load_error(p).find("header: not valid JSON") != std::string::npos);
  }
  SUBCASE("data truncated") {
    const auto p = saved_model("trunc.safetensors");
    std::string b = read_bytes(p);
    write_bytes(p, b.substr(0, b.size() - 100));
    const auto e = load_error(p);
    CHECK(e.find("data truncated: tensor \"ln_f.bias\" ends at byte") != std::string::npos);
    CHECK(e.find("re-copy or re-save") != std::string::npos);
  }
}

TEST_CASE("header corruption is reported") {
  const auto p = saved_model("header.safetensors");
  const std::string original = read_bytes(p);
  auto with_edit = [&](const std::function<void(std::string&)>& edit) {
    write_bytes(p, original);
    edit_header(p, edit);
    return load_error(p);
  };
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"F32\"", "\"F33\""); }).find("unknown dtype \"F33\"") != std::string::npos);
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"dtype\"", "\"dtypo\""); }).find("missing dtype") != std::string::npos);
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"shape\":[11,128]", "\"shape\":[12,128]"); })
            .find("tensor \"wte\": shape [12,128] of F32 needs 6144 bytes but data_offsets [0, 5632] hold 5632") != std::string::npos);
  // 2^32 * 2^32 * 16 * 11 wraps to 0 in 64 bits: must not pass as an empty tensor.
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"shape\":[11,128]", "\"shape\":[4294967296,4294967296,16,11]"); })
            .find("overflows 64 bits") != std::string::npos);
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"data_offsets\":[0,5632]", "\"data_offsets\":[5632,0]"); })
            .find("out of order") != std::string::npos);
  // wpe moved onto wte's bytes: sizes still agree, the ranges overlap.
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"data_offsets\":[5632,13824]", "\"data_offsets\":[0,8192]"); })
            .find("overlap in the data section") != std::string::npos);
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"data_offsets\":[5632,13824]", "\"data_offsets\":[99995632,100003824]"); })
            .find("data truncated") != std::string::npos);
  CHECK(with_edit([](std::string& h) { replace_once(h, "\"data_offsets\":[0,5632]", "\"data_offsets\":[0,-5632]"); })
            .find("data_offsets must be [begin, end]") != std::string::npos);
  CHECK(with_edit([](std::string& h) { h = "[1,2]"; }).find("header is not a JSON object") != std::string::npos);
}

TEST_CASE("model-level checks: format version, tensors, shapes, vocabulary hash") {
  const std::string p = temp_path("model.safetensors");
  auto write_and_load = [&](const std::function<void(TensorFile&)>& edit, const std::string& hash = "") {
    TensorFile f = model_to_tensor_file(Model(tiny()), kMeta);
    edit(f);
    write_safetensors(p, f);
    return load_error(p, hash);
  };
  CHECK(write_and_load([](TensorFile&) {}).empty());
  auto e = write_and_load([](TensorFile& f) { f.metadata["format"] = "minigpt-0"; });
  CHECK(e.find("format is \"minigpt-0\" but this build reads \"minigpt-1\"; re-train or convert with miniquant") != std::string::npos);
  e = write_and_load([](TensorFile& f) { f.metadata.erase("format"); });
  CHECK(e.find("no \"format\" metadata") != std::string::npos);
  CHECK(e.find("re-train or convert with miniquant") != std::string::npos);
  e = write_and_load([](TensorFile& f) { f.tensors.erase(f.tensors.begin() + 6); });
  CHECK(e.find("tensor \"h.0.attn.c_proj.weight\" is missing") != std::string::npos);
  e = write_and_load([](TensorFile& f) { f.metadata["model_config"] = R"({"vocab_size":11,"n_ctx":32,"d_model":128,"n_layer":2,"n_head":2,"d_ff":512})"; });
  CHECK(e.find("tensor \"wpe\" has shape [16, 128] but the model config needs [32, 128]") != std::string::npos);
  e = write_and_load([](TensorFile& f) { f.metadata["model_config"] = R"({"vocab_size":11,"n_ctx":16,"d_model":100,"n_layer":2,"n_head":2,"d_ff":400})"; });
  CHECK(e.find("d_model = 100 is a Linear input width") != std::string::npos);
  e = write_and_load([](TensorFile& f) { f.metadata["model_config"] = "{oops"; });
  CHECK(e.find("model_config metadata: not valid JSON") != std::string::npos);
  e = write_and_load([](TensorFile& f) { f.tensors[0].dtype = DType::I32; });
  CHECK(e.find("tensor \"wte\" is I32 but a float checkpoint stores F32") != std::string::npos);
  e = write_and_load([](TensorFile&) {}, "fedcba9876543210");
  CHECK(e.find("vocabulary hash 0123456789abcdef differs from the expected fedcba9876543210") != std::string::npos);
  CHECK(write_and_load([](TensorFile&) {}, kMeta.vocab_hash).empty());
}
