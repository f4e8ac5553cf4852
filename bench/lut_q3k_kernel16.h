// A lookup-table kernel for q3_k (bench-only, vs_ggml's pair q3_K / q3_k-table16): lut_q2k_kernel16.h's design on
// llama.cpp's 3-bit K type, with lut3_kernel16.h's bit planes. q3_K stores w = d sc (q - 4) per 16-weight
// sub-block (3-bit q, signed 6-bit sc, one fp16 d per 256 weights); q - 4 = lo + 4 (hi - 1) with lo = q & 3 and
// hi = q >> 2, so the 2-bit plane looks up the column-pair tables (entry (i & 3) x0 + (i >> 2) x1) and the 1-bit
// plane four-column tables (entry -4 sum of the x_j whose bit j of i is 0), as lut3_kernel16.h does for int3.
//
//   chunk (b, g): 1824 bytes = 16 x 114, block b's 16 rows x super-block g's 256 columns
//     [0, 1024)     the lo plane in lut_q2k_kernel16.h's steps (step 2p + h: columns 8h..8h+7 of sub-blocks 2p, 2p + 1)
//     [1024, 1536)  the hi plane, 8 sub-block pairs x 64 bytes: row l's 32-bit word holds sub-block 2p's 16 hi bits
//                   (bit j = column j) in its low half, 2p + 1's in its high half
//     [1536, 1792)  sc as int8, byte 32p + 2l + e = sub-block 2p + e of row l
//     [1792, 1824)  d of the 16 rows (fp16)
// Four bytes per row and super-block more than q2_K's 110 (3.6%): ggml packs the 6-bit scales into 12 bytes, and
// unpacking them in the loop costs ALU instructions that are this kernel's bound; whole bytes take one vpmovsxbw
// per sub-block pair. vs_ggml reports each side's bytes; from DRAM the 3.6% counts against this side.
//
// Per sub-block pair and block of 16 rows: three code words (two lo, one hi), 12 lookups (a shift, a vpternlogd, a
// vpermw, a vpdpwssd against (sc_2p, sc_2p+1) each), one vpmovsxbw. The int32 sum per super-block and row is at
// most 16 x 32 x 12 x 32767 < 2^31: exact; it is scaled once, by s_g d.
//
// The bound (lut3_kernel16.h's): a lookup's entry is within 0.5 s_g of its exact value; a lookup that is not
// exactly 0 has a weight q - 4 != 0 among its columns (a lo index != 0 has lo != 0; a hi index with a 0 bit has
// q - 4 = lo - 4 < 0), whose |w| >= |D|; each column is in one pair and one quad: W x within
// sum_j |w_j| s_g (1 + 2^-20) plus the fp32 rounding. No min term, so |w_j| bounds it (k_magnitudes gives |w|).
//
//   pack_q3k_table(q), gemm_q3k_table16(w, x, n, y, threads, use_isa), q3k_slack(w, x, n) (n, cols / 256)
//   KTable16: either K table (q2_k or q3_k) behind one door for vs_ggml and the test
#pragma once
#include <variant>

#include "lut_q2k_kernel16.h"

