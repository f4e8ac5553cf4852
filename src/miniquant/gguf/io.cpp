// GGUF v3 serialisation and a bounds-checked parser.
#include "miniquant/gguf/io.h"

#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/integrity.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"

namespace mq::gguf {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};

uint64_t pad_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// ---- writer ---------------------------------------------------------------------------------------

struct Out {
  std::string b;
  template <class T>
  void put(T v) {
    char tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));  // the writer runs on little-endian hosts only (x86-64, arm64)
    b.append(tmp, sizeof(T));
  }
  void str(std::string_view s) {
    put<uint64_t>(s.size());
    b.append(s);
  }
};

void put_value(Out& o, const Value& v) {
  o.put<uint32_t>(static_cast<uint32_t>(v.type));
  switch (v.type) {
    case ValueType::string: o.str(v.str); return;
    case ValueType::array:
      if (v.elem == ValueType::array) throw mq::UsageError("gguf: nested arrays are not supported");
      o.put<uint32_t>(static_cast<uint32_t>(v.elem));
      o.put<uint64_t>(v.count);
      if (v.elem == ValueType::string) {
        if (v.strs.size() != v.count) throw mq::UsageError("gguf: string array count does not match its strings");
        for (const auto& s : v.strs) o.str(s);
      } else {
        if (v.raw.size() != v.count * static_cast<uint64_t>(value_size(v.elem)))
          throw mq::UsageError("gguf: numeric array bytes do not match its count");
        o.b.append(reinterpret_cast<const char*>(v.raw.data()), v.raw.size());
      }
      return;
    default: {
      const int n = value_size(v.type);
      char tmp[8];
      std::memcpy(tmp, &v.bits, 8);
      o.b.append(tmp, static_cast<size_t>(n));
    }
  }
}

// ---- reader ---------------------------------------------------------------------------------------

class In {
 public:
  explicit In(std::span<const uint8_t> b) : b_(b) {}
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw mq::Error(fmt::format("gguf: {} (at byte {} of {})", what, pos_, b_.size()));
  }
  void need(uint64_t n, const char* what) const {
    if (n > left()) fail(fmt::format("{} needs {} bytes, only {} left: file truncated or corrupt", what, n, left()));
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const uint64_t n = get<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void bytes(uint64_t n, std::vector<uint8_t>& out, const char* what) {
    need(n, what);
    out.assign(b_.data() + pos_, b_.data() + pos_ + n);
    pos_ += n;
  }
  void seek(uint64_t p, const char* what) {
    if (p > b_.size()) fail(fmt::format("{} at byte {} lies past the end", what, p));
    pos_ = p;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::f64); }

Value get_value(In& in, uint32_t type, const std::string& key) {
  if (!known_value_type(type)) in.fail(fmt::format("key \"{}\" has unknown value type {}", key, type));
  Value v;
  v.type = static_cast<ValueType>(type);
  if (v.type == ValueType::string) {
    v.str = in.str("string value");
    return v;
  }
  if (v.type != ValueType::array) {
    const int n = value_size(v.type);
    in.need(static_cast<uint64_t>(n), "scalar value");
    uint64_t bits = 0;
    for (int i = 0; i < n; ++i) bits |= static_cast<uint64_t>(in.get<uint8_t>("scalar value")) << (8 * i);
    v.bits = bits;
    if (v.type == ValueType::boolean && bits > 1) in.fail(fmt::format("key \"{}\": bool value {} is neither 0 nor 1", key, bits));
    return v;
  }
  const uint32_t elem = in.get<uint32_t>("array element type");
  if (!known_value_type(elem) || elem == static_cast<uint32_t>(ValueType::array))
    in.fail(fmt::format("key \"{}\": array element type {} is not supported", key, elem));
  v.elem = static_cast<ValueType>(elem);
  v.count = in.get<uint64_t>("array length");
  if (v.elem == ValueType::string) {
    // Each string takes at least its 8-byte length: bound the count before reserving.
    if (v.count > in.left() / 8) in.fail(fmt::format("key \"{}\": {} strings cannot fit in the {} bytes left", key, v.count, in.left()));
    v.strs.reserve(v.count);
    for (uint64_t i = 0; i < v.count; ++i) v.strs.push_back(in.str("array string"));
  } else {
    const uint64_t sz = static_cast<uint64_t>(value_size(v.elem));
    if (v.count > in.left() / sz)
      in.fail(fmt::format("key \"{}\": {} values of {} bytes cannot fit in the {} bytes left", key, v.count, sz, in.left()));
    in.bytes(v.count * sz, v.raw, "array values");
  }
  return v;
}

}  // namespace

