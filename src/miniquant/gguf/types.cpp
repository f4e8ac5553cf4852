// GGUF value and tensor-type helpers.
#include "miniquant/gguf/types.h"

#include <cctype>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kquant/family.h"

namespace mq::gguf {

int value_size(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return 0;
}

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::u8: return "u8";
    case ValueType::i8: return "i8";
    case ValueType::u16: return "u16";
    case ValueType::i16: return "i16";
    case ValueType::u32: return "u32";
    case ValueType::i32: return "i32";
    case ValueType::f32: return "f32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "u64";
    case ValueType::i64: return "i64";
    case ValueType::f64: return "f64";
  }
  return "?";
}

namespace {

// The K families of the format table as GGUF types: name "Q4_K" for family "q4_k", 256-weight blocks.
struct KTypes {
  std::vector<std::string> names;
  std::vector<std::pair<uint32_t, TypeTraits>> traits;
  KTypes() {
    for (const FormatTraits& f : format_table())
      if (f.kquant) {
        std::string n(f.family);
        for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        names.push_back(n);
      }
    size_t i = 0;
    for (const FormatTraits& f : format_table())
      if (f.kquant) traits.push_back({f.kquant->ggml_type, {names[i++].c_str(), mq::kSuperBlock, f.kquant->block_bytes}});
  }
};
const KTypes& ktypes() {
  static const KTypes k;
  return k;
}

}  // namespace

const TypeTraits* type_traits(uint32_t type) {
  static const TypeTraits f32{"F32", 1, 4}, f16{"F16", 1, 2}, bf16{"BF16", 1, 2}, q4_0{"Q4_0", kQK, sizeof(BlockQ4_0)},
      q4_1{"Q4_1", kQK, sizeof(BlockQ4_1)}, q8_0{"Q8_0", kQK, sizeof(BlockQ8_0)};
  switch (static_cast<TensorType>(type)) {
    case TensorType::F32: return &f32;
    case TensorType::F16: return &f16;
    case TensorType::BF16: return &bf16;
    case TensorType::Q4_0: return &q4_0;
    case TensorType::Q4_1: return &q4_1;
    case TensorType::Q8_0: return &q8_0;
    default: break;
  }
  for (const auto& [t, tr] : ktypes().traits)
    if (t == type) return &tr;
  return nullptr;
}

std::string known_tensor_types() {
  std::string s = "F32 F16 BF16 Q8_0 Q4_0 Q4_1";
  for (const std::string& n : ktypes().names) s += " " + n;
  return s;
}

const char* tensor_type_name(TensorType t) {
  const TypeTraits* tr = type_traits(static_cast<uint32_t>(t));
  return tr ? tr->name : "?";
}

int64_t tensor_bytes(TensorType t, int64_t ne0, int64_t rows) {
  const TypeTraits* tr = type_traits(static_cast<uint32_t>(t));
  if (!tr || ne0 % tr->block != 0) throw mq::Error(fmt::format("gguf: {} elements per row do not fill {} blocks", ne0, tensor_type_name(t)));
  // Checked: an empty tensor may have a huge ne0 (rows 0), and in-memory tensors are anyone's.
  int64_t blocks = 0, bytes = 0;
  if (ne0 < 0 || rows < 0 || __builtin_mul_overflow(ne0 / tr->block, rows, &blocks) ||
      __builtin_mul_overflow(blocks, tr->block_bytes, &bytes))
    throw mq::Error(fmt::format("gguf: a {} tensor of {} x {} elements overflows 64 bits", tensor_type_name(t), ne0, rows));
  return bytes;
}

namespace {
template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <class T>
Value numbers(ValueType elem, const std::vector<T>& v) {
  Value x;
  x.type = ValueType::array;
  x.elem = elem;
  x.count = v.size();
  x.raw.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(x.raw.data(), v.data(), x.raw.size());
  return x;
}
[[noreturn]] void wrong(const Value& v, const char* want) {
  throw mq::Error(fmt::format("gguf: metadata value is {}{}{}, expected {}", value_type_name(v.type),
                              v.type == ValueType::array ? " of " : "",
                              v.type == ValueType::array ? value_type_name(v.elem) : "", want));
}
}  // namespace

