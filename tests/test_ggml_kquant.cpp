// Our K-quant blocks against ggml itself (the libggml-base.so node-llama-cpp ships, loaded by dlopen through
// experiments/ggml_quant.h, its ABI checked at load): ggml's blocks decode to the same floats in our
// dequantizer as in ggml's, bit for bit; our blocks decode in ggml to what they decode to here; and unpacking
// any ggml block with our layout code and packing it again gives ggml's bytes back, so every field sits where
// ggml reads it. Skipped with one line when the npm package is not installed (scripts/setup_node.sh).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "experiments/ggml_quant.h"
#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kquant.h"
#include "miniquant/random.h"

using namespace mq;

namespace {

std::optional<mqexp::GgmlQuant> ggml() {
  std::string why;
  static const std::optional<mqexp::GgmlQuant> g = mqexp::GgmlQuant::load(mqexp::default_ggml_library(), why);
  static const bool said = [&] {
    if (!g) MESSAGE("SKIPPING the comparison with ggml: " << why);
    return true;
  }();
  (void)said;
  return g;
}

// Rows of varied shape: Gaussian, heavy-tailed, with an outlier, all positive, all zero, tiny.
std::vector<float> test_rows(int64_t rows, int64_t cols) {
  std::vector<float> w = gaussian_matrix(rows, cols, 17);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float& v = w[static_cast<size_t>(r * cols + c)];
      switch (r % 6) {
        case 1: v = v * v * v; break;
        case 2: v = c == 77 ? 4.0f : 0.1f * v; break;
        case 3: v = std::fabs(v) + 0.25f; break;
        case 4: v = r == 4 && c < 256 ? 0.0f : v; break;
        case 5: v *= 1e-5f; break;
        default: break;
      }
    }
  return w;
}

bool same_bits(const std::vector<float>& a, const float* b, size_t n) {
  return a.size() == n && std::memcmp(a.data(), b, n * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("ggml's K blocks: our dequantizer gives ggml's floats, and our layout code repacks them to ggml's bytes") {
  const auto g = ggml();
  if (!g) return;
  const int64_t rows = 12, cols = 1024;
  const std::vector<float> w = test_rows(rows, cols);
  std::vector<float> imatrix(static_cast<size_t>(cols));
  Rng rng(2);
  for (auto& v : imatrix) v = static_cast<float>(std::exp(rng.normal()));
  for (const FormatTraits& ft : format_table()) {
    if (!ft.kquant) continue;
    const KFamily& f = *ft.kquant;
    const Scheme s = Scheme::kquant(f.bits);
    for (const float* imp : {static_cast<const float*>(nullptr), static_cast<const float*>(imatrix.data())}) {
      CAPTURE(f.name);
      CAPTURE(imp != nullptr);
      const std::vector<uint8_t> blocks = g->quantize(s, w.data(), rows, cols, imp);
      const std::vector<float> theirs = g->dequantize(s, blocks.data(), rows * cols);
      QTensor q;
      q.scheme = s;
      q.rows = rows;
      q.cols = cols;
      q.codes.assign(blocks.begin(), blocks.end());
      std::vector<float> ours(static_cast<size_t>(rows * cols));
      dequantize(q, ours.data());
      CHECK(same_bits(theirs, ours.data(), ours.size()));
      for (size_t b = 0; b < blocks.size() / static_cast<size_t>(f.block_bytes); ++b) {
        const uint8_t* blk = blocks.data() + b * static_cast<size_t>(f.block_bytes);
        KParams p;
        uint8_t codes[kSuperBlock];
        f.unpack(blk, p, codes);
        std::vector<uint8_t> again(static_cast<size_t>(f.block_bytes));
        f.pack(p, codes, again.data());
        CAPTURE(b);
        REQUIRE(std::memcmp(again.data(), blk, again.size()) == 0);
      }
    }
  }
}

TEST_CASE("our K blocks decode in ggml to exactly what they decode to here") {
  const auto g = ggml();
  if (!g) return;
  const int64_t rows = 12, cols = 512;
  const std::vector<float> w = test_rows(rows, cols);
  for (const Scheme& s : scheme_table()) {
    if (!s.is_kquant()) continue;
    for (const bool search : {false, true}) {
      CAPTURE(s.name());
      CAPTURE(search);
      const QTensor q = quantize(w.data(), rows, cols, s, {.search = search});
      const std::vector<float> ours = dequantize(q);
      CHECK(same_bits(g->dequantize(s, q.codes.data(), rows * cols), ours.data(), ours.size()));
    }
  }
}

TEST_CASE("a ggml library whose layout differs from ours is refused with one line") {
  std::string why;
  CHECK_FALSE(mqexp::GgmlQuant::load("/nonexistent/libggml-base.so", why).has_value());
  CHECK(why.find("is absent") != std::string::npos);
  // A library that is not ggml at all: libm has none of the symbols.
  if (std::filesystem::exists("/lib/x86_64-linux-gnu/libm.so.6"))
    CHECK_THROWS_WITH_AS(mqexp::GgmlQuant::load("/lib/x86_64-linux-gnu/libm.so.6", why),
                         "ggml quantizer: /lib/x86_64-linux-gnu/libm.so.6 has no symbol ggml_quantize_chunk", Error);
}
