// A lookup-table kernel for q2_k (T-MAC's idea on llama.cpp's own 2-bit K type; bench-only, vs_ggml's pair
// q2_K / q2_k-table16). lut_kernel16.h does it for int2-g64; this header takes q2_K's blocks as they are
// (w = d sc q - dmin m per 16-weight sub-block, 2-bit q, 4-bit sc and m, fp16 d and dmin per 256 weights) and
// repacks them, byte for byte as many, into 16-row chunks, two sub-blocks side by side:
//
//   chunk (b, g): 1344 bytes = 16 x 84, block b's 16 rows x super-block g's 256 columns
//     [0, 1024)     16 steps x 64 bytes; step 2p + h of row l is a 32-bit word: its low half holds columns
//                   8h..8h+7 of sub-block 2p (column 8h + j's code at bits 2j..2j+1), its high half the same
//                   columns of sub-block 2p + 1
//     [1024, 1280)  8 sub-block pairs x 16 rows x 2 bytes: byte 32p + 2l + e is sub-block 2p + e of row l, sc in
//                   bits 0-3, m in bits 4-7
//     [1280, 1312)  d of the 16 rows (fp16), then [1312, 1344) dmin (fp16)
//
// The tables are lut_kernel16.h's (entry i of a column pair = (i & 3) x0 + (i >> 2) x1, int16 codes of step s_g
// per token and super-block), a step's register k holding the pair k of sub-block 2p's columns, then of 2p + 1's.
// Where the int2 kernel's vpdpwssd adds a lane's two lookups against ones, this one adds them times (sc_2p,
// sc_2p+1): the two halves' scales, one vpmovzxbw of the pair's 32 bytes and one vpand for both of its steps. Per
// super-block and row the int32 sum, sum_b sc_b sum_pairs code, is at most 16 x 15 x 8 x 32767 < 2^31: exact. The
// min term dmin sum_b m_b X_b (X_b the sub-block's activation sum) runs beside it in the same instruction, against
// X_b as int16 codes of step sx per token and super-block (sx = max |X_b| / 32767): a vpsrlw gives (m_2p, m_2p+1)
// and a vpdpwssd adds both sub-blocks' terms. Per step and block of 16 rows: 15 vector ALU instructions of lookups
// (int2's) and 2 for the scales and mins. (A first version, one sub-block per step with the min term in fp32, took 5
// and ran 1.64x-1.84x ggml's q2_K hot on an AMX Xeon; the ALU ports bound it.)
//
// The bound: a pair's lookup is within 0.5 s_g of (u0 x0 + u1 x1) (the entry's own float roundings are of order
// 2^-24 |entry| and go to the rounding term); a pair with both codes 0 looks up entry 0, exact, and any other pair
// has a code u >= 1, whose weight's magnitude |D| u + |M| >= |D|. X_b's code is within 0.5 sx of X_b / sx, so the
// min term is within |M_b| 0.5 sx, which is sum_{j in b} mag_j sx / 32, mag_j >= |M_b|. So the kernel is W x within
// sum_j mag_j (0.5 s_g + sx / 32)(1 + 2^-20) plus the fp32 rounding of sums of mag_j |x_j|, mag_j = |D_b| q_j + |M_b|
// (the min term cancels against D q in w, so |w_j| would not bound it). q2k_slack and k_magnitudes give the
// two factors; vs_ggml's check and tests/test_lut_kernels.cpp hold the kernel to them.
//
// The portable twin looks each entry up field by field: the integer sums are exact, the float steps after them
// the same operations in the same order, so the two agree bit for bit.
//
//   pack_q2k_table(q)                                  q: a q2_k QTensor (ggml's blocks) -> the chunks
//   gemm_q2k_table16(w, x, n, y, threads, use_isa)     y (n, rows) = W x, x (n, cols)
//   q2k_slack(w, x, n) (n, cols / 256); k_magnitudes(q) (rows, cols)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lut_kernel.h"
#include "miniquant/error.h"
#include "miniquant/kquant.h"

