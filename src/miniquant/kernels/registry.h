// The kernel registry: the one selector from (storage family, activation mode, instruction set) to the kernel
// that runs it, in the spirit of ggml's type_traits where the activation format is a field (vec_dot_type).
// Each kernel file contributes its own rows (kernel_rows_float(), kernel_rows_int(), ...); the registry puts them
// in priority order and gemm(), QuantizedLinear and runs_blocked() all ask it. A row names the families and modes
// it serves, the build it needs (an ISA condition, checked at run time), the layout it reads, and the kernel, its
// scalar twin and the test that compares them: the kernel map in docs/ARCHITECTURE.md is printed from these rows
// (`miniquant kernels`) and a test fails when the two differ.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/quantize.h"

namespace mq {

// Where a kernel reads the weights: the QTensor's rows, or the 16-row blocks QuantizedLinear packs once.
enum class Layout : uint8_t { row_major, blocks16 };

// Bit sets over the format table's families (FormatTraits::id) and the activation modes.
using FamilySet = uint32_t;
using ActSet = uint8_t;
inline constexpr ActSet act_bit(ActMode a) { return static_cast<ActSet>(1u << static_cast<unsigned>(a)); }
// The families named, e.g. families_of({"int4", "int2"}) (names from the format table; throws on an unknown one).
FamilySet families_of(std::initializer_list<std::string_view> names);
// The bit of s's family (its row of the format table, Scheme::family).
FamilySet family_set(const Scheme& s);

// The activations a row accepts: any; only those where every one is finite and below 2^126 (bf16_safe), which the
// bf16-dot kernels need to split or round them; or only the others (a NaN, an Inf or a huge value among them).
enum class Acts : uint8_t { any, bf16_safe, bf16_unsafe };

// y (n, rows) = x (n, cols) W^T; the row-major rows read w's rows, the blocks16 rows the packed copy. use_isa is
// read only by rows that hand over to another row (+bf16's rounded copy runs the weight-only selection).
using RowKernelFn = void (*)(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool use_isa);
// use_isa false runs a blocks16 row's portable twin (every blocks16 row has one in its own file).
using BlockKernelFn = void (*)(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool use_isa);

struct KernelRow {
  FamilySet families = 0;
  ActSet acts = 0;
  Layout layout = Layout::row_major;
  Acts needs = Acts::any;
  bool isa = false;  // an instruction-set path: skipped when the caller asks for the portable one (use_isa false)
  // Whether this build and CPU run the row on w (the ISA condition, and for blocks16 whether w has the layout);
  // null: always.
  bool (*runs_on)(const QTensor& w) = nullptr;
  RowKernelFn rows = nullptr;     // layout row_major
  BlockKernelFn blocks = nullptr; // layout blocks16
  // The kernel map's cells: the build the row needs, the kernel (file), its twin, the test comparing them.
  std::string_view build, kernel, twin, test;
};

// Every row, in the order they are tried (the first that matches runs).
const std::vector<KernelRow>& kernel_registry();

// The row-major kernel gemm() runs for w under act on x (n, cols): the first row of the family and mode with layout
// row_major whose condition holds (isa rows only when use_isa; bf16_safe rows only when bf16_safe(x), bf16_unsafe
// rows only when not, scanned once and only if such a row is reached; x null counts as unsafe). Throws UsageError when no row serves the pair (a
// dynamic mode on a family without one).
const KernelRow& select_kernel(const QTensor& w, ActMode act, bool use_isa, const float* x, int64_t n);
// The blocks16 row QuantizedLinear runs w on under act (ISA paths allowed), or null when it keeps the rows.
const KernelRow* blocked_kernel(const QTensor& w, ActMode act);
// The blocks16 row of the family of s under act, whatever this build runs (gemm_blocked on a packed tensor: a
// row whose ISA path is not built runs its twin). Throws UsageError when no blocks16 row serves the pair.
const KernelRow& block_row(const Scheme& s, ActMode act);
// True when QuantizedLinear keeps w in the 16-row block layout for act (blocked_kernel is not null).
bool runs_blocked(const QTensor& w, ActMode act);
// True when some row serves the family of s under act (a dynamic mode, say).
bool has_kernel(const Scheme& s, ActMode act);

// The kernel map, printed from the rows: a markdown table, family x activations x build -> kernel, layout,
// twin, test; the same on every machine (a row's build says where it runs, not whether it runs here).
std::string kernel_map_markdown();

// Rows contributed by the kernel files (registry.cpp orders them).
std::vector<KernelRow> kernel_rows_float();     // float.cpp: fp32, fp16, bf16 weight-only
std::vector<KernelRow> kernel_rows_int();       // weight_only.cpp: int8 .. int2 weight-only, +bf16 on bf16 dots
std::vector<KernelRow> kernel_rows_kquant();    // kquant.cpp: q2_k .. q6_k weight-only
std::vector<KernelRow> kernel_rows_dynamic();   // dynamic.cpp: int8 / int4 / int2 / int3 +a8 / +a16 (blocks16 and row-major), a row per family
std::vector<KernelRow> kernel_rows_kquant_dynamic();  // kquant_dynamic.cpp: q2_k .. q6_k +a8 / +a16
std::vector<KernelRow> kernel_rows_blocked_bf16();    // blocked_bf16.cpp: int8 .. int2 weight-only / +bf16, blocks16, a row per family
std::vector<KernelRow> kernel_rows_bf16_act();  // weight_only.cpp: +bf16 for any family, through its weight-only row

}  // namespace mq
