// Grader of lab 03 (GGUF export): the learner's Q8_0 / Q4_0 conversion bit for bit against
// mq::gguf::from_qtensor (random matrices and every Linear of the shipped MiniGPT), a GGUF file of the
// learner's tensors written and read back by the library's writer and reader, and the learner's
// dequantizer against ggml's arithmetic and miniquant's own values.
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "lab03.h"
#include "labs/grade.h"
#include "labs/workbench.h"
#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"
#include "miniquant/random.h"

namespace mqlab {
namespace {

using mq::Scheme;

// "" when the learner's tensor is the library's, byte for byte.
std::string compare(const mq::gguf::Tensor& got, const mq::gguf::Tensor& want) {
  if (got.name != want.name) return fmt::format("name '{}' (library '{}')", got.name, want.name);
  if (got.ne != want.ne) return "shape ne differs from the library's {cols, rows}";
  if (got.type != want.type)
    return fmt::format("type {} (library {})", mq::gguf::tensor_type_name(got.type), mq::gguf::tensor_type_name(want.type));
  if (got.data.size() != want.data.size()) return fmt::format("{} data bytes (library {})", got.data.size(), want.data.size());
  for (size_t i = 0; i < want.data.size(); ++i)
    if (got.data[i] != want.data[i]) {
      const size_t block = mq::gguf::type_traits(static_cast<uint32_t>(want.type))->block_bytes;
      return fmt::format("byte {} (block {}, byte {} in it): 0x{:02x} (library 0x{:02x})", i, i / block, i % block,
                         got.data[i], want.data[i]);
    }
  return "";
}

void conversions(Checks& c, const std::vector<const char*>& schemes, const LabOptions& o, const char* model_scheme, bool file) {
  for (const char* name : schemes) {
    const Scheme s = Scheme::parse(name);
    std::string first;
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{5, 256}, {3, 128}, {1, 32}, {4, 384}}) {
      try {
        s.check_shape(rows, cols);
      } catch (const mq::UsageError&) {
        continue;
      }
      // Plain round-to-nearest; an all-zero first row (d = 0: Q4_0's nibbles are still 8, 0x88); the scale search's
      // grids (a code of -128 / field 0 appears, the longer end of a symmetric grid); weights 1e-4 as large (fp16
      // subnormal scales, stepped up so that no code reaches the grid's end: d is the stored scale, not max / 127).
      const char* variants[4] = {"", ", first row zero", ", searched grids", ", subnormal scales"};
      for (int v = 0; v < 4; ++v) {
        std::vector<float> w = mq::gaussian_matrix(rows, cols, 42 + cols, 0.05);
        if (v == 1) std::fill(w.begin(), w.begin() + cols, 0.0f);
        if (v == 3)
          for (float& x : w) x *= 1e-4f;
        mq::QuantizeOptions qo = mq::default_quantize_options(s);
        qo.search = v == 2;
        const mq::QTensor q = mq::quantize(w.data(), rows, cols, s, qo, "w");
        const std::string d = compare(lab::gguf::from_qtensor(q, "blk.0.w"), mq::gguf::from_qtensor(q, "blk.0.w"));
        if (!d.empty() && first.empty()) first = fmt::format("{}x{}{}: {}", rows, cols, variants[v], d);
      }
    }
    c.expect(first.empty(), fmt::format("{}: random matrices (zero rows, searched grids, subnormal scales among them)", name),
             "bytes equal to mq::gguf::from_qtensor",
             first.empty() ? "all equal" : first);
  }
  const Workbench wb = load_workbench(o);
  const minigpt::Model m = wb.fresh();
  const Scheme s = Scheme::parse(model_scheme);
  mq::gguf::File f;
  std::vector<mq::QTensor> qs;
  std::string first;
  int64_t bytes = 0, weights = 0;
  for (const minigpt::LinearInfo& li : m.linears()) {
    qs.push_back(mq::quantize(li.weight, li.out, li.in, s, li.name));
    mq::gguf::Tensor t = lab::gguf::from_qtensor(qs.back(), li.name + ".weight");
    const std::string d = compare(t, mq::gguf::from_qtensor(qs.back(), li.name + ".weight"));
    if (!d.empty() && first.empty()) first = li.name + ": " + d;
    bytes += static_cast<int64_t>(t.data.size());
    weights += static_cast<int64_t>(li.in) * li.out;
    f.tensors.push_back(std::move(t));
  }
  c.bar(first.empty(), fmt::format("the {} Linears of data/minigpt.safetensors in {}", f.tensors.size(), model_scheme),
        "bit-exact with the library's export", first.empty() ? fmt::format("all equal; {} bytes, {:.3f} bits per weight", bytes,
                                                                           8.0 * static_cast<double>(bytes) / static_cast<double>(weights))
                                                             : first);
  if (!file || !first.empty()) return;
  // Written and read back by the library: the reader must see exactly the values miniquant runs.
  f.set("general.architecture", mq::gguf::Value::string("gpt2"));
  const std::string bytes_of_file = mq::gguf::serialize(f);
  const mq::gguf::File back =
      mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes_of_file.data()), bytes_of_file.size()));
  std::string bad;
  for (size_t i = 0; i < qs.size() && bad.empty(); ++i) {
    const mq::gguf::Tensor* t = back.tensor(f.tensors[i].name);
    if (!t || t->data != f.tensors[i].data) {
      bad = f.tensors[i].name + ": not read back as written";
      break;
    }
    const std::vector<float> a = mq::gguf::dequantize(*t), b = mq::dequantize(qs[i]);
    if (a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0)
      bad = f.tensors[i].name + ": dequantized values differ from miniquant's";
  }
  c.bar(bad.empty(), fmt::format("a {}-byte GGUF of your tensors through mq::gguf::serialize and parse", bytes_of_file.size()),
        "every tensor read back byte for byte; ggml's dequantization equals miniquant's values exactly",
        bad.empty() ? "exact" : bad);
}

