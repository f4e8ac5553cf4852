// dlopen of ggml's quantizer (ggml_quant.h): declarations from ggml.h's facts, the ABI check, the calls.
#include "experiments/ggml_quant.h"

#include <dlfcn.h>

#include <filesystem>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kquant/family.h"

namespace mqexp {

// Named, not anonymous: GgmlQuant::Api holds these types, and in the unity build (CMakeLists.txt) this file is
// an included one, where gcc warns about a member whose type has internal linkage.
namespace ggml_abi {

// ggml.h: struct ggml_type_traits, as the pinned release lays it out (checked below through its fields).
struct TypeTraits {
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  void (*to_float)(const void* x, float* y, int64_t k);
  void (*from_float_ref)(const float* x, void* y, int64_t k);
};

using QuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row,
                                 const float* imatrix);
using TypeSize = size_t (*)(int type);
using BlckSize = int64_t (*)(int type);
using GetTypeTraits = const TypeTraits* (*)(int type);

}  // namespace ggml_abi

namespace {

const mq::KFamily& family(const mq::Scheme& s) {
  const mq::KFamily* f = s.is_kquant() ? mq::traits_of(s).kquant : nullptr;
  if (!f) throw mq::UsageError(fmt::format("ggml quantizer: {} is not a K family", s.name()));
  return *f;
}

}  // namespace

struct GgmlQuant::Api {
  void* handle = nullptr;
  ggml_abi::QuantizeChunk quantize_chunk = nullptr;
  ggml_abi::GetTypeTraits traits = nullptr;
  ~Api() {
    if (handle) dlclose(handle);
  }
};

std::string default_ggml_library() {
  return MQ_SOURCE_DIR "/tools/llama/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";
}

std::optional<GgmlQuant> GgmlQuant::load(const std::string& path, std::string& why) {
  if (!std::filesystem::exists(path)) {
    why = fmt::format("{} is absent (scripts/setup_node.sh installs node-llama-cpp, which ships it)", path);
    return std::nullopt;
  }
  auto api = std::make_shared<Api>();
  api->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) throw mq::Error(fmt::format("ggml quantizer: cannot load {}: {}", path, dlerror()));
  auto sym = [&](const char* name) {
    void* p = dlsym(api->handle, name);
    if (!p) throw mq::Error(fmt::format("ggml quantizer: {} has no symbol {}", path, name));
    return p;
  };
  api->quantize_chunk = reinterpret_cast<ggml_abi::QuantizeChunk>(sym("ggml_quantize_chunk"));
  api->traits = reinterpret_cast<ggml_abi::GetTypeTraits>(sym("ggml_get_type_traits"));
  const auto type_size = reinterpret_cast<ggml_abi::TypeSize>(sym("ggml_type_size"));
  const auto blck_size = reinterpret_cast<ggml_abi::BlckSize>(sym("ggml_blck_size"));
  for (const mq::FormatTraits& ft : mq::format_table()) {
    if (!ft.kquant) continue;
    const mq::KFamily& f = *ft.kquant;
    const int t = static_cast<int>(f.ggml_type);
    const ggml_abi::TypeTraits* tr = api->traits(t);
    std::string expect_name(f.name);
    expect_name.back() = 'K';  // ggml names them "q4_K"
    if (type_size(t) != static_cast<size_t>(f.block_bytes) || blck_size(t) != mq::kSuperBlock || !tr ||
        tr->blck_size != mq::kSuperBlock || tr->type_size != static_cast<size_t>(f.block_bytes) || !tr->type_name ||
        tr->type_name != expect_name || !tr->to_float)
      throw mq::Error(fmt::format("ggml quantizer: {} disagrees with our {} layout (ggml type {}: {} bytes per {} weights, "
                                  "ours {} per {}); refusing to use it",
                                  path, f.name, t, type_size(t), blck_size(t), f.block_bytes, mq::kSuperBlock));
  }
  GgmlQuant g;
  g.api_ = std::move(api);
  g.path_ = path;
  return g;
}

std::vector<uint8_t> GgmlQuant::quantize(const mq::Scheme& s, const float* w, int64_t rows, int64_t cols,
                                         const float* imatrix) const {
  const mq::KFamily& f = family(s);
  if (cols % mq::kSuperBlock != 0) throw mq::UsageError(fmt::format("ggml quantizer: {} columns are not whole {} blocks", cols, f.name));
  std::vector<uint8_t> out(static_cast<size_t>(rows * (cols / mq::kSuperBlock) * f.block_bytes));
  const size_t n = api_->quantize_chunk(static_cast<int>(f.ggml_type), w, out.data(), 0, rows, cols, imatrix);
  if (n != out.size()) throw mq::Error(fmt::format("ggml quantizer: {} bytes written, {} expected", n, out.size()));
  return out;
}

std::vector<float> GgmlQuant::dequantize(const mq::Scheme& s, const uint8_t* blocks, int64_t n) const {
  const mq::KFamily& f = family(s);
  std::vector<float> y(static_cast<size_t>(n));
  api_->traits(static_cast<int>(f.ggml_type))->to_float(blocks, y.data(), n);
  return y;
}

}  // namespace mqexp
