// Dynamic-activation kernels for int8 / int4 / int3 / int2 weights in the 16-row block layout (blocked.h).
// Each token is quantized to int8 (one fp32 scale per token, quantize_activations), or to 16 bits and
// split into two int8 rows (ActMode::dynamic_int16, see Acts). For a block of
// 16 rows and one group, lane l accumulates sum_i (u_i - z) a_i exactly in int32: it starts at
// -z * sum_i a_i (the zero-point term, sum_i a_i computed once per call) and vpdpbusd adds u_i a_i
// four columns at a time, with the activations' 4 bytes broadcast to every lane. Once per group
// the 16 lanes are converted to float and multiplied by the 16 rows' scales; at the end by the
// token's scale. A tile is R blocks x T tokens, so each weight load (and int4 nibble split) serves
// T tokens and each activation broadcast serves R blocks. int2: a 16-column step's 64 bytes decode into
// four byte registers, register j holding columns 4b + j of byte b, so the activations of each step are
// stored transposed 4 x 4 (a'[4j + b] = a[4b + j]) and register j meets the 4 bytes at a' + 4j. int3: a
// 16-column step's 96 bytes decode into four byte registers of columns 4j .. 4j+3 (isa_x86.h pieces3, VBMI;
// elsewhere the portable twin runs int3).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/isa_x86.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kernels/word_kernel.h"