namespace mqbench::lut {

// The chunks of a K table: (blocks, sbs, Chunk) bytes, block b's 16 rows x super-block g's 256 columns at chunk(b, g).
template <int64_t Chunk>
struct KChunks {
  static constexpr int64_t kChunk = Chunk;
  int64_t rows = 0, cols = 0, blocks = 0, sbs = 0;  // sbs: super-blocks per row
  mq::AlignedBytes data;                            // (blocks, sbs, kChunk)
  const uint8_t* chunk(int64_t b, int64_t g) const { return data.data() + (b * sbs + g) * kChunk; }
  uint8_t* chunk(int64_t b, int64_t g) { return data.data() + (b * sbs + g) * kChunk; }
  int64_t bytes() const { return static_cast<int64_t>(data.size()); }
};

struct Q2KTable : KChunks<1344> {
  static constexpr int64_t kCodes = 0, kScales = 1024, kD = 1280, kDmin = 1312;
};
static_assert(Q2KTable::kChunk == 16 * 84, "a chunk holds 16 rows' q2_K blocks, no more bytes");

// T's chunks for q (zero-filled, so rows past the end stay zero), then fill(chunk, lane, params, codes) once per row
// and super-block with its block's unpacked fields (KParams, kSuperBlock codes).
template <class T, class Fill>
T pack_k_chunks(const mq::QTensor& q, Fill&& fill) {
  const mq::KFamily& f = mq::kfamily_of(q.scheme);
  T w;
  w.rows = q.rows;
  w.cols = q.cols;
  w.blocks = (q.rows + 15) / 16;
  w.sbs = q.cols / mq::kSuperBlock;
  w.data.assign(static_cast<size_t>(w.blocks * w.sbs * T::kChunk), 0);
  mq::KParams p;
  uint8_t codes[mq::kSuperBlock];
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t g = 0; g < w.sbs; ++g) {
      f.unpack(q.row_codes(r) + g * f.block_bytes, p, codes);
      fill(w.chunk(r / 16, g), static_cast<int>(r % 16), p, codes);
    }
  return w;
}

inline bool is_q2k(const mq::Scheme& s) { return s.is_kquant() && mq::kfamily_of(s).name == "q2_k"; }

inline Q2KTable pack_q2k_table(const mq::QTensor& q) {
  if (!is_q2k(q.scheme)) throw mq::UsageError("pack_q2k_table: " + q.scheme.name() + " is not q2_k");
  return pack_k_chunks<Q2KTable>(q, [](uint8_t* c, int l, const mq::KParams& p, const uint8_t* codes) {
    for (int s = 0; s < 16; ++s) {  // step s = 2 pr + h: columns 8h..8h+7 of sub-blocks 2 pr (low half), 2 pr + 1
      const int pr = s / 2, h = s % 2;
      uint32_t word = 0;
      for (int e = 0; e < 2; ++e)
        for (int j = 0; j < 8; ++j) word |= static_cast<uint32_t>(codes[16 * (2 * pr + e) + 8 * h + j]) << (16 * e + 2 * j);
      std::memcpy(c + Q2KTable::kCodes + 64 * s + 4 * l, &word, 4);
    }
    for (int b = 0; b < 16; ++b)
      c[Q2KTable::kScales + 32 * (b / 2) + 2 * l + b % 2] = static_cast<uint8_t>(p.sc[static_cast<size_t>(b)] | (p.m[static_cast<size_t>(b)] << 4));
    std::memcpy(c + Q2KTable::kD + 2 * l, &p.d, 2);
    std::memcpy(c + Q2KTable::kDmin + 2 * l, &p.dmin, 2);
  });
}