std::string serialize(const File& f) {
  const uint64_t align = f.alignment();
  Out o;
  o.b.append(kMagic, 4);
  o.put<uint32_t>(kVersion);
  o.put<uint64_t>(f.tensors.size());
  o.put<uint64_t>(f.kv.size());
  std::set<std::string_view> keys;
  for (const auto& [k, v] : f.kv) {
    if (!keys.insert(k).second) throw mq::UsageError(fmt::format("gguf: duplicate metadata key \"{}\"", k));
    o.str(k);
    put_value(o, v);
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const Tensor& t : f.tensors) {
    if (!names.insert(t.name).second) throw mq::UsageError(fmt::format("gguf: duplicate tensor name \"{}\"", t.name));
    if (t.name.size() > kMaxNameBytes)
      throw mq::UsageError(fmt::format("gguf: tensor name \"{}\" is longer than {} bytes", t.name, kMaxNameBytes));
    if (t.ne.empty() || t.ne.size() > static_cast<size_t>(kMaxDims))
      throw mq::UsageError(fmt::format("gguf: tensor \"{}\" has {} dimensions (1 to {})", t.name, t.ne.size(), kMaxDims));
    for (int64_t n : t.ne)
      if (n < 0) throw mq::UsageError(fmt::format("gguf: tensor \"{}\" has a negative dimension", t.name));
    const int64_t want = tensor_bytes(t.type, t.ne[0], t.rows());
    if (static_cast<int64_t>(t.data.size()) != want)
      throw mq::UsageError(fmt::format("gguf: tensor \"{}\" ({}) holds {} bytes, its shape needs {}", t.name,
                                       tensor_type_name(t.type), t.data.size(), want));
    o.str(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) o.put<uint64_t>(static_cast<uint64_t>(n));
    o.put<uint32_t>(static_cast<uint32_t>(t.type));
    o.put<uint64_t>(offset);
    offset += pad_to(t.data.size(), align);
  }
  o.b.resize(pad_to(o.b.size(), align), '\0');
  for (const Tensor& t : f.tensors) {
    o.b.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    o.b.resize(pad_to(o.b.size(), align), '\0');  // the data section starts aligned, so this aligns offsets
  }
  return o.b;
}

void write(const std::string& path, const File& f) { write_file_atomic(path, serialize(f)); }

void add_tensor_checksums(File& f) {
  for (const Tensor& t : f.tensors) f.set(kChecksumPrefix + t.name, Value::string(sha256_hex(t.data.data(), t.data.size())));
}

namespace {

// The checksum keys of a parsed file against its tensors: every key names a tensor and holds 64 hex
// digits; when any tensor has one, every tensor must; the data must hash to it.
void check_checksums(const File& f, In& in) {
  const size_t prefix = std::string_view(kChecksumPrefix).size();
  size_t keys = 0;
  for (const auto& [key, v] : f.kv) {
    if (key.compare(0, prefix, kChecksumPrefix) != 0) continue;
    ++keys;
    const std::string name = key.substr(prefix);
    if (v.type != ValueType::string || !is_sha256_hex(v.as_string()))
      in.fail(fmt::format("checksum key \"{}\" is not a string of 64 hex digits", clip_text(key)));
    if (!f.tensor(name)) in.fail(fmt::format("checksum key \"{}\" names no tensor of the file", clip_text(key)));
  }
  if (keys == 0) return;
  if (keys != f.tensors.size())
    in.fail(fmt::format("{} of {} tensors carry a checksum: the file was altered after it was written", keys, f.tensors.size()));
  if (!verify_checksums()) return;
  for (const Tensor& t : f.tensors) {
    const std::string& want = f.at(kChecksumPrefix + t.name).as_string();
    const std::string got = sha256_hex(t.data.data(), t.data.size());
    if (got != want) in.fail(checksum_mismatch(t.name, want, got));
  }
}

}  // namespace

