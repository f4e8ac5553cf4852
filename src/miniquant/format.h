// Scheme: how one weight matrix is stored (float width, or integer bits + grouping + zero-points),
// its exact storage bytes, and its name, parsed and printed both ways.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "miniquant/kquant/superblock.h"  // kSuperBlock

namespace mq {

// Storage families. `integer` covers every intN scheme; `kquant` the llama.cpp K-quant super-block
// families (q2_k .. q6_k: 256-weight blocks holding their own sub-block scales, ggml's byte layout, one row
// of the format table each); the others are plain float storage.
enum class Kind : uint8_t { fp32, fp16, bf16, integer, kquant };

// Granularity of integer scales, as the design's `group` field:
//   group == kPerTensor (-1): one scale for the whole matrix
//   group == kPerChannel (0): one scale per output row
//   group  > 0              : one scale per (row, block of `group` consecutive input columns)
inline constexpr int kPerTensor = -1;
inline constexpr int kPerChannel = 0;

struct Scheme {
  Kind kind = Kind::fp32;
  int bits = 32;          // 32, 16, or the code width of the scheme's family (its format-table row's `bits`)
  int group = kPerTensor; // see above; ignored for float kinds; kSuperBlock for K families
  bool symmetric = true;  // false: min/max grid with an integer zero-point per scale
  // The scheme's storage family: its row in the format table (format_table.h), which is its identity (traits_of,
  // the kernel registry); kind and bits are that row's, copied for the quantizers' arithmetic. Two families of one
  // kind and width are two rows, so the width never names a family.
  uint8_t family = 0;

  static Scheme fp32();
  static Scheme fp16();
  static Scheme bf16();
  // The scheme of the format table's integer family `name` ("int4", ...); throws UsageError naming the valid ones.
  static Scheme integer(std::string_view family, int group, bool symmetric = true);
  // The same for the integer family named "int<bits>" (the table's names for its plain integer grids).
  static Scheme integer(int bits, int group, bool symmetric = true);
  // The K family whose codes are `bits` wide (its row of the format table names it, e.g. bits 4: "q4_k").
  static Scheme kquant(int bits);

  bool is_integer() const { return kind == Kind::integer; }
  bool is_kquant() const { return kind == Kind::kquant; }
  // Largest code magnitude on the symmetric grid: 2^(bits-1) - 1 (127 for int8, 7 for int4).
  int qmax() const { return (1 << (bits - 1)) - 1; }
  // Largest stored field value: 2^bits - 1 (the asymmetric grid uses 0..levels()).
  int levels() const { return (1 << bits) - 1; }
  // Columns that share one scale for a matrix of width `cols`.
  int64_t group_width(int64_t cols) const;
  // Number of scales per row (per-tensor: 1 for the whole matrix, reported as 1 per row here
  // only through scale_count()).
  int64_t groups_per_row(int64_t cols) const;
  int64_t scale_count(int64_t rows, int64_t cols) const;

  // "fp32", "fp16", "bf16", "int8-per-tensor", "int8-per-channel", "int4-g64", "int4-g128-asym"...,
  // and the K families' names from the format table ("q2_k" .. "q6_k").
  std::string name() const;
  static Scheme parse(std::string_view name);  // throws UsageError listing valid names

  // Throws UsageError when this scheme cannot store a (rows x cols) matrix, naming the numbers.
  void check_shape(int64_t rows, int64_t cols) const;

  friend bool operator==(const Scheme&, const Scheme&) = default;
};

// The named schemes the tools loop over (quant-report, tests, the sweep's defaults come from here).
const std::vector<Scheme>& scheme_table();
// Human-readable summary of the accepted grammar plus the table's names, for error messages.
std::string valid_scheme_names();

// Exact storage of one quantized (rows x cols) matrix. Codes of one row are packed into whole
// bytes (rows start byte-aligned so kernels can address them directly); scales are fp16;
// zero-points are packed `bits`-wide fields, one per scale, the stream padded to a whole byte.
struct Storage {
  int64_t code_bytes = 0;
  int64_t scale_bytes = 0;
  int64_t zero_bytes = 0;
  int64_t total() const { return code_bytes + scale_bytes + zero_bytes; }
};
// K families: code_bytes are the code fields (bits / 8 per weight), scale_bytes the rest of each block (the
// sub-block scales and mins and the fp16 super-block factors), zero_bytes 0.
Storage storage_of(const Scheme& s, int64_t rows, int64_t cols);
// Bytes of one row in QTensor::codes: packed codes (integer), raw values (float), or the row's whole
// super-blocks, scales included (K families).
int64_t row_code_bytes(const Scheme& s, int64_t cols);
// What a QTensor of this scheme and shape holds: codes bytes, fp16 scale entries and zero-point bytes.
// Integer schemes keep scales and zero-points apart from the codes; K families keep everything in the
// codes buffer (their blocks), so their scales and zeros are empty.
struct Buffers {
  int64_t code_bytes = 0;
  int64_t scale_count = 0;
  int64_t zero_bytes = 0;
};
Buffers buffers_of(const Scheme& s, int64_t rows, int64_t cols);
double bits_per_weight(const Scheme& s, int64_t rows, int64_t cols);

}  // namespace mq