// One call's tables. tab: (n, sbs, 16 steps, 4, 32) int16, step 2p + h's register k = the 16 codes of sub-block 2p's
// column pair 4h + k, then sub-block 2p + 1's; scale: (n, sbs) s_g; xq: (n, sbs, 16) the sub-blocks' activation
// sums as int16 codes of step xstep (n, sbs).
struct Q2KActs {
  int64_t n = 0;
  mq::AlignedVector<int16_t> tab;
  std::vector<float> scale, xstep;
  std::vector<int16_t> xq;
};

// 16 float entries as int16 codes of step 1 / inv into o (nearest even).
inline void code16(const float* e, float inv, int16_t* o) {
#if defined(__AVX512F__)
  // cvtps rounds to nearest even, as lrint in the default rounding mode: the same codes either way.
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(e), _mm512_set1_ps(inv)))));
#else
  for (int i = 0; i < 16; ++i) o[i] = static_cast<int16_t>(std::lrint(e[i] * inv));
#endif
}

// One super-block's column-pair tables (tf: its 128 pairs' float entries, 16 each) as int16 codes in the steps'
// order (16 steps x 4 registers x 32; step 2p + h's register k: sub-block 2p's pair 4h + k, then 2p + 1's) into dst.
inline void store_pair_steps(const float* tf, float inv, int16_t* dst) {
  for (int sl = 0; sl < 16; ++sl)
    for (int k = 0; k < 4; ++k)
      for (int half = 0; half < 2; ++half) code16(tf + 16 * (8 * (sl / 2 * 2 + half) + 4 * (sl % 2) + k), inv, dst + sl * 128 + k * 32 + half * 16);
}

// The column-pair entries' fields, (i & 3) x0 + (i >> 2) x1: K codes are unsigned, offsets go elsewhere.
inline EntryFields unsigned_pair_fields() {
  EntryFields f;
  for (int i = 0; i < 16; ++i) {
    f.c0[i] = static_cast<float>(i & 3);
    f.c1[i] = static_cast<float>(i >> 2);
  }
  return f;
}

inline const Q2KActs& make_q2k_tables(const Q2KTable& w, const float* x, int64_t n) {
  thread_local Q2KActs a;
  thread_local std::vector<float> tf;  // one super-block's float entries (128 pairs, 16)
  a.n = n;
  a.tab.assign(static_cast<size_t>(n * w.sbs * 2048), 0);
  a.scale.assign(static_cast<size_t>(n * w.sbs), 0.0f);
  a.xstep.assign(static_cast<size_t>(n * w.sbs), 0.0f);
  a.xq.assign(static_cast<size_t>(n * w.sbs * 16), 0);
  const EntryFields f = unsigned_pair_fields();
  tf.resize(128 * 16);
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.cols;
    for (int64_t g = 0; g < w.sbs; ++g) {
      const float mx = fill_entries<true>(f, xt, w.cols, g * 128, (g + 1) * 128, tf.data());
      const float s = mx / 32767.0f, inv = mx > 0.0f ? 32767.0f / mx : 0.0f;
      a.scale[static_cast<size_t>(t * w.sbs + g)] = s;
      store_pair_steps(tf.data(), inv, a.tab.data() + (t * w.sbs + g) * 2048);
      float xs[16], xmax = 0.0f;
      for (int b = 0; b < 16; ++b) {
        double sum = 0.0;  // in double, as group_sum: the sum adds no error of the codes' order
        for (int64_t c = g * 256 + 16 * b; c < g * 256 + 16 * b + 16; ++c) sum += xt[c];
        xs[b] = static_cast<float>(sum);
        xmax = std::max(xmax, std::fabs(xs[b]));
      }
      const float xinv = xmax > 0.0f ? 32767.0f / xmax : 0.0f;
      a.xstep[static_cast<size_t>(t * w.sbs + g)] = xmax / 32767.0f;
      for (int b = 0; b < 16; ++b) a.xq[static_cast<size_t>((t * w.sbs + g) * 16 + b)] = static_cast<int16_t>(std::lrint(xs[b] * xinv));
    }
  }
  return a;
}

