// safetensors reader/writer: 8-byte little-endian header length, JSON header, raw data.
#include "minigpt/safetensors.h"


#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/util/io.h"

namespace minigpt {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; add byte swapping");

namespace {
constexpr struct {
  DType t;
  const char* name;
  size_t size;
} kDTypes[] = {{DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
               {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1},
               {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1}};
// A header larger than this is corrupt, not a real checkpoint; refuse before allocating it.
constexpr uint64_t kMaxHeader = 100u << 20;
}  // namespace

size_t dtype_size(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.size;
  throw mq::Error("dtype_size: invalid DType value");
}

const char* dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.name;
  throw mq::Error("dtype_name: invalid DType value");
}

DType parse_dtype(const std::string& s) {
  for (const auto& d : kDTypes)
    if (s == d.name) return d.t;
  throw mq::Error(fmt::format("unknown dtype \"{}\" (known: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)", s));
}

const NamedTensor* TensorFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void TensorFile::add_f32(const std::string& name, std::vector<int64_t> shape, const float* data) {
  size_t n = 1;
  for (auto s : shape) n *= static_cast<size_t>(s);
  NamedTensor t{name, DType::F32, std::move(shape), std::vector<uint8_t>(n * 4)};
  std::memcpy(t.bytes.data(), data, n * 4);
  tensors.push_back(std::move(t));
}


void write_safetensors(const std::string& path, const TensorFile& f) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : f.tensors) {
    size_t n = 1;
    for (auto s : t.shape) n *= static_cast<size_t>(s);
    if (n * dtype_size(t.dtype) != t.bytes.size())
      throw mq::Error(fmt::format("checkpoint {}: tensor {} has {} bytes but its shape and dtype need {}", path, t.name,
                                  t.bytes.size(), n * dtype_size(t.dtype)));
    if (t.name == "__metadata__" || header.contains(t.name))
      throw mq::Error(fmt::format("checkpoint {}: duplicate or reserved tensor name {}", path, t.name));
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!f.metadata.empty()) header["__metadata__"] = f.metadata;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned, as the spec suggests
  const uint64_t hlen = h.size();

  std::vector<std::string_view> parts{
      std::string_view(reinterpret_cast<const char*>(&hlen), 8), h};
  for (const auto& t : f.tensors) parts.emplace_back(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  try {
    mq::write_file_atomic(path, parts);
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("checkpoint {}: {}", path, e.what()));
  }
}

TensorFile read_safetensors(const std::string& path) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("checkpoint {}: {}", path, what)); };
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail("cannot open the file (does it exist? check the path)");
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8)
    throw fail(fmt::format("file is {} bytes, shorter than the 8-byte header length: it is truncated or not a "
                           "safetensors file; re-copy or re-save it", size));
  uint64_t hlen = 0;
  in.read(reinterpret_cast<char*>(&hlen), 8);
  if (hlen > size - 8 || hlen > kMaxHeader)
    throw fail(fmt::format("header length {} is larger than the file ({} bytes): the file is truncated or not a "
                           "safetensors file; re-copy or re-save it", hlen, size));
  std::string h(hlen, '\0');
  in.read(h.data(), static_cast<std::streamsize>(hlen));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h);
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("header is not valid JSON ({}); the file is corrupt, re-save it", e.what()));
  }
  if (!header.is_object()) throw fail("header is not a JSON object; the file is corrupt, re-save it");

  TensorFile out;
  const uint64_t data_size = size - 8 - hlen;
  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw fail("__metadata__ is not a JSON object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) throw fail(fmt::format("__metadata__ value \"{}\" is not a string", m.key()));
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) { return fail(fmt::format("tensor \"{}\": {}", name, what)); };
    if (!v.is_object()) throw bad("header entry is not a JSON object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad("missing dtype");
    NamedTensor t;
    t.name = name;
    try {
      t.dtype = parse_dtype(v["dtype"].get<std::string>());
    } catch (const mq::Error& e) {
      throw bad(e.what());
    }
    if (!v.contains("shape") || !v["shape"].is_array()) throw bad("missing shape");
    uint64_t count = 1;
    for (const auto& s : v["shape"]) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0) throw bad(fmt::format("shape entry {} is not a non-negative integer", s.dump()));
      t.shape.push_back(s.get<int64_t>());
      // A corrupt shape must not wrap around and match the byte range by accident.
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(s.get<int64_t>()), &count) || count > (1ull << 60))
        throw bad(fmt::format("shape {} is absurdly large; the header is corrupt", v["shape"].dump()));
    }
    const auto& o = v.contains("data_offsets") ? v["data_offsets"] : nlohmann::json();
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
      throw bad("data_offsets must be [begin, end] with non-negative integers");
    const uint64_t b = o[0].get<uint64_t>(), e = o[1].get<uint64_t>();
    if (b > e) throw bad(fmt::format("data_offsets [{}, {}] are out of order; the header is corrupt", b, e));
    if (count * dtype_size(t.dtype) != e - b)
      throw bad(fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}; the header is corrupt",
                            v["shape"].dump(), dtype_name(t.dtype), count * dtype_size(t.dtype), b, e, e - b));
    ranges.push_back({b, e, name});
    out.tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end)
      throw fail(fmt::format("tensors \"{}\" and \"{}\" overlap in the data section; the header is corrupt",
                             ranges[i - 1].name, ranges[i].name));
  for (const auto& r : ranges)
    if (r.end > data_size)
      throw fail(fmt::format("data truncated: tensor \"{}\" ends at byte {} of the data section but the file holds "
                             "only {} data bytes; re-copy or re-save the file", r.name, r.end, data_size));
  // Tensors in file order for a stable round trip.
  std::sort(out.tensors.begin(), out.tensors.end(), [&](const NamedTensor& a, const NamedTensor& b) {
    auto pos = [&](const std::string& n) {
      return std::find_if(ranges.begin(), ranges.end(), [&](const Range& r) { return r.name == n; })->begin;
    };
    return pos(a.name) < pos(b.name);
  });
  for (auto& t : out.tensors) {
    const auto& r = *std::find_if(ranges.begin(), ranges.end(), [&](const Range& x) { return x.name == t.name; });
    t.bytes.resize(r.end - r.begin);
    in.seekg(static_cast<std::streamoff>(8 + hlen + r.begin));
    in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (!in) throw fail(fmt::format("read of tensor \"{}\" failed", t.name));
  }
  return out;
}

}  // namespace minigpt
