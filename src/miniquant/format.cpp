// Scheme names, shape checks and exact byte accounting.
#include "miniquant/format.h"

#include <charconv>

#include <fmt/core.h>

#include "miniquant/util/checked.h"
#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kquant/family.h"
#include "miniquant/util/json_checked.h"  // clip_text

namespace mq {

int64_t Scheme::group_width(int64_t cols) const {
  if (group > 0) return group;
  return cols;  // per-channel and per-tensor scales span the whole row
}

int64_t Scheme::groups_per_row(int64_t cols) const {
  if (group > 0) return cols / group;
  return 1;
}

int64_t Scheme::scale_count(int64_t rows, int64_t cols) const {
  if (!is_integer()) return 0;  // float and K schemes have no separate scales
  if (group == kPerTensor) return 1;
  return checked_mul(rows, groups_per_row(cols), "scale count");
}

namespace {

// The scheme of format-table row i with the given grouping.
Scheme of_row(size_t i, int group, bool symmetric) {
  const FormatTraits& f = format_table()[i];
  Scheme s;
  s.kind = f.kind;
  s.bits = f.bits;
  s.group = group;
  s.symmetric = symmetric;
  s.family = static_cast<uint8_t>(i);
  return s;
}

// The row of the family named `name` of kind k, or the table's size.
size_t row_named(Kind k, std::string_view name) {
  const std::vector<FormatTraits>& t = format_table();
  const size_t i = family_row(name);
  return i < t.size() && t[i].kind == k ? i : t.size();
}

std::string family_names(Kind k) {
  std::string out;
  for (const FormatTraits& f : format_table())
    if (f.kind == k) {
      if (!out.empty()) out += ", ";
      out += f.family;
    }
  return out;
}

}  // namespace

Scheme Scheme::fp32() { return of_row(row_named(Kind::fp32, "fp32"), kPerTensor, true); }
Scheme Scheme::fp16() { return of_row(row_named(Kind::fp16, "fp16"), kPerTensor, true); }
Scheme Scheme::bf16() { return of_row(row_named(Kind::bf16, "bf16"), kPerTensor, true); }

Scheme Scheme::integer(std::string_view name, int group, bool symmetric) {
  const size_t i = row_named(Kind::integer, name);
  if (i == format_table().size())
    throw UsageError(fmt::format("no integer family '{}'; the table has {}", clip_text(std::string(name)),
                                 family_names(Kind::integer)));
  return of_row(i, group, symmetric);
}

Scheme Scheme::integer(int bits, int group, bool symmetric) {
  return integer(fmt::format("int{}", bits), group, symmetric);
}

Scheme Scheme::kquant(int bits) {
  const std::vector<FormatTraits>& t = format_table();
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].kind == Kind::kquant && t[i].bits == bits) return of_row(i, kSuperBlock, true);
  throw UsageError(fmt::format("no K family with {}-bit codes; the table has {}", bits, family_names(Kind::kquant)));
}

std::string Scheme::name() const {
  const FormatTraits& f = traits_of(*this);
  if (kind != Kind::integer) return std::string(f.family);
  std::string g = group == kPerTensor    ? "per-tensor"
                   : group == kPerChannel ? "per-channel"
                                          : fmt::format("g{}", group);
  return fmt::format("{}-{}{}", f.family, g, symmetric ? "" : "-asym");
}

const std::vector<Scheme>& scheme_table() {
  static const std::vector<Scheme> table = {
      Scheme::fp32(),
      Scheme::fp16(),
      Scheme::bf16(),
      Scheme::integer(8, kPerTensor),
      Scheme::integer(8, kPerChannel),
      Scheme::integer(8, kPerChannel, false),
      Scheme::integer(4, kPerChannel),
      Scheme::integer(4, 128),
      Scheme::integer(4, 64),
      Scheme::integer(4, 32),
      Scheme::integer(4, 128, false),
      Scheme::integer(4, 64, false),
      Scheme::integer(3, 128),
      Scheme::integer(3, 64),
      Scheme::integer(2, 64),
      Scheme::integer(2, 64, false),
      Scheme::kquant(2),
      Scheme::kquant(3),
      Scheme::kquant(4),
      Scheme::kquant(5),
      Scheme::kquant(6),
  };
  return table;
}

std::string valid_scheme_names() {
  std::string names;
  for (const auto& s : scheme_table()) names += (names.empty() ? "" : ", ") + s.name();
  return "fp32, fp16, bf16, int{2,3,4,8}-{per-tensor,per-channel,g<size>}[-asym], or a K family; named: " + names;
}