// The portable twin: field by field, the same int32 sums, the same float steps after them.
inline void q2k_twin(const Q2KTable& w, const Q2KActs& a, float* y, int threads) {
  mq::for_each_block_output(w, a.n, y, threads, [&](int64_t b, int64_t t, int l) {
    float out = 0.0f;
    for (int64_t g = 0; g < w.sbs; ++g) {
      const uint8_t* c = w.chunk(b, g);
      const int16_t* tab = a.tab.data() + (t * w.sbs + g) * 2048;
      const int16_t* xq = a.xq.data() + (t * w.sbs + g) * 16;
      int32_t acc = 0, macc = 0;
      for (int sl = 0; sl < 16; ++sl) {
        uint32_t word;
        std::memcpy(&word, c + Q2KTable::kCodes + 64 * sl + 4 * l, 4);
        for (int half = 0; half < 2; ++half) {  // sub-block sl / 2 * 2 + half
          const uint8_t sm = c[Q2KTable::kScales + 32 * (sl / 2) + 2 * l + half];
          int32_t s = 0;
          for (int k = 0; k < 4; ++k) s += tab[sl * 128 + k * 32 + half * 16 + ((word >> (16 * half + 4 * k)) & 0xF)];
          acc += (sm & 0xF) * s;
          if (sl % 2 == 0) macc += (sm >> 4) * xq[sl / 2 * 2 + half];
        }
      }
      uint16_t d, dmin;
      std::memcpy(&d, c + Q2KTable::kD + 2 * l, 2);
      std::memcpy(&dmin, c + Q2KTable::kDmin + 2 * l, 2);
      const size_t tg = static_cast<size_t>(t * w.sbs + g);
      out = std::fma(static_cast<float>(acc), a.scale[tg] * mq::f16_to_f32(d), out);
      out = std::fma(-static_cast<float>(macc), a.xstep[tg] * mq::f16_to_f32(dmin), out);
    }
    return out;
  });
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
// R blocks for token t: per super-block, per sub-block pair, its two steps' 8 table registers, then block by block
// the pair's scale bytes (sc and m of both sub-blocks per row) and its two code words through the tables;
// scaled once per super-block.
template <int R>
void q2k_tile(const Q2KTable& w, int64_t b0, const Q2KActs& a, int64_t t, float* y) {
  const __m512i low4 = _mm512_set1_epi16(0x000F), odd16 = _mm512_set1_epi32(0x00100000);
  __m512 out[R];
  for (int r = 0; r < R; ++r) out[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < w.sbs; ++g) {
    const int16_t* tab = a.tab.data() + (t * w.sbs + g) * 2048;
    const int16_t* xq = a.xq.data() + (t * w.sbs + g) * 16;
    const uint8_t* cp[R];
    __m512i acc[R], macc[R];
    for (int r = 0; r < R; ++r) {
      cp[r] = w.chunk(b0 + r, g);
      acc[r] = _mm512_setzero_si512();
      macc[r] = _mm512_setzero_si512();
    }
    for (int pr = 0; pr < 8; ++pr) {
      __m512i table[8];  // steps 2 pr, 2 pr + 1
      for (int k = 0; k < 8; ++k) table[k] = _mm512_load_si512(tab + pr * 256 + 32 * k);
      int32_t xpair;  // (X_2pr, X_2pr+1) codes
      std::memcpy(&xpair, xq + 2 * pr, 4);
      const __m512i xv = _mm512_set1_epi32(xpair);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        // Every line of the block's stream, 2 KB ahead: three lines per pair cover a chunk's 21 (8 x 192 >= 1344).
        for (int line = 0; line < 3; ++line) __builtin_prefetch(cp[r] + 192 * pr + 64 * line + mq::kBlockPrefetchBytes);
        // Row l's two bytes to dword l: (sc | m << 4 of sub-block 2 pr, the same of 2 pr + 1) as two words.
        const __m512i sm = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cp[r] + Q2KTable::kScales + 32 * pr)));
        const __m512i scv = _mm512_and_si512(sm, low4);
        macc[r] = _mm512_dpwssd_epi32(macc[r], _mm512_srli_epi16(sm, 4), xv);
        __m512i s = acc[r];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m512i code = _mm512_load_si512(cp[r] + Q2KTable::kCodes + 64 * (2 * pr + h));
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            const __m512i idx = _mm512_ternarylogic_epi32(_mm512_srli_epi16(code, 4 * k), low4, odd16, 0xEA);  // (A & B) | C
            s = _mm512_dpwssd_epi32(s, _mm512_permutexvar_epi16(idx, table[4 * h + k]), scv);
          }
        }
        acc[r] = s;
      }
    }
    const __m512 sg = _mm512_set1_ps(a.scale[static_cast<size_t>(t * w.sbs + g)]);
    const __m512 sx = _mm512_set1_ps(a.xstep[static_cast<size_t>(t * w.sbs + g)]);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cp[r] + Q2KTable::kD)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cp[r] + Q2KTable::kDmin)));
      out[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), _mm512_mul_ps(sg, d), out[r]);
      out[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(macc[r]), _mm512_mul_ps(sx, dmin), out[r]);
    }
  }
  store_blocks<R>(w, b0, t, out, y);
}
#endif