namespace mq {
namespace kdetail {
namespace {

// The portable twin of Vnni16 and Avx2x16: the same lane semantics in plain loops.
struct Portable16 {
  // The three traits below are read only where a build has no ISA path (FastIsa / FastIsaFor pick this struct): on
  // others they are unused, which clang reports for a struct of an anonymous namespace.
  [[maybe_unused]] static constexpr bool kAvailable = true;
  [[maybe_unused]] static constexpr const char* kName = "portable";
  static constexpr bool kSplitChains = true;
  static constexpr int kDecodeBlocks = 4;
  static constexpr int kTileTokens = 8;
  struct U { uint8_t v[64]; };
  struct I { int32_t v[16]; };
  struct Fv { float v[16]; };
  static U load(const uint8_t* p) {
    U u;
    std::memcpy(u.v, p, 64);
    return u;
  }
  static void nibbles(const U& w, U& lo, U& hi) {
    for (int i = 0; i < 64; ++i) {
      lo.v[i] = w.v[i] & 0x0F;
      hi.v[i] = static_cast<uint8_t>(w.v[i] >> 4);
    }
  }
  static void crumbs(const U& w, U f[4]) {
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 64; ++i) f[j].v[i] = static_cast<uint8_t>((w.v[i] >> (2 * j)) & 0x03);
  }
  [[maybe_unused]] static constexpr bool kInt3 = true;
  static void pieces3(const uint8_t* p, U f[4]) {  // lane l's 16 fields: bits 3c of its 6 bytes, little-endian
    for (int l = 0; l < 16; ++l) {
      uint64_t stream = 0;
      for (int b = 0; b < 6; ++b) stream |= uint64_t{p[6 * l + b]} << (8 * b);
      for (int c = 0; c < 16; ++c) f[c / 4].v[4 * l + c % 4] = static_cast<uint8_t>((stream >> (3 * c)) & 0x07);
    }
  }
  template <bool ByteFields>  // any field width: the bytes as they are
  static void dot(I& acc, const U& u, const int8_t* a) {
    for (int l = 0; l < 16; ++l)
      for (int q = 0; q < 4; ++q) acc.v[l] += int32_t{u.v[4 * l + q]} * int32_t{a[q]};
  }
  static I iset(int32_t v) {
    I r;
    std::fill(r.v, r.v + 16, v);
    return r;
  }
  static I izeros(const uint8_t* z16, int32_t m) {
    I r;
    for (int l = 0; l < 16; ++l) r.v[l] = -int32_t{z16[l]} * m;
    return r;
  }
  static I iadd(const I& a, const I& b) {
    I r;
    for (int l = 0; l < 16; ++l) r.v[l] = a.v[l] + b.v[l];
    return r;
  }
  static Fv fzero() { return {}; }
  static Fv scales(const uint16_t* s16) {
    Fv r;
    for (int l = 0; l < 16; ++l) r.v[l] = f16_to_f32(s16[l]);
    return r;
  }
  static void flush(Fv& f, const I& acc, const Fv& s) {
    for (int l = 0; l < 16; ++l) f.v[l] = std::fma(static_cast<float>(acc.v[l]), s.v[l], f.v[l]);
  }
  static void store(float* y, const Fv& f, float sx, int valid) {
    for (int l = 0; l < valid; ++l) y[l] = f.v[l] * sx;
  }
};

// One call's activations: int8 codes padded to cols_pad with zeros, per-group sums, token scales.
// With 16-bit activations every token becomes two int8 rows, its codes' high and low halves
// (a = 256 h + l, split_act16) with scales 256 s and s: the kernels run them as two tokens that
// share every weight load, and the caller adds the two output rows.
struct Acts {
  int64_t n = 0, ld = 0, groups = 0;  // n: int8 rows (2 per token with 16-bit activations)
  mq::AlignedVector<int8_t> a;  // (n, ld)
  std::vector<int32_t> sum;     // (n, groups) sum of a over each group
  std::vector<float> sx;        // (n)
};

// Transposes each 16-column step of one int8 row 4 x 4 in place: a'[4j + b] = a[4b + j] (Fam::kDotTransposed).
// Group sums do not change: groups are whole steps.
void transpose_steps(int8_t* a, int64_t ld) {
  for (int64_t c = 0; c + 16 <= ld; c += 16) {
    int8_t t[16];
    for (int j = 0; j < 4; ++j)
      for (int b = 0; b < 4; ++b) t[4 * j + b] = a[c + 4 * b + j];
    std::memcpy(a + c, t, sizeof t);
  }
}

// Fills the calling thread's buffer (assign keeps its capacity: no allocation per decode call once warm; the
// row-major kernels keep a thread_local Plan for the same reason) and returns it. transposed: each step's
// activations as Fam::kDotTransposed reads them (cols_pad is then whole 16-column steps, blocked.h).
const Acts& quantize_acts(const BlockedCodes& w, const float* x, int64_t tokens, int threads, ActMode act, bool transposed) {
  const bool wide = act == ActMode::dynamic_int16;
  thread_local Acts buffer;
  Acts& p = buffer;  // a local name: inside the parallel loop below, `buffer` would be each worker's own
  p.n = wide ? 2 * tokens : tokens;
  p.ld = w.cols_pad;
  p.groups = w.groups;
  p.a.assign(static_cast<size_t>(p.n * p.ld), 0);
  p.sum.assign(static_cast<size_t>(p.n * w.groups), 0);
  p.sx.resize(static_cast<size_t>(p.n));
  auto group_sums = [&](int64_t row) {
    const int8_t* at = p.a.data() + row * p.ld;
    for (int64_t g = 0; g < w.groups; ++g) {
      int32_t s = 0;
      for (int64_t c = g * w.group_k; c < (g + 1) * w.group_k; ++c) s += at[c];
      p.sum[row * w.groups + g] = s;
    }
  };
#pragma omp parallel for num_threads(threads) if (tokens >= 4)
  for (int64_t t = 0; t < tokens; ++t) {
    if (!wide) {
      p.sx[t] = quantize_activations(x + t * w.cols, w.cols, p.a.data() + t * p.ld);
      group_sums(t);
      if (transposed) transpose_steps(p.a.data() + t * p.ld, p.ld);
      continue;
    }
    std::vector<int16_t> a16(static_cast<size_t>(w.cols));
    const float s = quantize_activations16(x + t * w.cols, w.cols, a16.data());
    int8_t* hi = p.a.data() + 2 * t * p.ld;
    int8_t* lo = hi + p.ld;
    for (int64_t c = 0; c < w.cols; ++c) split_act16(a16[c], hi[c], lo[c]);
    p.sx[2 * t] = 256.0f * s;  // exact: a power-of-two multiple (NaN stays NaN)
    p.sx[2 * t + 1] = s;
    group_sums(2 * t);
    group_sums(2 * t + 1);
    if (transposed) {
      transpose_steps(hi, p.ld);
      transpose_steps(lo, p.ld);
    }
  }
  return p;
}

// True when the ISA's int8 dot works on nibble-split fields (Isa::dot_split; AVX2's vpmaddubsw).
template <class Isa>
constexpr bool split_bytes() {
  if constexpr (requires { Isa::kSplitBytes; }) return Isa::kSplitBytes;
  else return false;
}
template <class Isa>
inline constexpr bool kSplitBytes = split_bytes<Isa>();


// The steps of one group (Fam::kColumns columns each) for R blocks x T tokens: pair P = block P / T, token
// P % T accumulates into acc[P], and into acc2[P] for every second four columns when the tile has fewer
// than 8 pairs (independent chains, so even one token covers vpdpbusd's latency).
// Code shape matters here: with the accumulators in an array, or with this loop inlined into the
// group loop, gcc 12 copies each vpdpbusd accumulator to another register and back every step; as
// tuple members expanded from an index pack, in a function of its own, it keeps them in place, as
// clang 14 does either way (bench/README.md).
template <class Isa, class Fam, int R, int T, bool Split, size_t... P>
__attribute__((noinline)) void group_steps(typename Isa::I* acc, typename Isa::I* acc2, const uint8_t* const* wp,
                                           const int8_t* const* ap, int64_t steps, int64_t step_bytes,
                                           std::index_sequence<P...>) {
  using U = typename Isa::U;
  auto a1 = std::make_tuple(acc[P]...);
  auto a2 = std::make_tuple(acc2[P]...);
  auto& second = [&]() -> auto& {
    if constexpr (Split) return a2;
    else return a1;
  }();
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t off = Fam::kColumns * s;
    auto block = [&]<size_t r, size_t... K>(std::integral_constant<size_t, r>, std::index_sequence<K...>) {
      const uint8_t* q = wp[r] + s * step_bytes;
      __builtin_prefetch(q + kBlockPrefetchBytes);  // 32 int4 or int2 / 16 int8 steps ahead (blocked.h); past the end is harmless
      // A step longer than one line (int8's 128 bytes, int3's 96): its second line too.
      if constexpr (sizeof(typename Fam::Step) > 64) __builtin_prefetch(q + kBlockPrefetchBytes + 64);
      if constexpr (Fam::kDotTransposed || Fam::kSpread) {  // int2 / int3: 16 columns in four byte registers
        U f[4];
        if constexpr (Fam::kSpread) {  // int3: a 96-byte step, each register's columns in order
          Isa::pieces3(q, f);
        } else {  // int2: a 64-byte step, its activations transposed (quantize_acts)
          Isa::crumbs(Isa::load(q), f);
        }
        (Isa::template dot<false>(std::get<r * T + K>(a1), f[0], ap[K] + off), ...);
        (Isa::template dot<false>(std::get<r * T + K>(second), f[1], ap[K] + off + 4), ...);
        (Isa::template dot<false>(std::get<r * T + K>(a1), f[2], ap[K] + off + 8), ...);
        (Isa::template dot<false>(std::get<r * T + K>(second), f[3], ap[K] + off + 12), ...);
        return;
      }
      U u0, u1;
      if constexpr (Fam::kByteFields) {
        u0 = Isa::load(q);
        u1 = Isa::load(q + 64);
      } else {
        Isa::nibbles(Isa::load(q), u0, u1);
      }
      if constexpr (Fam::kByteFields && kSplitBytes<Isa>) {
        // AVX2: int8 fields go through vpmaddubsw as nibbles; split once here for all T tokens.
        U l0, h0, l1, h1;
        Isa::nibbles(u0, l0, h0);
        Isa::nibbles(u1, l1, h1);
        (Isa::dot_split(std::get<r * T + K>(a1), l0, h0, ap[K] + off), ...);
        (Isa::dot_split(std::get<r * T + K>(second), l1, h1, ap[K] + off + 4), ...);
      } else {
        (Isa::template dot<Fam::kByteFields>(std::get<r * T + K>(a1), u0, ap[K] + off), ...);
        (Isa::template dot<Fam::kByteFields>(std::get<r * T + K>(second), u1, ap[K] + off + 4), ...);
      }
    };
    [&]<size_t... Rs>(std::index_sequence<Rs...>) {
      (block(std::integral_constant<size_t, Rs>(), std::make_index_sequence<T>()), ...);
    }(std::make_index_sequence<R>());
  }
  ((acc[P] = std::get<P>(a1)), ...);
  if constexpr (Split) ((acc2[P] = std::get<P>(a2)), ...);
}

// y[t0 .. t0+T, 16*b0 .. 16*(b0+R)) for blocks b0 .. b0+R-1 and tokens t0 .. t0+T-1.
template <class Isa, class Fam, bool Sym, int R, int T>
void tile(const BlockedCodes& w, int64_t b0, const Acts& p, int64_t t0, float* y) {
  using I = typename Isa::I;
  using Fv = typename Isa::Fv;
  constexpr bool kSplit = Isa::kSplitChains && R * T < 8;
  Fv f[R * T];
  for (int i = 0; i < R * T; ++i) f[i] = Isa::fzero();
  constexpr int64_t kStepBytes = sizeof(typename Fam::Step);  // one step of one block
  const int64_t steps = w.group_k / Fam::kColumns;
  const uint8_t* wp[R];
  for (int r = 0; r < R; ++r) wp[r] = w.block_codes(b0 + r);
  const int8_t* ap[T];
  I acc[R * T], acc2[R * T];
  for (int i = 0; i < R * T; ++i) acc2[i] = Isa::iset(0);
  for (int64_t g = 0; g < w.groups; ++g) {
    // Each accumulator starts at the zero-point term: -z * (sum of the token's group activations).
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) {
        const int64_t gi = (t0 + t) * p.groups + g;
        acc[r * T + t] = Sym ? Isa::iset(-w.zero_sym * p.sum[gi]) : Isa::izeros(w.block_zeros(b0 + r, g), p.sum[gi]);
      }
    for (int t = 0; t < T; ++t) ap[t] = p.a.data() + (t0 + t) * p.ld + g * w.group_k;
    group_steps<Isa, Fam, R, T, kSplit>(acc, acc2, wp, ap, steps, kStepBytes, std::make_index_sequence<R * T>());
    for (int r = 0; r < R; ++r) {
      wp[r] += steps * kStepBytes;
      const Fv sv = Isa::scales(w.block_scales(b0 + r, g));
      for (int t = 0; t < T; ++t) {
        const int i = r * T + t;
        if constexpr (kSplit) {
          Isa::flush(f[i], Isa::iadd(acc[i], acc2[i]), sv);
          acc2[i] = Isa::iset(0);
        } else {
          Isa::flush(f[i], acc[i], sv);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows - 16 * (b0 + r)));
    for (int t = 0; t < T; ++t) Isa::store(y + (t0 + t) * w.rows + 16 * (b0 + r), f[r * T + t], p.sx[t0 + t], valid);
  }
}

// Tokens t0 .. n-1 of block b in tiles of Isa::kTileTokens, then the remainder.
template <class Isa, class Fam, bool Sym, int T = Isa::kTileTokens>
void block_tokens(const BlockedCodes& w, int64_t b, const Acts& p, int64_t t0, float* y) {
  if constexpr (T == 0) {
    return;
  } else {
    for (; t0 + T <= p.n; t0 += T) tile<Isa, Fam, Sym, 1, T>(w, b, p, t0, y);
    if (t0 < p.n) block_tokens<Isa, Fam, Sym, T - 1>(w, b, p, t0, y);
  }
}

template <class Isa, class Fam, bool Sym>
void run(const BlockedCodes& w, const Acts& p, float* y, int threads) {
  // One int8 row (an int8 token): kDecodeBlocks blocks (64 rows) per tile, for 8 independent accumulator
  // chains on VNNI. Two rows (a 16-bit token's two halves, or two int8 tokens): half as many blocks x
  // both rows, the same number of accumulators. More: one block per work item and kTileTokens-token
  // tiles, so a block's codes are re-read from L1/L2.
  constexpr int64_t kR1 = Isa::kDecodeBlocks, kR2 = std::max(1, Isa::kDecodeBlocks / 2);
  const int64_t per_item = p.n == 1 ? kR1 : p.n == 2 ? kR2 : 1;
  const int64_t items = (w.blocks + per_item - 1) / per_item;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t it = 0; it < items; ++it) {
    const int64_t b0 = it * per_item, b1 = std::min(w.blocks, b0 + per_item);
    if (p.n == 1 && b1 - b0 == kR1) {
      tile<Isa, Fam, Sym, kR1, 1>(w, b0, p, 0, y);
      continue;
    }
    if (p.n == 2 && b1 - b0 == kR2) {
      tile<Isa, Fam, Sym, kR2, 2>(w, b0, p, 0, y);
      continue;
    }
    for (int64_t b = b0; b < b1; ++b) block_tokens<Isa, Fam, Sym>(w, b, p, 0, y);
  }
}