namespace mqbench::lut {

struct Q3KTable : KChunks<1824> {
  static constexpr int64_t kLo = 0, kHi = 1024, kScales = 1536, kD = 1792;
};
static_assert(Q3KTable::kChunk == 16 * (110 + 4), "a chunk holds 16 rows' q3_K blocks with whole-byte scales");

inline bool is_q3k(const mq::Scheme& s) { return s.is_kquant() && mq::kfamily_of(s).name == "q3_k"; }

inline Q3KTable pack_q3k_table(const mq::QTensor& q) {
  if (!is_q3k(q.scheme)) throw mq::UsageError("pack_q3k_table: " + q.scheme.name() + " is not q3_k");
  return pack_k_chunks<Q3KTable>(q, [](uint8_t* c, int l, const mq::KParams& p, const uint8_t* codes) {
    for (int s = 0; s < 16; ++s) {  // lo step s = 2 pr + h
      const int pr = s / 2, h = s % 2;
      uint32_t word = 0;
      for (int e = 0; e < 2; ++e)
        for (int j = 0; j < 8; ++j) word |= static_cast<uint32_t>(codes[16 * (2 * pr + e) + 8 * h + j] & 3) << (16 * e + 2 * j);
      std::memcpy(c + Q3KTable::kLo + 64 * s + 4 * l, &word, 4);
    }
    for (int pr = 0; pr < 8; ++pr) {  // hi bits of sub-blocks 2 pr (low half), 2 pr + 1
      uint32_t word = 0;
      for (int e = 0; e < 2; ++e)
        for (int j = 0; j < 16; ++j) word |= static_cast<uint32_t>(codes[16 * (2 * pr + e) + j] >> 2) << (16 * e + j);
      std::memcpy(c + Q3KTable::kHi + 64 * pr + 4 * l, &word, 4);
    }
    for (int b = 0; b < 16; ++b) c[Q3KTable::kScales + 32 * (b / 2) + 2 * l + b % 2] = static_cast<uint8_t>(static_cast<int8_t>(p.sc[static_cast<size_t>(b)]));
    std::memcpy(c + Q3KTable::kD + 2 * l, &p.d, 2);
  });
}

// One call's tables. tab: (n, sbs, 3072) int16: the 16 lo steps' registers as lut_q2k_kernel16.h's (2048), then per
// sub-block pair p 4 quad registers (register k: sub-block 2p's quad k, then 2p + 1's); scale: (n, sbs) s_g, shared
// by both planes' entries.
struct Q3KActs {
  int64_t n = 0;
  mq::AlignedVector<int16_t> tab;
  std::vector<float> scale;
};

// GCC 12 warns inside its own AVX-512 headers where _mm512_reduce_max_ps inlines (lut3_kernel16.h says so too).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// The quad entries of columns c .. c + 3 of xt: entry i = a chain of fma((bit j of i) ? 0 : -4, x_j, .) from 0 over
// j = 0 .. 3, the same operations in AVX-512 and in the loop; returns the largest |entry|.
inline float fill_quad(const float* xc, float* e) {
#if defined(__AVX512F__)
  alignas(64) float hq[4][16];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 4; ++j) hq[j][i] = (i >> j) & 1 ? 0.0f : -4.0f;
  __m512 v = _mm512_setzero_ps();
  for (int j = 0; j < 4; ++j) v = _mm512_fmadd_ps(_mm512_load_ps(hq[j]), _mm512_set1_ps(xc[j]), v);
  _mm512_storeu_ps(e, v);
  return _mm512_reduce_max_ps(_mm512_abs_ps(v));
#else
  float mx = 0.0f;
  for (int i = 0; i < 16; ++i) {
    float s = 0.0f;
    for (int j = 0; j < 4; ++j) s = std::fma((i >> j) & 1 ? 0.0f : -4.0f, xc[j], s);
    e[i] = s;
    mx = std::max(mx, std::fabs(s));
  }
  return mx;
#endif
}
#pragma GCC diagnostic pop

inline const Q3KActs& make_q3k_tables(const Q3KTable& w, const float* x, int64_t n) {
  thread_local Q3KActs a;
  thread_local std::vector<float> tf;  // one super-block's float entries: 128 pairs, then 64 quads, 16 each
  a.n = n;
  a.tab.assign(static_cast<size_t>(n * w.sbs * 3072), 0);
  a.scale.assign(static_cast<size_t>(n * w.sbs), 0.0f);
  const EntryFields f = unsigned_pair_fields();
  tf.resize(192 * 16);
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.cols;
    for (int64_t g = 0; g < w.sbs; ++g) {
      float mx = fill_entries<true>(f, xt, w.cols, g * 128, (g + 1) * 128, tf.data());
      for (int qd = 0; qd < 64; ++qd) mx = std::max(mx, fill_quad(xt + g * 256 + 4 * qd, tf.data() + 16 * (128 + qd)));
      const float inv = mx > 0.0f ? 32767.0f / mx : 0.0f;
      a.scale[static_cast<size_t>(t * w.sbs + g)] = mx / 32767.0f;
      int16_t* dst = a.tab.data() + (t * w.sbs + g) * 3072;
      store_pair_steps(tf.data(), inv, dst);
      for (int pr = 0; pr < 8; ++pr)
        for (int k = 0; k < 4; ++k)
          for (int half = 0; half < 2; ++half)  // sub-block 2 pr + half's quad k
            code16(tf.data() + 16 * (128 + 4 * (2 * pr + half) + k), inv, dst + 2048 + 128 * pr + 32 * k + 16 * half);
    }
  }
  return a;
}