// y = W x for n tokens through 16-bit tables (use_isa: the AVX-512 tile where built, else the twin).
inline void gemm_q2k_table16(const Q2KTable& w, const float* x, int64_t n, float* y, int threads, bool use_isa) {
  const Q2KActs& a = make_q2k_tables(w, x, n);
#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  if (use_isa)  // an item's 8 blocks as two tiles of 4: 8 table registers, and each block's two sums, stay in registers
    return for_each_item(w, n, std::max(1, threads), [&](auto r, int64_t b0, int64_t t) {
      constexpr int R = decltype(r)::value;
      if constexpr (R == 8) {
        q2k_tile<4>(w, b0, a, t, y);
        q2k_tile<4>(w, b0 + 4, a, t, y);
      } else q2k_tile<R>(w, b0, a, t, y);
    });
#endif
  (void)use_isa;
  q2k_twin(w, a, y, std::max(1, threads));
}

// The bound's slack per activation, (n, sbs): (0.5 s_g + sx / 32)(1 + 2^-20), s_g and sx the tables' and the
// sub-block sums' steps for x (the header's bound).
inline std::vector<double> q2k_slack(const Q2KTable& w, const float* x, int64_t n) {
  const Q2KActs& a = make_q2k_tables(w, x, n);
  std::vector<double> slack(a.scale.size());
  for (size_t i = 0; i < slack.size(); ++i) slack[i] = (0.5 * a.scale[i] + a.xstep[i] / 32.0) * (1 + 0x1p-20);
  return slack;
}

// (rows, cols): |D_b| |q_j - zero| + |M_b| of every weight of a K tensor, what the table kernels' errors scale with
// (q2_k: the header's bound; q3_k, no mins: |w_j|).
inline std::vector<float> k_magnitudes(const mq::QTensor& q) {
  const mq::KFamily& f = mq::kfamily_of(q.scheme);
  std::vector<float> mag(static_cast<size_t>(q.rows * q.cols));
  mq::KParams p;
  uint8_t codes[mq::kSuperBlock];
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t g = 0; g < q.cols / mq::kSuperBlock; ++g) {
      f.unpack(q.row_codes(r) + g * f.block_bytes, p, codes);
      const mq::KGrid grid = mq::kgrid(f, p);
      for (int j = 0; j < mq::kSuperBlock; ++j)
        mag[static_cast<size_t>(r * q.cols + g * mq::kSuperBlock + j)] =
            std::fabs(grid.D[j / f.sub]) * static_cast<float>(std::abs(codes[j] - f.zero)) + std::fabs(grid.M[j / f.sub]);
    }
  return mag;
}

}  // namespace mqbench::lut