template <class Isa, class Fam>
void dispatch(const BlockedCodes& w, const Acts& p, float* y, int threads) {
  if (w.scheme.symmetric) return run<Isa, Fam, true>(w, p, y, threads);
  return run<Isa, Fam, false>(w, p, y, threads);
}

}  // namespace
}  // namespace kdetail

bool has_vnni_path() { return kdetail::Vnni16::kAvailable; }

namespace kdetail {
namespace {
// The path gemm_blocked() runs with use_isa: VNNI where the build has it, else AVX2, else the portable twin; for
// int3 (spread pieces) the portable twin unless that path has VBMI's byte permutes (kInt3).
using FastIsa = std::conditional_t<Vnni16::kAvailable, Vnni16, std::conditional_t<Avx2x16::kAvailable, Avx2x16, Portable16>>;
template <class Fam>
using FastIsaFor = std::conditional_t<Fam::kSpread && !FastIsa::kInt3, Portable16, FastIsa>;
}  // namespace
}  // namespace kdetail

const char* dynamic_kernel_name(std::string_view family) {
  // FastIsaFor per family: int3's decode needs VBMI, so its path can differ from the others' on the same build.
  const char* name = nullptr;
  const auto pick = [&]<class... Fams>() {
    ((family == Fams::kName ? (void)(name = kdetail::FastIsaFor<Fams>::kName) : void()), ...);
  };
  pick.template operator()<Int8Family, Int4Family, Int3Family, Int2Family>();
  if (!name) throw Error(fmt::format("dynamic_kernel_name: '{}' is not an integer family with +a8 kernels", family));
  return name;
}