namespace {

bool eat(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool eat_int(std::string_view& s, int& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

}  // namespace

Scheme Scheme::parse(std::string_view name) {
  const std::string original(name);
  auto fail = [&](const std::string& why) -> Scheme {
    throw UsageError(fmt::format("unknown scheme '{}'{}; valid: {}", clip_text(original), why, valid_scheme_names()));
  };
  // Every family is named by its table row: the float and K families whole, an integer family as the prefix of
  // "<family>-<grouping>[-asym]" (the longest name that matches, so no family's name hides another's).
  const std::vector<FormatTraits>& table = format_table();
  size_t row = table.size();
  for (size_t i = 0; i < table.size(); ++i) {
    const FormatTraits& f = table[i];
    if (f.kind != Kind::integer && name == f.family) return of_row(i, f.kind == Kind::kquant ? kSuperBlock : kPerTensor, true);
    if (f.kind == Kind::integer && name.substr(0, f.family.size()) == f.family &&
        name.substr(f.family.size(), 1) == "-" && (row == table.size() || f.family.size() > table[row].family.size()))
      row = i;
  }
  std::string_view s = name;
  if (row == table.size()) {
    int bits = 0;
    if (eat(s, "int") && eat_int(s, bits) && s.substr(0, 1) == "-") return fail(fmt::format(" (int{} is not supported)", bits));
    return fail("");
  }
  s.remove_prefix(table[row].family.size());
  if (!eat(s, "-")) return fail("");
  int group = 0;
  if (eat(s, "per-tensor")) {
    group = kPerTensor;
  } else if (eat(s, "per-channel")) {
    group = kPerChannel;
  } else if (eat(s, "g")) {
    if (!eat_int(s, group) || group <= 0) return fail(" (group size must be a positive integer)");
  } else {
    return fail("");
  }
  bool symmetric = true;
  if (eat(s, "-asym")) symmetric = false;
  if (!s.empty()) return fail("");
  return of_row(row, group, symmetric);
}

void Scheme::check_shape(int64_t rows, int64_t cols) const {
  if (rows < 0 || cols < 0) throw UsageError(fmt::format("invalid shape {}x{}", rows, cols));
  if (is_integer() && group > 0 && cols % group != 0)
    throw UsageError(fmt::format("scheme {}: group size {} does not divide the input width {}", name(), group,
                                 cols));
  if (is_kquant() && cols % kSuperBlock != 0)
    throw UsageError(fmt::format("scheme {}: its {}-weight super-blocks do not divide the input width {}", name(),
                                 kSuperBlock, cols));
}

int64_t row_code_bytes(const Scheme& s, int64_t cols) {
  switch (s.kind) {
    case Kind::fp32: return checked_mul(cols, 4, "row bytes");
    case Kind::fp16:
    case Kind::bf16: return checked_mul(cols, 2, "row bytes");
    case Kind::integer: return checked_mul(cols, s.bits, "row bytes") / 8 + (cols * s.bits % 8 != 0);
    case Kind::kquant: return checked_mul(cols / kSuperBlock, traits_of(s).kquant->block_bytes, "row bytes");
  }
  return 0;
}

Storage storage_of(const Scheme& s, int64_t rows, int64_t cols) {
  s.check_shape(rows, cols);
  Storage st;
  if (s.is_kquant()) {
    const KFamily& f = *traits_of(s).kquant;
    const int64_t blocks = checked_mul(rows, cols / kSuperBlock, "block count");
    st.code_bytes = checked_mul(blocks, f.code_bytes(), "code bytes");
    st.scale_bytes = checked_mul(blocks, f.block_bytes - f.code_bytes(), "scale bytes");
    return st;
  }
  st.code_bytes = checked_mul(rows, row_code_bytes(s, cols), "code bytes");
  if (s.is_integer()) {
    const int64_t n = (rows == 0 || cols == 0) ? 0 : s.scale_count(rows, cols);
    st.scale_bytes = checked_mul(2, n, "scale bytes");
    if (!s.symmetric) st.zero_bytes = checked_mul(n, s.bits, "zero-point bits") / 8 + (n * s.bits % 8 != 0);
  }
  return st;
}

Buffers buffers_of(const Scheme& s, int64_t rows, int64_t cols) {
  const Storage st = storage_of(s, rows, cols);
  if (s.is_kquant()) return {st.total(), 0, 0};  // the blocks, scales included
  return {st.code_bytes, st.scale_bytes / 2, st.zero_bytes};
}

double bits_per_weight(const Scheme& s, int64_t rows, int64_t cols) {
  const int64_t n = checked_mul(rows, cols, "matrix size");
  return n == 0 ? 0.0 : 8.0 * static_cast<double>(storage_of(s, rows, cols).total()) / static_cast<double>(n);
}

}  // namespace mq