// The portable twin: field by field, the same int32 sums, the same float steps after them.
inline void q3k_twin(const Q3KTable& w, const Q3KActs& a, float* y, int threads) {
  mq::for_each_block_output(w, a.n, y, threads, [&](int64_t b, int64_t t, int l) {
    float out = 0.0f;
    for (int64_t g = 0; g < w.sbs; ++g) {
      const uint8_t* c = w.chunk(b, g);
      const int16_t* tab = a.tab.data() + (t * w.sbs + g) * 3072;
      int32_t acc = 0;
      for (int pr = 0; pr < 8; ++pr) {
        uint32_t lo[2], hi;
        std::memcpy(lo, c + Q3KTable::kLo + 128 * pr + 4 * l, 4);
        std::memcpy(lo + 1, c + Q3KTable::kLo + 128 * pr + 64 + 4 * l, 4);
        std::memcpy(&hi, c + Q3KTable::kHi + 64 * pr + 4 * l, 4);
        for (int half = 0; half < 2; ++half) {  // sub-block 2 pr + half
          int32_t s = 0;
          for (int k = 0; k < 4; ++k) {
            for (int h = 0; h < 2; ++h) s += tab[256 * pr + 128 * h + 32 * k + 16 * half + ((lo[h] >> (16 * half + 4 * k)) & 0xF)];
            s += tab[2048 + 128 * pr + 32 * k + 16 * half + ((hi >> (16 * half + 4 * k)) & 0xF)];
          }
          acc += static_cast<int8_t>(c[Q3KTable::kScales + 32 * pr + 2 * l + half]) * s;
        }
      }
      uint16_t d;
      std::memcpy(&d, c + Q3KTable::kD + 2 * l, 2);
      out = std::fma(static_cast<float>(acc), a.scale[static_cast<size_t>(t * w.sbs + g)] * mq::f16_to_f32(d), out);
    }
    return out;
  });
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
// R blocks for token t: per super-block, per sub-block pair, its 12 table registers (8 lo, 4 hi), then block by
// block the pair's scales and its three code words through them; scaled once per super-block.
template <int R>
void q3k_tile(const Q3KTable& w, int64_t b0, const Q3KActs& a, int64_t t, float* y) {
  const __m512i low4 = _mm512_set1_epi16(0x000F), odd16 = _mm512_set1_epi32(0x00100000);
  __m512 out[R];
  for (int r = 0; r < R; ++r) out[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < w.sbs; ++g) {
    const int16_t* tab = a.tab.data() + (t * w.sbs + g) * 3072;
    const uint8_t* cp[R];
    __m512i acc[R];
    for (int r = 0; r < R; ++r) {
      cp[r] = w.chunk(b0 + r, g);
      acc[r] = _mm512_setzero_si512();
    }
    for (int pr = 0; pr < 8; ++pr) {
      __m512i table[12];  // lo steps 2 pr, 2 pr + 1, then the pair's quads
      for (int k = 0; k < 8; ++k) table[k] = _mm512_load_si512(tab + 256 * pr + 32 * k);
      for (int k = 0; k < 4; ++k) table[8 + k] = _mm512_load_si512(tab + 2048 + 128 * pr + 32 * k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        // Every line of the block's stream, 2 KB ahead: four lines per pair cover a chunk's 28.5 (8 x 256 >= 1824).
        for (int line = 0; line < 4; ++line) __builtin_prefetch(cp[r] + 256 * pr + 64 * line + mq::kBlockPrefetchBytes);
        // Row l's two scale bytes to dword l as two words: (sc_2pr, sc_2pr+1).
        const __m512i scw = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cp[r] + Q3KTable::kScales + 32 * pr)));
        __m512i s = acc[r];
#pragma GCC unroll 3
        for (int part = 0; part < 3; ++part) {
          const __m512i code = _mm512_loadu_si512(part < 2 ? cp[r] + Q3KTable::kLo + 128 * pr + 64 * part : cp[r] + Q3KTable::kHi + 64 * pr);
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            const __m512i idx = _mm512_ternarylogic_epi32(_mm512_srli_epi16(code, 4 * k), low4, odd16, 0xEA);  // (A & B) | C
            s = _mm512_dpwssd_epi32(s, _mm512_permutexvar_epi16(idx, table[4 * part + k]), scw);
          }
        }
        acc[r] = s;
      }
    }
    const __m512 sg = _mm512_set1_ps(a.scale[static_cast<size_t>(t * w.sbs + g)]);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cp[r] + Q3KTable::kD)));
      out[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), _mm512_mul_ps(sg, d), out[r]);
    }
  }
  store_blocks<R>(w, b0, t, out, y);
}
#endif