namespace kdetail {
namespace {
// The family's blocks16 row (Fam: its family, int8, int4, int3 or int2): +a8 / +a16 on the 16-row blocks. Reached only through
// its rows, whose modes are the dynamic ones.
template <class Fam>
void blocked_rows(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool use_isa) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_blocked")) return;
  const int nt = effective_threads(threads, w.rows * w.cols * n);
  const Acts& p = quantize_acts(w, x, n, nt, act, Fam::kDotTransposed);
  // 16-bit activations: the high and low halves' outputs go to rows 2t and 2t + 1, then add up.
  thread_local std::vector<float> halves;
  halves.assign(act == ActMode::dynamic_int16 ? static_cast<size_t>(2 * n * w.rows) : 0, 0.0f);
  float* out = halves.empty() ? y : halves.data();
  if (use_isa) dispatch<FastIsaFor<Fam>, Fam>(w, p, out, nt);
  else dispatch<Portable16, Fam>(w, p, out, nt);
  if (halves.empty()) return;
  for (int64_t t = 0; t < n; ++t) {
    const float* h = out + 2 * t * w.rows;
    const float* l = h + w.rows;
    for (int64_t r = 0; r < w.rows; ++r) y[t * w.rows + r] = h[r] + l[r];
  }
}
}  // namespace
}  // namespace kdetail

