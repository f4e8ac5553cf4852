// safetensors reader/writer: 8-byte little-endian header length, JSON header, raw data.
#include "minigpt/safetensors.h"


#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "miniquant/util/checked.h"
#include "miniquant/error.h"
#include "miniquant/util/integrity.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"

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
constexpr uint64_t kMaxHeader = kMaxSafetensorsHeader;
// JSON values of a header may take this many bytes per byte of it (json_checked.h: ours take ~10).
constexpr size_t kHeaderBytesPerByte = 16;
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
  throw mq::Error(fmt::format("unknown dtype \"{}\" (known: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)", mq::clip_text(s, 20)));
}

const NamedTensor* TensorFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void TensorFile::add_f32(const std::string& name, std::vector<int64_t> shape, const float* data) {
  const size_t n = static_cast<size_t>(mq::checked_product(shape, name));
  NamedTensor t{name, DType::F32, std::move(shape), std::vector<uint8_t>(n * 4)};
  if (n) std::memcpy(t.bytes.data(), data, n * 4);
  tensors.push_back(std::move(t));
}


namespace {

// The header text (padded to 8 bytes) of `f`, with the checksums of its tensors when `checksums`.
std::string header_text(const TensorFile& f, const std::string& path, bool checksums) {
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json sums = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : f.tensors) {
    const size_t n = static_cast<size_t>(mq::checked_product(t.shape, t.name));
    if (n * dtype_size(t.dtype) != t.bytes.size())
      throw mq::Error(fmt::format("checkpoint {}: tensor {} has {} bytes but its shape and dtype need {}", path, t.name,
                                  t.bytes.size(), n * dtype_size(t.dtype)));
    if (t.name == "__metadata__" || header.contains(t.name))
      throw mq::Error(fmt::format("checkpoint {}: duplicate or reserved tensor name {}", path, t.name));
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
    if (checksums) sums[t.name] = mq::sha256_hex(t.bytes.data(), t.bytes.size());
  }
  std::map<std::string, std::string> meta = f.metadata;
  meta.erase(kMetaChecksums);
  if (checksums) meta[kMetaChecksums] = sums.dump();
  if (!meta.empty()) header["__metadata__"] = meta;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned, as the spec suggests
  return h;
}

// The parts of the file: length, header, each tensor's bytes.
std::vector<std::string_view> file_parts(const TensorFile& f, const std::string& h, const uint64_t& hlen) {
  std::vector<std::string_view> parts{std::string_view(reinterpret_cast<const char*>(&hlen), 8), h};
  for (const auto& t : f.tensors) parts.emplace_back(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return parts;
}

}  // namespace

void write_safetensors(const std::string& path, const TensorFile& f) {
  const std::string h = header_text(f, path, true);
  const uint64_t hlen = h.size();
  try {
    mq::write_file_atomic(path, file_parts(f, h, hlen));
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("checkpoint {}: {}", path, e.what()));
  }
}

void note_if_unverified(const std::string& path, Checksums c) {
  if (c == Checksums::absent)
    mq::note_once(path, fmt::format("{} records no tensor checksums (written by another tool or an older miniquant): loaded "
                                    "unverified; saving it again with miniquant adds them",
                                    path));
}

std::string content_sha256(const std::string& path) {
  const TensorFile f = read_safetensors(path);
  const std::string h = header_text(f, path, false);
  const uint64_t hlen = h.size();
  return mq::sha256_hex(file_parts(f, h, hlen));
}

