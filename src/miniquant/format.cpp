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

std::string Scheme::name() const {
  switch (kind) {
    case Kind::fp32: return "fp32";
    case Kind::fp16: return "fp16";
    case Kind::bf16: return "bf16";
    case Kind::kquant: return std::string(traits_of(*this).family);
    case Kind::integer: break;
  }
  std::string g = group == kPerTensor    ? "per-tensor"
                   : group == kPerChannel ? "per-channel"
                                          : fmt::format("g{}", group);
  return fmt::format("int{}-{}{}", bits, g, symmetric ? "" : "-asym");
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
  if (name == "fp32") return fp32();
  if (name == "fp16") return fp16();
  if (name == "bf16") return bf16();
  for (const FormatTraits& f : format_table())  // the K families are named by their table rows
    if (f.kind == Kind::kquant && name == f.family) return kquant(f.bits);

  std::string_view s = name;
  int bits = 0;
  if (!eat(s, "int") || !eat_int(s, bits)) return fail("");
  // The integer widths are the format table's integer rows.
  bool listed = false;
  for (const FormatTraits& f : format_table()) listed = listed || (f.kind == Kind::integer && f.bits == bits);
  if (!listed) return fail(fmt::format(" (int{} is not supported)", bits));
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
  Scheme out = integer(bits, group, symmetric);
  return out;
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
