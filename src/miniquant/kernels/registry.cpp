// The kernel registry: the kernel files' rows in the order they are tried, the selection, and the kernel map.
#include "miniquant/kernels/registry.h"

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/format_table.h"

namespace mq {

namespace {

bool serves(const KernelRow& r, FamilySet fam, ActMode act) { return (r.families & fam) != 0 && (r.acts & act_bit(act)) != 0; }

const char* act_label(ActMode a) {
  switch (a) {
    case ActMode::weight_only: return "weight-only";
    case ActMode::dynamic_int8: return "`+a8`";
    case ActMode::dynamic_int16: return "`+a16`";
    case ActMode::bf16: return "`+bf16`";
  }
  return "?";
}

}  // namespace

// A family's bit: its position in the format table (the scheme's identity, Scheme::family; traits_of checks it).
FamilySet family_set(const Scheme& s) {
  traits_of(s);
  return FamilySet{1} << s.family;
}

FamilySet families_of(std::initializer_list<std::string_view> names) {
  FamilySet set = 0;
  const std::vector<FormatTraits>& t = format_table();
  for (std::string_view name : names) {
    const size_t i = family_row(name);
    if (i == t.size()) throw Error(fmt::format("kernel registry: no storage family '{}' in the format table", name));
    set |= FamilySet{1} << i;
  }
  return set;
}

const std::vector<KernelRow>& kernel_registry() {
  // The order is the priority: the block layout's rows first (QuantizedLinear asks for them alone), then per
  // family the instruction-set rows before the portable ones (each file lists its own that way), and last the
  // +bf16 rows that serve any family by handing over to its weight-only row.
  static const std::vector<KernelRow> rows = [] {
    std::vector<KernelRow> all;
    for (auto part : {kernel_rows_blocked_bf16, kernel_rows_dynamic, kernel_rows_float, kernel_rows_int, kernel_rows_kquant,
                      kernel_rows_kquant_dynamic, kernel_rows_bf16_act})
      for (KernelRow& r : part()) all.push_back(r);
    for (const KernelRow& r : all)
      if ((r.layout == Layout::row_major) != (r.rows != nullptr) || (r.layout == Layout::blocks16) != (r.blocks != nullptr))
        throw Error(fmt::format("kernel registry: row '{}' has no function for its layout", r.kernel));
    return all;
  }();
  return rows;
}

const KernelRow& select_kernel(const QTensor& w, ActMode act, bool use_isa, const float* x, int64_t n) {
  const FamilySet fam = family_set(w.scheme);
  int safe = -1;  // bf16_safe(x), once it is asked
  for (const KernelRow& r : kernel_registry()) {
    if (r.layout != Layout::row_major || !serves(r, fam, act)) continue;
    if (r.isa && !use_isa) continue;
    if (r.needs != Acts::any) {
      if (safe < 0) safe = x != nullptr && bf16_safe(x, n * w.cols);
      if ((r.needs == Acts::bf16_safe) != (safe == 1)) continue;
    }
    if (r.runs_on && !r.runs_on(w)) continue;
    return r;
  }
  throw UsageError(fmt::format("no kernel runs {} with {} activations", w.scheme.name(), act_label(act)));
}

const KernelRow* blocked_kernel(const QTensor& w, ActMode act) {
  const FamilySet fam = family_set(w.scheme);
  for (const KernelRow& r : kernel_registry())
    if (r.layout == Layout::blocks16 && serves(r, fam, act) && (!r.runs_on || r.runs_on(w))) return &r;
  return nullptr;
}

const KernelRow& block_row(const Scheme& s, ActMode act) {
  const FamilySet fam = family_set(s);
  for (const KernelRow& r : kernel_registry())
    if (r.layout == Layout::blocks16 && serves(r, fam, act)) return r;
  throw UsageError(fmt::format("no block-layout kernel runs {} with {} activations", s.name(), act_label(act)));
}

bool runs_blocked(const QTensor& w, ActMode act) { return blocked_kernel(w, act) != nullptr; }

bool has_kernel(const Scheme& s, ActMode act) {
  const FamilySet fam = family_set(s);
  for (const KernelRow& r : kernel_registry())
    if (serves(r, fam, act)) return true;
  return false;
}

std::string kernel_map_markdown() {
  std::string out =
      "| family | activations | build | layout | kernel | twin | test |\n"
      "|---|---|---|---|---|---|---|\n";
  const std::vector<FormatTraits>& t = format_table();
  // Consecutive rows that differ only in their families (one template instance per family, as the K rows are)
  // print as one row.
  const auto same = [](const KernelRow& a, const KernelRow& b) {
    return a.acts == b.acts && a.layout == b.layout && a.needs == b.needs && a.isa == b.isa && a.build == b.build &&
           a.kernel == b.kernel && a.twin == b.twin && a.test == b.test;
  };
  std::vector<KernelRow> merged;
  for (const KernelRow& r : kernel_registry()) {
    if (!merged.empty() && same(merged.back(), r)) merged.back().families |= r.families;
    else merged.push_back(r);
  }
  for (const KernelRow& r : merged) {
    std::string fams;
    if (r.families == (FamilySet{1} << t.size()) - 1 || r.families == ~FamilySet{0}) fams = "any";
    else
      for (size_t i = 0; i < t.size(); ++i)
        if (r.families & (FamilySet{1} << i)) fams += (fams.empty() ? "" : ", ") + std::string(t[i].family);
    std::string acts;
    for (ActMode a : {ActMode::weight_only, ActMode::bf16, ActMode::dynamic_int8, ActMode::dynamic_int16})
      if (r.acts & act_bit(a)) acts += (acts.empty() ? "" : ", ") + std::string(act_label(a));
    std::string build(r.build);
    if (r.isa) build += " (ISA)";
    if (r.needs == Acts::bf16_safe) build += "; activations finite, below 2^126";
    if (r.needs == Acts::bf16_unsafe) build += "; a NaN, an Inf or 2^126 among the activations";
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", fams, acts, build,
                       r.layout == Layout::blocks16 ? "16-row blocks (QuantizedLinear)" : "row-major", r.kernel, r.twin, r.test);
  }
  return out;
}

}  // namespace mq