namespace {

struct Range {
  uint64_t begin, end;  // byte offsets in the data section
};

// Parses and checks the JSON header against a data section of `data_size` bytes; returns the
// tensors (bytes not yet read) and, in the same order, their byte ranges, in file order.
std::pair<TensorFile, std::vector<Range>> parse_header(const std::string& h, uint64_t data_size,
                                                       const std::string& path) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("checkpoint {}: {}", path, what)); };
  nlohmann::json header;
  try {
    header = mq::parse_json_checked(h, "header", mq::kMaxJsonDepth, kHeaderBytesPerByte * h.size() + (size_t{64} << 10));
  } catch (const mq::Error& e) {
    throw fail(fmt::format("{}; the file is corrupt, re-save it", e.what()));
  }
  if (!header.is_object()) throw fail("header is not a JSON object; the file is corrupt, re-save it");

  TensorFile out;
  std::vector<Range> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw fail("__metadata__ is not a JSON object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw fail(fmt::format("__metadata__ value \"{}\" is not a string", mq::clip_text(m.key())));
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) { return fail(fmt::format("tensor \"{}\": {}", mq::clip_text(name), what)); };
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
    for (const auto& s : v["shape"]) {
      if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<int64_t>() >= 0))
        throw bad(fmt::format("shape entry {} is not a non-negative integer", mq::json_summary(s)));
      if (s.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) throw bad("shape entry does not fit in 64 bits");
      t.shape.push_back(s.get<int64_t>());
    }
    // A corrupt shape must not wrap around and match the byte range by accident.
    int64_t bytes = 0;
    try {
      bytes = mq::checked_mul(mq::checked_product(t.shape, "shape"), static_cast<int64_t>(dtype_size(t.dtype)), "shape");
    } catch (const mq::Error& e) {
      throw bad(fmt::format("{}; the header is corrupt", e.what()));
    }
    const auto& o = v.contains("data_offsets") ? v["data_offsets"] : nlohmann::json();
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
      throw bad("data_offsets must be [begin, end] with non-negative integers");
    const uint64_t b = o[0].get<uint64_t>(), e = o[1].get<uint64_t>();
    if (b > e) throw bad(fmt::format("data_offsets [{}, {}] are out of order; the header is corrupt", b, e));
    if (static_cast<uint64_t>(bytes) != e - b)
      throw bad(fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}; the header is corrupt",
                            t.shape.size() <= 8 ? fmt::format("[{}]", fmt::join(t.shape, ",")) : fmt::format("of {} dims", t.shape.size()),
                            dtype_name(t.dtype), bytes, b, e, e - b));
    if (e > data_size)
      throw fail(fmt::format("data truncated: tensor \"{}\" ends at byte {} of the data section but the file holds "
                             "only {} data bytes; re-copy or re-save the file", mq::clip_text(name), e, data_size));
    ranges.push_back({b, e});
    out.tensors.push_back(std::move(t));
  }
  // File order (ties: empty tensors first), for a stable round trip and the overlap check.
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(ranges[a].begin, ranges[a].end) < std::pair(ranges[b].begin, ranges[b].end);
  });
  // Zero-length tensors occupy no bytes and overlap nothing; non-empty ones must be disjoint.
  const Range* prev = nullptr;
  size_t prev_i = 0;
  for (size_t i : order) {
    if (ranges[i].begin == ranges[i].end) continue;
    if (prev && ranges[i].begin < prev->end)
      throw fail(fmt::format("tensors \"{}\" and \"{}\" overlap in the data section; the header is corrupt",
                             mq::clip_text(out.tensors[prev_i].name), mq::clip_text(out.tensors[i].name)));
    prev = &ranges[i];
    prev_i = i;
  }
  TensorFile sorted;
  sorted.metadata = std::move(out.metadata);
  std::vector<Range> sorted_ranges;
  for (size_t i : order) {
    sorted.tensors.push_back(std::move(out.tensors[i]));
    sorted_ranges.push_back(ranges[i]);
  }
  return {std::move(sorted), std::move(sorted_ranges)};
}

// Reads the 8-byte header length and checks it against the file size.
uint64_t header_length(const char* first8, uint64_t size, const std::string& path) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("checkpoint {}: {}", path, what)); };
  if (size < 8)
    throw fail(fmt::format("file is {} bytes, shorter than the 8-byte header length: it is truncated or not a "
                           "safetensors file; re-copy or re-save it", size));
  uint64_t hlen = 0;
  std::memcpy(&hlen, first8, 8);
  if (hlen > size - 8 || hlen > kMaxHeader)
    throw fail(fmt::format("header length {} is larger than the file ({} bytes) or than {} MiB: the file is "
                           "truncated or not a safetensors file; re-copy or re-save it", hlen, size, kMaxHeader >> 20));
  return hlen;
}