void block_c(Checks& c) {
  for (const char* name : {"int8-per-channel", "int8-g64", "int4-g32", "int4-per-channel", "int4-g128"}) {
    const Scheme s = Scheme::parse(name);
    const std::vector<float> w = mq::gaussian_matrix(6, 256, 9, 0.05);
    const mq::QTensor q = mq::quantize(w.data(), 6, 256, s, "w");
    const mq::gguf::Tensor t = mq::gguf::from_qtensor(q, "w");  // the library's blocks: independent of blocks A and B
    const std::vector<float> got = lab::gguf::dequantize(t), want = mq::gguf::dequantize(t), ours = mq::dequantize(q);
    std::string d;
    if (got.size() != want.size()) d = fmt::format("{} values (expected {})", got.size(), want.size());
    for (size_t i = 0; d.empty() && i < want.size(); ++i)
      if (got[i] != want[i] || got[i] != ours[i])
        d = fmt::format("element ({}, {}): {:g} (ggml {:g}, miniquant {:g})", i / 256, i % 256, got[i], want[i], ours[i]);
    c.expect(d.empty(), fmt::format("{} ({}) 6x256", name, mq::gguf::tensor_type_name(t.type)),
             "every value equal to mq::gguf::dequantize and to miniquant's", d.empty() ? "all equal" : d);
  }
}

Lab make(const LabOptions& o) {
  Lab lab{"03", "GGUF export", "labs/03-gguf-export/gguf_blocks.cpp", {}};
  lab.blocks = {
      {"A", "Q8_0 blocks from int8 storage",
       [o](Checks& c) { conversions(c, {"int8-per-channel", "int8-g32", "int8-g64", "int8-g128"}, o, "int8-per-channel", false); },
       {"MiniGPT int8-per-channel Linears bit-exact"}, {"mq::gguf::from_qtensor"}},
      {"B", "Q4_0 blocks from int4 storage (ggml's nibble order)",
       [o](Checks& c) { conversions(c, {"int4-per-channel", "int4-g32", "int4-g64", "int4-g128"}, o, "int4-g64", true); },
       {"MiniGPT int4-g64 Linears bit-exact", "GGUF round trip exact"}, {"mq::gguf::from_qtensor"}},
      {"C", "dequantize: what ggml computes from Q8_0 / Q4_0", block_c, {}, {"mq::gguf::dequantize"}},
  };
  return lab;
}

}  // namespace
}  // namespace mqlab

int main(int argc, char** argv) { return mqlab::run_lab(mqlab::make, argc, argv, MQ_LEARNER_OBJECT); }