File parse(std::span<const uint8_t> bytes) {
  In in(bytes);
  in.need(4, "magic");
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) in.fail("not a GGUF file (magic is not \"GGUF\")");
  in.seek(4, "version");
  const uint32_t version = in.get<uint32_t>("version");
  if (version != kVersion) in.fail(fmt::format("GGUF version {} is not supported (only {})", version, kVersion));
  const uint64_t n_tensors = in.get<uint64_t>("tensor count");
  const uint64_t n_kv = in.get<uint64_t>("metadata count");
  // A key-value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least
  // 8 + 4 + 8 + 4 + 8. Counts beyond what the buffer can hold are corrupt, whatever they claim.
  if (n_kv > in.left() / 13) in.fail(fmt::format("metadata count {} cannot fit in {} bytes", n_kv, in.left()));
  File f;
  f.kv.reserve(n_kv);
  std::set<std::string> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = in.str("metadata key");
    if (!keys.insert(key).second) in.fail(fmt::format("duplicate metadata key \"{}\"", key));
    const uint32_t type = in.get<uint32_t>("value type");
    Value v = get_value(in, type, key);
    f.kv.emplace_back(std::move(key), std::move(v));
  }
  uint64_t align = 0;
  try {
    align = f.alignment();
  } catch (const mq::Error& e) {
    in.fail(e.what());
  }
  if (n_tensors > in.left() / 32) in.fail(fmt::format("tensor count {} cannot fit in {} bytes", n_tensors, in.left()));
  struct Info {
    uint64_t offset, size;
  };
  std::vector<Info> infos;
  infos.reserve(n_tensors);
  f.tensors.reserve(n_tensors);
  std::set<std::string> names;
  uint64_t expected = 0;  // offsets must follow one another, each tensor padded (as llama.cpp requires)
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Tensor t;
    t.name = in.str("tensor name");
    if (t.name.size() > kMaxNameBytes) in.fail(fmt::format("tensor name of {} bytes exceeds {}", t.name.size(), kMaxNameBytes));
    if (!names.insert(t.name).second) in.fail(fmt::format("duplicate tensor name \"{}\"", t.name));
    const uint32_t n_dims = in.get<uint32_t>("dimension count");
    if (n_dims < 1 || n_dims > static_cast<uint32_t>(kMaxDims))
      in.fail(fmt::format("tensor \"{}\" has {} dimensions (1 to {})", t.name, n_dims, kMaxDims));
    // Every dimension and the product of the non-zero ones fit int64 (Tensor::ne, rows()); the element
    // count is bounded by the buffer (no real tensor has more elements than the file has bits). Not
    // each dimension by the buffer: an empty tensor ({0, 1, 1131}) holds no data, and its legality
    // must not depend on how many bytes happen to follow (the writer's output is shorter than a
    // padded input, and the reader must read back what the writer wrote).
    constexpr uint64_t kMaxDim = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t nonzero = 1;
    bool empty = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = in.get<uint64_t>("dimension");
      if (n > kMaxDim || (n && nonzero > kMaxDim / n))
        in.fail(fmt::format("tensor \"{}\" dimension {} = {} makes its shape overflow 64 bits", t.name, d, n));
      if (n) nonzero *= n;
      empty = empty || n == 0;
      t.ne.push_back(static_cast<int64_t>(n));
    }
    const uint64_t elements = empty ? 0 : nonzero;
    if (elements > bytes.size() * 8ULL + 64)
      in.fail(fmt::format("tensor \"{}\" has {} elements, more than the file can hold", t.name, elements));
    const uint32_t type = in.get<uint32_t>("tensor type");
    const TypeTraits* tr = type_traits(type);
    if (!tr) in.fail(fmt::format("tensor \"{}\" has ggml type {}, not one of {}", t.name, type, known_tensor_types()));
    t.type = static_cast<TensorType>(type);
    if (t.ne[0] % tr->block != 0)
      in.fail(fmt::format("tensor \"{}\": {} elements per row are not a multiple of the {} block ({})", t.name, t.ne[0], tr->name,
                          tr->block));
    const uint64_t size = elements / tr->block * tr->block_bytes;
    const uint64_t offset = in.get<uint64_t>("tensor offset");
    if (offset != expected)
      in.fail(fmt::format("tensor \"{}\" has data offset {}, expected {} (tensors follow one another, each padded to {})",
                          t.name, offset, expected, align));
    expected += pad_to(size, align);
    infos.push_back({offset, size});
    f.tensors.push_back(std::move(t));
  }
  const uint64_t data_start = pad_to(in.pos(), align);
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const uint64_t at = data_start + infos[i].offset;
    if (at > bytes.size() || infos[i].size > bytes.size() - at)
      in.fail(fmt::format("tensor \"{}\" data [{}, {}) lies past the end of the file", f.tensors[i].name, at, at + infos[i].size));
    in.seek(at, "tensor data");
    in.bytes(infos[i].size, f.tensors[i].data, "tensor data");
  }
  check_checksums(f, in);
  return f;
}

File read(const std::string& path) {
  const std::string b = read_file(path);
  try {
    return parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace mq::gguf