// Checks the recorded checksums (when there are any) against the tensors read, in file order, and
// removes them from the metadata the caller sees.
void check_checksums(TensorFile& f, const std::string& path) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("checkpoint {}: {}", path, what)); };
  const auto it = f.metadata.find(kMetaChecksums);
  if (it == f.metadata.end()) {
    f.checksums = Checksums::absent;
    return;
  }
  const nlohmann::json sums = mq::parse_json_checked(it->second, fmt::format("checkpoint {}: {} metadata", path, kMetaChecksums));
  if (!sums.is_object()) throw fail(fmt::format("{} metadata is not a JSON object; the file is corrupt", kMetaChecksums));
  for (auto s = sums.begin(); s != sums.end(); ++s) {
    if (!s.value().is_string() || !mq::is_sha256_hex(s.value().get_ref<const std::string&>()))
      throw fail(fmt::format("{} of \"{}\" is not 64 hex digits; the file is corrupt", kMetaChecksums, mq::clip_text(s.key())));
    if (!f.find(s.key()))
      throw fail(fmt::format("{} names tensor \"{}\", which the file does not hold; the file is corrupt", kMetaChecksums,
                             mq::clip_text(s.key())));
  }
  for (const NamedTensor& t : f.tensors)
    if (!sums.contains(t.name))
      throw fail(fmt::format("tensor \"{}\" has no {} entry while the others do; the file is corrupt", mq::clip_text(t.name),
                             kMetaChecksums));
  f.metadata.erase(it);
  if (!mq::verify_checksums()) {
    f.checksums = Checksums::not_checked;
    return;
  }
  for (const NamedTensor& t : f.tensors) {
    const std::string& want = sums[t.name].get_ref<const std::string&>();
    const std::string got = mq::sha256_hex(t.bytes.data(), t.bytes.size());
    if (got != want) throw fail(mq::checksum_mismatch(t.name, want, got));
  }
  f.checksums = Checksums::verified;
}

}  // namespace

TensorFile read_safetensors(const std::string& path) {
  auto fail = [&](const std::string& what) { return mq::Error(fmt::format("checkpoint {}: {}", path, what)); };
  try {
    mq::check_input_file(path);  // a FIFO or device must not block the open below
  } catch (const mq::Error& e) {
    throw fail(e.what());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail(fmt::format("cannot open the file: {}", mq::errno_reason(errno)));
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  char first8[8] = {};
  in.read(first8, std::min<uint64_t>(8, size));
  const uint64_t hlen = header_length(first8, size, path);
  std::string h(hlen, '\0');
  in.read(h.data(), static_cast<std::streamsize>(hlen));
  if (!in) throw fail("read of the header failed");
  auto [out, ranges] = parse_header(h, size - 8 - hlen, path);
  for (size_t i = 0; i < out.tensors.size(); ++i) {
    NamedTensor& t = out.tensors[i];
    t.bytes.resize(ranges[i].end - ranges[i].begin);  // within the file's size: checked above
    if (t.bytes.empty()) continue;
    in.seekg(static_cast<std::streamoff>(8 + hlen + ranges[i].begin));
    in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (!in) throw fail(fmt::format("read of tensor \"{}\" failed", t.name));
  }
  check_checksums(out, path);
  return out;
}

TensorFile read_safetensors_buffer(std::string_view bytes, const std::string& name) {
  const uint64_t hlen = header_length(bytes.data(), bytes.size(), name);
  const std::string h(bytes.substr(8, hlen));
  auto [out, ranges] = parse_header(h, bytes.size() - 8 - hlen, name);
  const char* data = bytes.data() + 8 + hlen;
  for (size_t i = 0; i < out.tensors.size(); ++i)
    out.tensors[i].bytes.assign(data + ranges[i].begin, data + ranges[i].end);
  check_checksums(out, name);
  return out;
}

}  // namespace minigpt
