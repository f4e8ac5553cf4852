// The pairs the benchmark compares: a ggml type against the miniquant scheme and activation mode that stores
// the same bits per weight. One row per pair, so the K types (q2_k..q6_k against our K schemes) join as rows.
// The ggml facts in a row (name, block, bytes, the activation type its CPU dot product quantizes to) are
// checked against the loaded library before anything runs (abi_check.h); they also feed the correctness bound.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggml.h"
#include "miniquant/kernels/kernels.h"

namespace vsggml {

// How ggml quantizes the fp32 activations inside GGML_OP_MUL_MAT for a weight type (its vec_dot_type): blocks
// of `block` values, codes round(x * codes_max / absmax), one scale per block. verify.h reproduces it with the
// type's own reference quantizer.
struct ActQuant {
  std::string_view name;  // "q8_0", "q8_K"
  ggml_type type;
  int64_t block = 0;
  int codes_max = 127;
};
inline constexpr ActQuant kQ8_0{"q8_0", GGML_TYPE_Q8_0, 32, 127};
// The K types' activation type (q2_k..q6_k rows): 256 values per block, round(-127 x / max) with max the signed
// value of largest magnitude (quantize_row_q8_K_ref, which the x86 CPU backend runs as it is).
inline constexpr ActQuant kQ8_K{"q8_K", GGML_TYPE_Q8_K, 256, 127};

struct Pair {
  std::string_view ggml_name;  // ggml_type_name's answer
  ggml_type type;
  int64_t block_elems = 0;  // ggml_blck_size
  size_t block_bytes = 0;   // ggml_type_size
  ActQuant act;             // the activation type its dot product quantizes to (ggml-cpu type_traits vec_dot_type)
  std::string_view scheme;  // ours: a scheme of mq::scheme_table()
  mq::ActMode mode;         // weight-only or +a8 (dynamic_int8)
  // Our side runs a lookup-table kernel (bench-only) on the scheme's 16-row blocks instead of QuantizedLinear: fp32
  // tables (int2, bench/lut_kernel.h) or 16-bit ones (int2: bench/lut_kernel16.h; int3: lut3_kernel16.h's bit planes;
  // q2_k / q3_k: lut_q2k_kernel16.h / lut_q3k_kernel16.h, their own blocks repacked into 16-row chunks).
  enum class Table { none, fp32, int16 } table = Table::none;
  std::string ours() const;   // our side's name, as --pairs takes it: "int4-g64+a8", "int2-g64-table", "int3-g64-table16", "q2_k-table16"
  std::string label() const;  // "q4_0 / int4-g64+a8"
};

// q4_0: 32 weights, an fp16 scale and 16 bytes of nibbles (4.5 bits per weight), against int4-g64 (4.25);
// q8_0: 32 weights, an fp16 scale and 32 bytes (8.5 bits), against int8-per-channel (8 bits + one scale a row);
// q2_K .. q6_K against our q2_k .. q6_k: the same blocks, byte for byte; q2_K / q3_K against int2-g64 / int3-g64 +a8.
inline const std::vector<Pair>& pair_table() {
  static const std::vector<Pair> t = {
      {"q4_0", GGML_TYPE_Q4_0, 32, 18, kQ8_0, "int4-g64", mq::ActMode::weight_only},
      {"q4_0", GGML_TYPE_Q4_0, 32, 18, kQ8_0, "int4-g64", mq::ActMode::dynamic_int8},
      {"q8_0", GGML_TYPE_Q8_0, 32, 34, kQ8_0, "int8-per-channel", mq::ActMode::weight_only},
      {"q8_0", GGML_TYPE_Q8_0, 32, 34, kQ8_0, "int8-per-channel", mq::ActMode::dynamic_int8},
      // The K types: the same super-block layouts on both sides (256 weights); ggml's dot products quantize the
      // activations to q8_K, so its kernel is the same in both rows: +a8 is the like-for-like pair (int8
      // activations on both sides), weight-only what fp32 activations cost.
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "q2_k", mq::ActMode::weight_only},
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "q2_k", mq::ActMode::dynamic_int8},
      {"q3_K", GGML_TYPE_Q3_K, 256, 110, kQ8_K, "q3_k", mq::ActMode::weight_only},
      {"q3_K", GGML_TYPE_Q3_K, 256, 110, kQ8_K, "q3_k", mq::ActMode::dynamic_int8},
      {"q4_K", GGML_TYPE_Q4_K, 256, 144, kQ8_K, "q4_k", mq::ActMode::weight_only},
      {"q4_K", GGML_TYPE_Q4_K, 256, 144, kQ8_K, "q4_k", mq::ActMode::dynamic_int8},
      {"q5_K", GGML_TYPE_Q5_K, 256, 176, kQ8_K, "q5_k", mq::ActMode::weight_only},
      {"q5_K", GGML_TYPE_Q5_K, 256, 176, kQ8_K, "q5_k", mq::ActMode::dynamic_int8},
      {"q6_K", GGML_TYPE_Q6_K, 256, 210, kQ8_K, "q6_k", mq::ActMode::weight_only},
      {"q6_K", GGML_TYPE_Q6_K, 256, 210, kQ8_K, "q6_k", mq::ActMode::dynamic_int8},
      // ggml's 2- and 3-bit k-quants against our int2 / int3 (2.25 and 3.25 bits per weight against q2_K's 2.625
      // and q3_K's 3.4375): what 2- and 3-bit weights cost each side per call, not the same bits (ggml has no
      // plain 2- or 3-bit type), int8 activations on both.
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "int2-g64", mq::ActMode::dynamic_int8},
      {"q3_K", GGML_TYPE_Q3_K, 256, 110, kQ8_K, "int3-g64", mq::ActMode::dynamic_int8},
      // The same two on our weight-only kernels (the bf16 tile where AVX-512 BF16 is built): the library's
      // fp32-accurate path, the bar the table rows below would have to clear to earn a registry row.
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "int2-g64", mq::ActMode::weight_only},
      {"q3_K", GGML_TYPE_Q3_K, 256, 110, kQ8_K, "int3-g64", mq::ActMode::weight_only},
      // The lookup-table kernels (T-MAC's idea, issue 56) on int2-g64 against q2_K: fp32 tables (fp32-accurate,
      // as the weight-only rows) and 16-bit ones (each entry within half a step of 1/32767 of its group's largest).
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "int2-g64", mq::ActMode::weight_only, Pair::Table::fp32},
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "int2-g64", mq::ActMode::weight_only, Pair::Table::int16},
      // int3-g64 through 16-bit tables on its bit planes (bench/lut3_kernel16.h) against q3_K.
      {"q3_K", GGML_TYPE_Q3_K, 256, 110, kQ8_K, "int3-g64", mq::ActMode::weight_only, Pair::Table::int16},
      // q2_k and q3_k through 16-bit tables (bench/lut_q2k_kernel16.h, lut_q3k_kernel16.h) against q2_K and q3_K:
      // the same format on both sides (q3_k's chunks hold its scales in whole bytes: 3.6% more).
      {"q2_K", GGML_TYPE_Q2_K, 256, 84, kQ8_K, "q2_k", mq::ActMode::weight_only, Pair::Table::int16},
      {"q3_K", GGML_TYPE_Q3_K, 256, 110, kQ8_K, "q3_k", mq::ActMode::weight_only, Pair::Table::int16},
  };
  return t;
}

inline std::string Pair::ours() const {
  return std::string(scheme) + (mode == mq::ActMode::dynamic_int8 ? "+a8" : "") +
         (table == Table::fp32 ? "-table" : table == Table::int16 ? "-table16" : "");
}

inline std::string Pair::label() const { return std::string(ggml_name) + " / " + ours(); }

}  // namespace vsggml