// y = W x for n tokens through 16-bit tables (use_isa: the AVX-512 tile where built, else the twin).
inline void gemm_q3k_table16(const Q3KTable& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  const Q3KActs& a = make_q3k_tables(w, x, n);
#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  if (use_isa)  // an item's 8 blocks as two tiles of 4: 12 table registers and the blocks' sums stay in registers
    return for_each_item(w, n, std::max(1, threads), [&](auto r, int64_t b0, int64_t t) {
      constexpr int R = decltype(r)::value;
      if constexpr (R == 8) {
        q3k_tile<4>(w, b0, a, t, y);
        q3k_tile<4>(w, b0 + 4, a, t, y);
      } else q3k_tile<R>(w, b0, a, t, y);
    });
#endif
  (void)use_isa;
  q3k_twin(w, a, y, std::max(1, threads));
}

// The bound's slack per activation, (n, sbs): s_g (1 + 2^-20), two lookups per weight (the header's bound).
inline std::vector<double> q3k_slack(const Q3KTable& w, const float* x, int64_t n) {
  const std::vector<float>& step = make_q3k_tables(w, x, n).scale;
  std::vector<double> slack(step.size());
  for (size_t i = 0; i < step.size(); ++i) slack[i] = step[i] * (1 + 0x1p-20);
  return slack;
}

// Either K family's table kernel behind one door (vs_ggml's `-table16` rows on K schemes, the test): the scheme's
// family picks the layout here and nowhere else.
struct KTable16 {
  std::variant<Q2KTable, Q3KTable> t;
  int64_t sbs() const { return std::visit([](const auto& w) { return w.sbs; }, t); }
  int64_t bytes() const { return std::visit([](const auto& w) { return w.bytes(); }, t); }
};

inline bool has_ktable16(const mq::Scheme& s) { return is_q2k(s) || is_q3k(s); }

inline KTable16 pack_ktable16(const mq::QTensor& q) {
  if (is_q3k(q.scheme)) return KTable16{pack_q3k_table(q)};
  return KTable16{pack_q2k_table(q)};  // UsageError for any other scheme
}

inline void gemm_ktable16(const KTable16& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  if (const auto* q3 = std::get_if<Q3KTable>(&w.t)) gemm_q3k_table16(*q3, x, n, y, threads, use_isa);
  else gemm_q2k_table16(std::get<Q2KTable>(w.t), x, n, y, threads, use_isa);
}

// (n, sbs): the bound's slack per activation of each super-block, to be taken with k_magnitudes.
inline std::vector<double> ktable16_slack(const KTable16& w, const float* x, int64_t n) {
  if (const auto* q3 = std::get_if<Q3KTable>(&w.t)) return q3k_slack(*q3, x, n);
  return q2k_slack(std::get<Q2KTable>(w.t), x, n);
}

}  // namespace mqbench::lut