Value Value::u32(uint32_t v) { return Value{ValueType::u32, ValueType::u8, v, {}, {}, {}, 0}; }
Value Value::i32(int32_t v) { return Value{ValueType::i32, ValueType::u8, bits_of(v), {}, {}, {}, 0}; }
Value Value::u64(uint64_t v) { return Value{ValueType::u64, ValueType::u8, v, {}, {}, {}, 0}; }
Value Value::f32(float v) { return Value{ValueType::f32, ValueType::u8, bits_of(v), {}, {}, {}, 0}; }
Value Value::boolean(bool v) { return Value{ValueType::boolean, ValueType::u8, v ? 1u : 0u, {}, {}, {}, 0}; }
Value Value::string(std::string v) { return Value{ValueType::string, ValueType::u8, 0, std::move(v), {}, {}, 0}; }
Value Value::strings(std::vector<std::string> v) {
  Value x;
  x.type = ValueType::array;
  x.elem = ValueType::string;
  x.count = v.size();
  x.strs = std::move(v);
  return x;
}
Value Value::i32s(const std::vector<int32_t>& v) { return numbers(ValueType::i32, v); }
Value Value::f32s(const std::vector<float>& v) { return numbers(ValueType::f32, v); }

uint64_t Value::as_uint() const {
  switch (type) {
    case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64: return bits;
    case ValueType::i8: if (static_cast<int8_t>(bits) >= 0) return bits; break;
    case ValueType::i16: if (static_cast<int16_t>(bits) >= 0) return bits; break;
    case ValueType::i32: if (static_cast<int32_t>(bits) >= 0) return bits; break;
    case ValueType::i64: if (static_cast<int64_t>(bits) >= 0) return bits; break;
    default: break;
  }
  wrong(*this, "a non-negative integer");
}
float Value::as_f32() const {
  if (type != ValueType::f32) wrong(*this, "f32");
  float f;
  const uint32_t b = static_cast<uint32_t>(bits);
  std::memcpy(&f, &b, 4);
  return f;
}
bool Value::as_bool() const {
  if (type != ValueType::boolean) wrong(*this, "bool");
  return bits != 0;
}
const std::string& Value::as_string() const {
  if (type != ValueType::string) wrong(*this, "string");
  return str;
}
std::vector<int32_t> Value::as_i32s() const {
  if (type != ValueType::array || elem != ValueType::i32) wrong(*this, "array of i32");
  std::vector<int32_t> out(count);
  if (count) std::memcpy(out.data(), raw.data(), count * 4);
  return out;
}
std::vector<float> Value::as_f32s() const {
  if (type != ValueType::array || elem != ValueType::f32) wrong(*this, "array of f32");
  std::vector<float> out(count);
  if (count) std::memcpy(out.data(), raw.data(), count * 4);
  return out;
}

int64_t Tensor::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];
  return r;
}

const Value* File::find(std::string_view key) const {
  for (const auto& [k, v] : kv)
    if (k == key) return &v;
  return nullptr;
}
const Value& File::at(std::string_view key) const {
  const Value* v = find(key);
  if (!v) throw mq::Error(fmt::format("gguf: no metadata key \"{}\"", key));
  return *v;
}
const Tensor* File::tensor(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}
void File::set(std::string key, Value v) {
  for (auto& [k, old] : kv)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv.emplace_back(std::move(key), std::move(v));
}
uint32_t File::alignment() const {
  const Value* v = find(kAlignmentKey);
  if (!v) return kDefaultAlignment;
  if (v->type != ValueType::u32) wrong(*v, "u32 (general.alignment)");
  const uint64_t a = v->bits;
  if (a == 0 || (a & (a - 1)) != 0) throw mq::Error(fmt::format("gguf: general.alignment {} is not a power of two", a));
  if (a > kMaxAlignment) throw mq::Error(fmt::format("gguf: general.alignment {} is above the limit {}", a, kMaxAlignment));
  return static_cast<uint32_t>(a);
}

}  // namespace mq::gguf
