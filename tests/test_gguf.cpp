// GGUF: exact block conversion (our dequantized weights == ggml's dequantization of the exported
// blocks, bit for bit; Q4_1 inside its stated bound), ggml's nibble order, writer/reader round trip,
// alignment, and a reader that turns every truncation / corruption into an mq::Error.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"
#include "miniquant/half.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"
#include "temp_dir.h"

using namespace mq;
using namespace mq::gguf;

namespace {

// Gaussian rows whose magnitudes differ by up to 100x, with a positive offset on odd rows so the
// asymmetric grids get non-trivial zero-points.
std::vector<float> weights(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> w = gaussian_matrix(rows, cols, seed);
  Rng rng(seed + 1);
  for (int64_t r = 0; r < rows; ++r) {
    const float mag = static_cast<float>(std::pow(10.0, 2.0 * rng.uniform() - 1.0));
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] = w[r * cols + c] * mag + (r % 2 ? 0.7f * mag : 0.0f);
  }
  return w;
}

File parse_string(const std::string& s) {
  return parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

File sample_file(uint32_t alignment = 0) {
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
  const std::vector<float> w = weights(3, 64, 7);
  f.tensors.push_back(from_floats(w.data(), 3, 64, TensorType::F32, "w.f32"));
  f.tensors.push_back(from_floats(w.data(), 1, 5, TensorType::F16, "v.f16", true));  // 10 bytes: padding follows
  f.tensors.push_back(from_qtensor(quantize(w.data(), 3, 64, Scheme::integer(4, 32)), "w.q4_0"));
  f.tensors.push_back(from_qtensor(quantize(w.data(), 3, 64, Scheme::integer(8, kPerChannel)), "w.q8_0"));
  return f;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

TEST_CASE("Q4_0 uses ggml's nibble order: byte j holds element j (low) and element j+16 (high)") {
  // One row of 32 weights whose codes are known: w_c = c mod 15 - 7 with absmax 7, so s = 1.
  std::vector<float> w(32);
  for (int c = 0; c < 32; ++c) w[c] = static_cast<float>(c % 15 - 7);
  const QTensor q = quantize(w.data(), 1, 32, Scheme::integer(4, 32));
  const Tensor t = from_qtensor(q, "w");
  REQUIRE(t.data.size() == sizeof(BlockQ4_0));
  BlockQ4_0 blk;
  std::memcpy(&blk, t.data.data(), sizeof blk);
  CHECK(f16_to_f32(blk.d) == 1.0f);
  for (int j = 0; j < 16; ++j) {
    CHECK((blk.qs[j] & 15) == (j % 15 - 7) + 8);
    CHECK((blk.qs[j] >> 4) == ((j + 16) % 15 - 7) + 8);
  }
  CHECK(same_bits(dequantize(t), w));
}

TEST_CASE("exact schemes dequantize bit for bit to miniquant's dequantized weights") {
  const int64_t rows = 12, cols = 256;
  const std::vector<float> w = weights(rows, cols, 42);
  const std::vector<std::pair<std::string, TensorType>> cases = {
      {"fp32", TensorType::F32},          {"fp16", TensorType::F16},         {"bf16", TensorType::BF16},
      {"int8-per-channel", TensorType::Q8_0}, {"int8-g32", TensorType::Q8_0}, {"int8-g64", TensorType::Q8_0},
      {"int8-g128", TensorType::Q8_0},    {"int4-per-channel", TensorType::Q4_0}, {"int4-g32", TensorType::Q4_0},
      {"int4-g64", TensorType::Q4_0},     {"int4-g128", TensorType::Q4_0},
      // The K families: their blocks are ggml's, written as they are (a writer / reader round trip below).
      {"q2_k", TensorType::Q2_K},         {"q3_k", TensorType::Q3_K},        {"q4_k", TensorType::Q4_K},
      {"q5_k", TensorType::Q5_K},         {"q6_k", TensorType::Q6_K}};
  for (const auto& [name, type] : cases) {
    const std::string sname = name;
    CAPTURE(sname);
    const QTensor q = quantize(w.data(), rows, cols, Scheme::parse(name));
    const Tensor t = from_qtensor(q, "w");
    CHECK(t.type == type);
    CHECK(t.ne == std::vector<int64_t>{cols, rows});
    CHECK(static_cast<int64_t>(t.data.size()) == tensor_bytes(type, cols, rows));
    CHECK(same_bits(dequantize(t), mq::dequantize(q)));
    if (q.scheme.is_kquant()) {
      File f;
      f.tensors.push_back(t);
      const File g = parse_string(serialize(f));
      CHECK(g.tensors.at(0).type == type);
      CHECK(g.tensors.at(0).data == t.data);
      // fmt, not "Q" + to_string(..) + "_K": on that, gcc 12 -O3 prints a false-positive -Wrestrict warning.
      CHECK(std::string(tensor_type_name(type)) == fmt::format("Q{}_K", q.scheme.bits));
    }
  }
}

TEST_CASE("Q4_1 from asymmetric int4: every weight within the bound of m's fp16 rounding, exact where m is") {
  const int64_t rows = 16, cols = 256;
  const std::vector<float> w = weights(rows, cols, 5);
  for (const char* name : {"int4-g32-asym", "int4-g64-asym", "int4-g128-asym", "int4-per-channel-asym"}) {
    const std::string sname = name;
    CAPTURE(sname);
    const QTensor q = quantize(w.data(), rows, cols, Scheme::parse(name));
    const Tensor t = from_qtensor(q, "w");
    REQUIRE(t.type == TensorType::Q4_1);
    const std::vector<float> ours = mq::dequantize(q), theirs = dequantize(t);
    double worst = 0;  // largest |diff| / bound
    int64_t exact_blocks = 0, inexact_blocks = 0, nonzero_z = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < cols / 32; ++b) {
        const float s = q.scale_at(r, b * 32);
        const int z = q.zero_at(r, b * 32);
        nonzero_z += z != 0;
        const bool m_exact = f16_to_f32(f32_to_f16(-s * z)) == -s * z;
        (m_exact ? exact_blocks : inexact_blocks)++;
        for (int64_t c = b * 32; c < b * 32 + 32; ++c) {
          const size_t i = static_cast<size_t>(r * cols + c);
          const double diff = std::fabs(static_cast<double>(ours[i]) - theirs[i]);
          const double bound = q4_1_error_bound(s, z, theirs[i]);
          worst = std::max(worst, diff / bound);
          if (m_exact) CHECK(ours[i] == theirs[i]);  // d u + (-s z) is then one exact-input float add
        }
      }
    MESSAGE(sname, ": worst |diff| / bound = ", fmt::format("{:.9f}", worst), ", blocks with exact m: ", exact_blocks, ", inexact: ", inexact_blocks);
    CHECK(worst <= 1.0);
    CHECK(nonzero_z > 0);        // the data exercise the zero-point
    CHECK(inexact_blocks > 0);   // and the rounding the bound is about
  }
}

TEST_CASE("schemes without a GGUF export fail with a UsageError naming the exportable ones") {
  const std::vector<float> w = weights(4, 128, 1);
  for (const char* name : {"int3-g64", "int3-g128", "int2-g64", "int2-g64-asym", "int8-per-tensor", "int4-per-tensor",
                           "int8-per-channel-asym"}) {
    const std::string sname = name;
    CAPTURE(sname);
    const QTensor q = quantize(w.data(), 4, 128, Scheme::parse(name));
    CHECK_THROWS_AS(from_qtensor(q, "w"), mq::UsageError);
    try {
      type_for(q.scheme);
    } catch (const mq::UsageError& e) {
      const std::string msg = e.what();
      CHECK(msg.find(name) != std::string::npos);
      CHECK(msg.find("int8-per-channel") != std::string::npos);
      CHECK(msg.find("Q8_0") != std::string::npos);
    }
  }
  // A block type needs whole 32-blocks in a row.
  const std::vector<float> narrow = weights(2, 48, 1);
  CHECK_THROWS_AS(from_qtensor(quantize(narrow.data(), 2, 48, Scheme::integer(8, kPerChannel)), "w"), mq::UsageError);
  const float big = 1e6f;
  CHECK_THROWS_AS(from_floats(&big, 1, 1, TensorType::F16, "x", true), mq::Error);
}

TEST_CASE("writer and reader round-trip every value type and tensor type; data is aligned") {
  for (uint32_t align : {0u, 64u}) {
    CAPTURE(align);
    const File f = sample_file(align);
    const std::string bytes = serialize(f);
    CHECK(bytes.substr(0, 4) == "GGUF");
    uint32_t version;
    std::memcpy(&version, bytes.data() + 4, 4);
    CHECK(version == 3);
    const uint32_t a = align ? align : 32;
    CHECK(bytes.size() % a == 0);
    const File g = parse_string(bytes);
    REQUIRE(g.kv.size() == f.kv.size());
    for (size_t i = 0; i < f.kv.size(); ++i) {
      CHECK(g.kv[i].first == f.kv[i].first);
      CHECK(g.kv[i].second == f.kv[i].second);
    }
    REQUIRE(g.tensors.size() == f.tensors.size());
    for (size_t i = 0; i < f.tensors.size(); ++i) {
      CHECK(g.tensors[i].name == f.tensors[i].name);
      CHECK(g.tensors[i].ne == f.tensors[i].ne);
      CHECK(g.tensors[i].type == f.tensors[i].type);
      CHECK(g.tensors[i].data == f.tensors[i].data);
      // Where the data sits: the bytes at an aligned position equal the tensor's bytes.
      const std::string& d = bytes;
      const size_t at = d.find(std::string(reinterpret_cast<const char*>(f.tensors[i].data.data()), f.tensors[i].data.size()));
      REQUIRE(at != std::string::npos);
      CHECK(at % a == 0);
    }
    CHECK(g.at("a.f32").as_f32() == 1e-5f);
    CHECK(g.at("a.i32s").as_i32s() == std::vector<int32_t>{3, -1, 7});
    CHECK(g.at("a.u64").as_uint() == (1ULL << 40));
    CHECK_THROWS_AS(g.at("a.bool").as_f32(), mq::Error);
    CHECK_THROWS_AS(g.at("missing"), mq::Error);
    CHECK(g.alignment() == a);
  }
}

TEST_CASE("writer rejects what GGUF cannot hold") {
  File f = sample_file();
  f.tensors.push_back(f.tensors[0]);
  CHECK_THROWS_AS(serialize(f), mq::UsageError);  // duplicate name
  f = sample_file();
  f.tensors[0].data.pop_back();
  CHECK_THROWS_AS(serialize(f), mq::UsageError);  // size does not match shape
  f = sample_file();
  f.tensors[0].name = std::string(64, 'x');
  CHECK_THROWS_AS(serialize(f), mq::UsageError);
  f = sample_file();
  f.set(kAlignmentKey, Value::u32(48));
  CHECK_THROWS_AS(serialize(f), mq::Error);
  f = sample_file();
  f.kv.push_back(f.kv[0]);
  CHECK_THROWS_AS(serialize(f), mq::UsageError);  // duplicate key
}

TEST_CASE("reader: every truncation and header corruption is an mq::Error") {
  const std::string good = serialize(sample_file());
  // Truncated anywhere before the last tensor's data ends: never parses, never crashes.
  const File full = parse_string(good);
  const std::vector<uint8_t>& last = full.tensors.back().data;
  const size_t data_end = good.rfind(std::string(reinterpret_cast<const char*>(last.data()), last.size())) + last.size();
  REQUIRE(data_end <= good.size());
  for (size_t n = 0; n < data_end; ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(parse_string(good.substr(0, n)), mq::Error);
  }
  auto patched = [&](size_t at, const void* v, size_t n) {
    std::string b = good;
    std::memcpy(b.data() + at, v, n);
    return b;
  };
  const uint64_t huge = ~0ULL;
  const uint32_t v2 = 2;
  CHECK_THROWS_WITH_AS(parse_string(patched(0, "GGUX", 4)), doctest::Contains("magic"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_string(patched(4, &v2, 4)), doctest::Contains("version 2"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_string(patched(8, &huge, 8)), doctest::Contains("tensor count"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_string(patched(16, &huge, 8)), doctest::Contains("metadata count"), mq::Error);
  CHECK_THROWS_AS(parse_string(patched(24, &huge, 8)), mq::Error);  // first key's length
  // Corrupt every 8-byte window of the header and infos in turn with a huge value: an error or a
  // different-but-valid file, never a crash or a huge allocation (the ASan run checks the "never").
  const size_t infos_end = good.find(std::string(reinterpret_cast<const char*>(full.tensors[0].data.data()), 16));
  int errors = 0;
  for (size_t at = 0; at + 8 <= infos_end; ++at) {
    try {
      parse_string(patched(at, &huge, 8));
    } catch (const mq::Error&) {
      ++errors;
    }
  }
  CHECK(errors > static_cast<int>(infos_end) / 2);
  // Random byte flips (seeded) anywhere in the file.
  Rng rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string b = good;
    for (int k = 0; k < 3; ++k) b[static_cast<size_t>(rng.uniform() * static_cast<double>(b.size()))] ^= static_cast<char>(static_cast<unsigned char>(1 + rng.uniform() * 254));
    try {
      parse_string(b);
    } catch (const mq::Error&) {
    }
  }
}

TEST_CASE("reader: semantic checks (types, offsets, shapes, alignment, duplicates)") {
  File f = sample_file();
  const std::string good = serialize(f);
  // Locate a tensor info by its name and patch its fields.
  auto info_at = [&](const std::string& name) { return good.find(name) + name.size(); };
  auto patched = [&](size_t at, const void* v, size_t n) {
    std::string b = good;
    std::memcpy(b.data() + at, v, n);
    return b;
  };
  const size_t q4 = info_at("w.q4_0");  // then u32 n_dims, u64 ne0, u64 ne1, u32 type, u64 offset
  const uint32_t bad_type = 6, dims5 = 5;
  const uint64_t ne0_bad = 48, off_bad = 8;
  CHECK_THROWS_WITH_AS(parse_string(patched(q4, &dims5, 4)), doctest::Contains("dimensions"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_string(patched(q4 + 4, &ne0_bad, 8)), doctest::Contains("multiple"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_string(patched(q4 + 20, &bad_type, 4)), doctest::Contains("ggml type 6"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_string(patched(q4 + 28, &off_bad, 8)), doctest::Contains("offset"), mq::Error);

  File g = sample_file(64);
  std::string b = serialize(g);
  const uint32_t not_pow2 = 96;
  const size_t a = b.find(kAlignmentKey) + std::strlen(kAlignmentKey) + 4;  // past the value type
  std::memcpy(b.data() + a, &not_pow2, 4);
  CHECK_THROWS_WITH_AS(parse_string(b), doctest::Contains("power of two"), mq::Error);

  b = serialize(sample_file());
  b.replace(b.find("a.f32s"), 6, "a.i32s");  // same length: now a duplicate key
  CHECK_THROWS_WITH_AS(parse_string(b), doctest::Contains("duplicate metadata key"), mq::Error);
  b = serialize(sample_file());
  b.replace(b.find("v.f16"), 5, "w.f32");  // duplicate tensor name
  CHECK_THROWS_WITH_AS(parse_string(b), doctest::Contains("duplicate tensor"), mq::Error);
}

TEST_CASE("write is atomic: an unwritable path throws and leaves nothing") {
  const std::string dir = mqtest::temp_path("mq_test", "mq_gguf_test");
  std::filesystem::create_directories(dir);
  const std::string ok = dir + "/ok.gguf";
  write(ok, sample_file());
  CHECK(read(ok).tensors.size() == 4);
  const std::string bad = dir + "/no/such/dir/x.gguf";
  CHECK_THROWS_AS(write(bad, sample_file()), mq::Error);
  CHECK_FALSE(std::filesystem::exists(bad));
  CHECK_THROWS_AS(read(dir + "/missing.gguf"), mq::Error);
  std::filesystem::remove_all(dir);
}
