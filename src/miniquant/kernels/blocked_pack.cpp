// pack_blocked / unpack_blocked: the QTensor <-> 16-row VNNI block layout of blocked.h.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/format_table.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/pack.h"

namespace mq {

namespace {

// Columns per group in the block layout: the group width, or the whole row padded to a whole step (8
// columns, 16 for int3 / int2) when the row has one scale.
int64_t group_columns(const QTensor& w, const BlockLayout& l) {
  if (w.scheme.groups_per_row(w.cols) > 1) return w.scheme.group_width(w.cols);
  const int64_t k = l.step_columns;
  return (w.cols + k - 1) / k * k;
}

}  // namespace

const std::vector<BlockLayout>& block_layouts() {
  static const std::vector<BlockLayout> t = {block_layout_of<Int8Family>(), block_layout_of<Int4Family>(),
                                             block_layout_of<Int3Family>(), block_layout_of<Int2Family>()};
  return t;
}

namespace {

// block_layouts() indexed by format-table row (Scheme::family): built once, with each row's field width
// checked against its table row there, so the per-call lookup (runs_on asks on every gemm) is one load.
std::vector<const BlockLayout*> layouts_by_family() {
  const std::vector<FormatTraits>& table = format_table();
  std::vector<const BlockLayout*> by(table.size(), nullptr);
  for (const BlockLayout& l : block_layouts()) {
    const size_t row = family_row(l.family);
    if (row == table.size()) throw Error(fmt::format("block layout of {}: no such family in the format table", l.family));
    if (l.bits != table[row].bits)
      throw Error(fmt::format("block layout of {}: {}-bit fields, its table row says {}", l.family, l.bits, table[row].bits));
    by[row] = &l;
  }
  return by;
}

}  // namespace

const BlockLayout* block_layout(const Scheme& s) {
  static const std::vector<const BlockLayout*> by = layouts_by_family();
  return s.family < by.size() ? by[s.family] : nullptr;
}

int64_t BlockedCodes::bytes() const {
  return static_cast<int64_t>(codes.size() + 2 * scales.size() + zeros.size());
}

bool blockable(const QTensor& w) {
  const BlockLayout* l = block_layout(w.scheme);
  if (!l) return false;
  const int64_t gk = group_columns(w, *l);
  return gk % l->step_columns == 0 && gk <= kMaxBlockedGroup;
}

BlockedCodes pack_blocked(const QTensor& w) {
  if (!blockable(w))
    throw UsageError(fmt::format("pack_blocked '{}': {} ({}x{}) has no 16-row block layout (int8/4/3/2, groups "
                                 "of whole 8-column steps, 16 for int3/int2, at most {} columns)",
                                 w.name, w.scheme.name(), w.rows, w.cols, kMaxBlockedGroup));
  const Scheme& s = w.scheme;
  const BlockLayout& l = *block_layout(s);
  BlockedCodes b;
  b.scheme = s;
  b.name = w.name;
  b.rows = w.rows;
  b.cols = w.cols;
  b.blocks = (w.rows + 15) / 16;
  b.groups = s.groups_per_row(w.cols);
  b.group_k = group_columns(w, l);
  b.cols_pad = b.groups * b.group_k;
  b.step_bytes = l.step_bytes * 8 / l.step_columns;  // per 8 columns
  b.zero_sym = 1 << (s.bits - 1);
  const int64_t steps = b.cols_pad / 8;
  b.codes.assign(static_cast<size_t>(b.blocks * steps * b.step_bytes), 0);
  b.scales.assign(static_cast<size_t>(b.blocks * b.groups * 16), 0);
  if (!s.symmetric) b.zeros.assign(b.scales.size(), 0);

  std::vector<uint8_t> fields(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t blk = r / 16, lane = r % 16;
    unpack_fields(w.row_codes(r), w.cols, s.bits, fields.data());
    uint8_t* base = b.codes.data() + blk * steps * b.step_bytes;
    for (int64_t c = 0; c < w.cols; ++c) {
      put_block_field(base, l.slot(lane, c), s.bits, fields[c]);
    }
    for (int64_t g = 0; g < b.groups; ++g) {
      const int64_t si = s.group == kPerTensor ? 0 : r * b.groups + g;
      const int64_t bi = (blk * b.groups + g) * 16 + lane;
      b.scales[bi] = w.scales[si];
      if (!s.symmetric) b.zeros[bi] = field_at(w.zeros.data(), si, s.bits);
    }
  }
  return b;
}

QTensor unpack_blocked(const BlockedCodes& b) {
  const Scheme& s = b.scheme;
  const BlockLayout* lp = block_layout(s);
  if (!lp) throw UsageError(fmt::format("unpack_blocked '{}': {} has no 16-row block layout", b.name, s.name()));
  const BlockLayout& l = *lp;
  QTensor w;
  w.scheme = s;
  w.name = b.name;
  w.rows = b.rows;
  w.cols = b.cols;
  const Storage st = storage_of(s, b.rows, b.cols);
  w.codes.assign(static_cast<size_t>(st.code_bytes), 0);
  w.scales.assign(static_cast<size_t>(st.scale_bytes / 2), 0);
  std::vector<uint8_t> zero_fields(w.scales.size());
  std::vector<uint8_t> fields(static_cast<size_t>(b.cols));
  for (int64_t r = 0; r < b.rows; ++r) {
    const int64_t blk = r / 16, lane = r % 16;
    const uint8_t* base = b.block_codes(blk);
    for (int64_t c = 0; c < b.cols; ++c) {
      fields[c] = static_cast<uint8_t>(block_field(base, l.slot(lane, c), s.bits));
    }
    pack_fields(fields.data(), b.cols, s.bits, w.codes.data() + r * w.row_bytes());
    for (int64_t g = 0; g < b.groups; ++g) {
      const int64_t si = s.group == kPerTensor ? 0 : r * b.groups + g;
      w.scales[si] = b.block_scales(blk, g)[lane];
      if (!s.symmetric) zero_fields[si] = b.block_zeros(blk, g)[lane];
    }
  }
  if (!s.symmetric) {
    w.zeros.assign(static_cast<size_t>(st.zero_bytes), 0);
    pack_fields(zero_fields.data(), static_cast<int64_t>(zero_fields.size()), s.bits, w.zeros.data());
  }
  return w;
}

}  // namespace mq