void gemm_blocked(const BlockedCodes& w, const float* x, int64_t n, float* y, int threads, bool use_isa, ActMode act) {
  if (empty_product(w.rows, w.cols, n, y, "gemm_blocked")) return;
  // The family's block-layout row for the mode: this file's for +a8 / +a16, blocked_bf16.cpp's for weight-only / +bf16.
  block_row(w.scheme, act).blocks(w, x, n, y, threads, act, use_isa);
}

namespace {
bool blockable_on(const QTensor& w) { return blockable(w); }
// gemm() on a QTensor: one-off calls pack here (QuantizedLinear packs once, at construction).
template <class Fam, bool Isa>
void packed_rows(const QTensor& w, const float* x, int64_t n, float* y, int threads, ActMode act, bool) {
  kdetail::blocked_rows<Fam>(pack_blocked(w), x, n, y, threads, act, Isa);
}
// Tensors without the layout (a group width that is not whole steps): the scalar reference is the kernel.
void ref_rows(const QTensor& w, const float* x, int64_t n, float* y, int, ActMode act, bool) { gemm_dynamic_ref(w, x, n, y, act); }
}  // namespace

std::vector<KernelRow> kernel_rows_dynamic() {
  const ActSet dyn = act_bit(ActMode::dynamic_int8) | act_bit(ActMode::dynamic_int16);
  // One set of rows per family, the family a template argument (the map prints them merged).
  const auto rows = [&]<class Fam>() {
    const FamilySet f = families_of({Fam::kName});
    // int3's step decode needs VBMI's byte permutes (FastIsaFor).
    const std::string_view build = Fam::kSpread ? "AVX-512 VNNI + VBMI, else plain loops" : "AVX-512 VNNI / AVX2, else plain loops";
    const std::string_view kKernel = Fam::kSpread
        ? "`gemm_blocked`: `Vnni16` (`pieces3`: `vpermi2b`, `vpmultishiftqb`), else `Portable16` (`dynamic.cpp`, `isa_x86.h`)"
        : "`gemm_blocked`: `Vnni16`, else `Avx2x16`, else `Portable16` (`dynamic.cpp`, `isa_x86.h`)";
    return std::vector<KernelRow>{
        {f, dyn, Layout::blocks16, Acts::any, true, blockable_on, nullptr, kdetail::blocked_rows<Fam>, build, kKernel,
         "`gemm_dynamic_ref`", "`test_blocked`"},
        {f, dyn, Layout::row_major, Acts::any, true, blockable_on, packed_rows<Fam, true>, nullptr, build,
         "packs per call, then `gemm_blocked`", "`gemm_dynamic_ref`", "`test_blocked`"},
        {f, dyn, Layout::row_major, Acts::any, false, blockable_on, packed_rows<Fam, false>, nullptr, "any",
         "packs per call, then `gemm_blocked`'s `Portable16`", "`gemm_dynamic_ref`", "`test_blocked`"},
        {f, dyn, Layout::row_major, Acts::any, false, nullptr, ref_rows, nullptr, "any (groups the layout cannot take)",
         "`gemm_dynamic_ref` itself", "-", "`test_kernels`"},
    };
  };
  // Interleaved (int8's first row, int4's first row, ...): each family keeps its own order, and the kernel map
  // merges the pairs, which differ only in their families.
  const std::vector<KernelRow> r8 = rows.template operator()<Int8Family>(), r4 = rows.template operator()<Int4Family>(),
                               r2 = rows.template operator()<Int2Family>(), r3 = rows.template operator()<Int3Family>();
  std::vector<KernelRow> all;
  for (size_t i = 0; i < r8.size(); ++i) all.push_back(r8[i]), all.push_back(r4[i]), all.push_back(r2[i]), all.push_back(r3[i]);
  return all;
}

}  // namespace mq
