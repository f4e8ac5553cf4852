// GGUF v3 vocabulary: metadata value types, the ggml tensor types miniquant exports, their block
// layouts, and the in-memory form of a GGUF file (metadata + tensors) that the writer serialises
// and the reader produces.
//
// File layout (all little-endian), as the GGUF spec (ggml docs/gguf.md) defines it:
//   "GGUF" u32 version=3  u64 n_tensors  u64 n_kv
//   n_kv    x { string key, u32 value_type, value }        value of ARRAY: u32 elem_type, u64 n, n values
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   zero padding to `general.alignment` (u32, default 32, a power of two)
//   data section: tensor i at `offset` (relative to the section start), each one padded to the alignment.
// string = u64 byte length + bytes (no terminator). ne[0] is the fastest-varying dimension: a
// row-major (rows, cols) matrix is ne = {cols, rows}.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mq::gguf {

inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kDefaultAlignment = 32;
// Largest general.alignment accepted. GGUF allows any power of two, but 2^31 makes the writer pad
// an empty file to 2 GB (found by the long fuzz_gguf run); real files use 32 (some 64 or 4096).
inline constexpr uint32_t kMaxAlignment = 1u << 20;
inline constexpr const char* kAlignmentKey = "general.alignment";
inline constexpr int kMaxDims = 4;           // GGML_MAX_DIMS
inline constexpr size_t kMaxNameBytes = 63;  // GGML_MAX_NAME (64) minus the terminator

enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
// Bytes of one scalar of type t (0 for string and array).
int value_size(ValueType t);
const char* value_type_name(ValueType t);

// The ggml tensor types this project reads and writes (ggml.h numbering). The K-quant types (Q2_K = 10 ..
// Q6_K = 14) are the format table's K families (kquant/family.h: ggml_type), whose blocks a QTensor holds as
// ggml's bytes; type_traits() knows them from the table.
enum class TensorType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q8_0 = 8, Q2_K = 10, Q3_K = 11, Q4_K = 12,
                                   Q5_K = 13, Q6_K = 14, BF16 = 30 };

// ggml's block layouts. Every quantized block covers 32 consecutive elements of one row.
inline constexpr int kQK = 32;
// Q8_0: element j = d * qs[j].
struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t qs[kQK];
};
// Q4_0: element j (j < 16) = d * ((qs[j] & 15) - 8); element j + 16 = d * ((qs[j] >> 4) - 8).
// Note the split halves: not miniquant's packing (element 2j low, 2j+1 high; see pack.h).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
// Q4_1: element j = d * nibble + m, nibbles ordered as Q4_0's.
struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum (the value of nibble 0)
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ8_0) == 34, "ggml block_q8_0 is 34 bytes");
static_assert(sizeof(BlockQ4_0) == 18, "ggml block_q4_0 is 18 bytes");
static_assert(sizeof(BlockQ4_1) == 20, "ggml block_q4_1 is 20 bytes");

struct TypeTraits {
  const char* name;
  int64_t block;        // elements per block (1 for float types)
  int64_t block_bytes;  // bytes per block
};
// nullptr when `type` is not one of TensorType's values.
const TypeTraits* type_traits(uint32_t type);
// The names of every type type_traits() knows, for messages ("F32 F16 ... Q6_K").
std::string known_tensor_types();
const char* tensor_type_name(TensorType t);
// Bytes of a tensor with `ne0` elements per row and `rows` rows (ne0 must be a block multiple).
int64_t tensor_bytes(TensorType t, int64_t ne0, int64_t rows);

// One metadata value: a scalar, a string, or an array of one scalar type / of strings.
// Numeric values keep their declared type; arrays of numbers keep their raw little-endian bytes.
struct Value {
  ValueType type = ValueType::u32;
  ValueType elem = ValueType::u8;  // arrays only
  uint64_t bits = 0;               // scalar: the value's little-endian bytes, zero-extended
  std::string str;                 // string
  std::vector<std::string> strs;   // array of strings
  std::vector<uint8_t> raw;        // array of numbers: count * value_size(elem) bytes
  uint64_t count = 0;              // arrays: element count

  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value u64(uint64_t v);
  static Value f32(float v);
  static Value boolean(bool v);
  static Value string(std::string v);
  static Value strings(std::vector<std::string> v);
  static Value i32s(const std::vector<int32_t>& v);
  static Value f32s(const std::vector<float>& v);

  // Typed reads; throw mq::Error naming the actual type when it is not the asked one.
  uint64_t as_uint() const;  // u8/u16/u32/u64 (and non-negative i*)
  float as_f32() const;
  bool as_bool() const;
  const std::string& as_string() const;
  std::vector<int32_t> as_i32s() const;
  std::vector<float> as_f32s() const;
  friend bool operator==(const Value&, const Value&) = default;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] = elements per row (the input width of a weight matrix)
  TensorType type = TensorType::F32;
  std::vector<uint8_t> data;  // tensor_bytes(type, ne[0], rows) bytes
  int64_t rows() const;       // product of ne[1..]
  int64_t elements() const { return ne.empty() ? 0 : ne[0] * rows(); }
};

struct File {
  std::vector<std::pair<std::string, Value>> kv;  // in file order, keys unique
  std::vector<Tensor> tensors;                    // in file order, names unique

  const Value* find(std::string_view key) const;
  const Value& at(std::string_view key) const;  // mq::Error naming the key when absent
  const Tensor* tensor(std::string_view name) const;
  void set(std::string key, Value v);  // replaces an existing key in place
  uint32_t alignment() const;          // general.alignment, or 32
};

}  // namespace mq::gguf
