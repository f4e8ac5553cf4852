// The K-quant families: each block's bytes against ggml's layout restated bit by bit here (independently of
// the families' pack code), pack / unpack round trips, the search never worse than round-to-nearest in the
// weighted error, quantization error in bands, GPTQ on the K grids below round-to-nearest in output error, the
// intN shrink-grid search, and a MiniGPT 256 wide run on K weights. ggml's own quantizer and dequantizer are
// compared in test_ggml_kquant.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/layers/linear.h"
#include "miniquant/format_table.h"
#include "miniquant/gptq.h"
#include "miniquant/grid_search.h"
#include "miniquant/half.h"
#include "miniquant/hessian.h"
#include "miniquant/kquant.h"
#include "miniquant/kquant_search.h"
#include "miniquant/random.h"
#include "minigpt/model.h"
#include "minigpt/quantize_model.h"
#include "act_codes.h"

using namespace mq;

namespace {

std::vector<const KFamily*> families() {
  std::vector<const KFamily*> out;
  for (const FormatTraits& f : format_table())
    if (f.kquant) out.push_back(f.kquant);
  return out;
}

struct Bit {
  int byte = 0, bit = 0;
};

// ggml-common.h's block layouts, restated as the place of every stored bit.
// Code j's bit k.
Bit code_bit(const KFamily& f, int j, int k) {
  const int h = j / 128, quarter = (j % 128) / 32, l = j % 32;
  switch (f.bits) {
    case 2: return {16 + 32 * h + l, 2 * quarter + k};  // scales[16], qs[64]
    case 3:
      if (k == 2) return {j % 32, j / 32};               // hmask[32]
      return {32 + 32 * h + l, 2 * quarter + k};         // qs[64]
    case 4: return {16 + 32 * (j / 64) + l, 4 * ((j % 64) / 32) + k};  // d, dmin, scales[12], qs[128]
    case 5:
      if (k == 4) return {16 + l, 2 * (j / 64) + (j % 64) / 32};       // qh[32]
      return {48 + 32 * (j / 64) + l, 4 * ((j % 64) / 32) + k};        // qs[128]
    case 6:
      if (k < 4) return {64 * h + l + 32 * (quarter % 2), 4 * (quarter / 2) + k};  // ql[128]
      return {128 + 32 * h + l, 2 * quarter + (k - 4)};                          // qh[64]
  }
  FAIL("no family of ", f.bits, " bits");
  return {};
}
// Bits of the stored scale field of sub-block b (q3_k stores sc + 32, q6_k the int8 byte).
int scale_field_bits(const KFamily& f) { return f.bits == 2 ? 4 : f.bits == 6 ? 8 : 6; }
Bit scale_bit(const KFamily& f, int b, int k) {
  switch (f.bits) {
    case 2: return {b, k};
    case 3:
      if (k < 4) return {96 + b % 8, (b < 8 ? 0 : 4) + k};
      return {96 + 8 + b % 4, 2 * (b / 4) + (k - 4)};
    case 4:
    case 5:
      if (b < 4) return {4 + b, k};
      if (k < 4) return {4 + b + 4, k};
      return {4 + b - 4, 6 + (k - 4)};
    case 6: return {192 + b, k};
  }
  return {};
}
Bit min_bit(const KFamily& f, int b, int k) {
  if (f.bits == 2) return {b, 4 + k};
  if (b < 4) return {4 + b + 4, k};  // q4_k, q5_k
  if (k < 4) return {4 + b + 4, 4 + k};
  return {4 + b, 6 + (k - 4)};
}
int d_offset(const KFamily& f) { return f.bits == 2 ? 80 : f.bits == 3 ? 108 : f.bits == 6 ? 208 : 0; }
int dmin_offset(const KFamily& f) { return f.bits == 2 ? 82 : 2; }

// The params whose stored scale and min fields are all zero bits.
KParams zero_fields(const KFamily& f) {
  KParams p;
  for (int b = 0; b < f.nsub(); ++b) p.sc[b] = f.bits == 3 ? -32 : 0;
  return p;
}

std::vector<int> set_bits(const std::vector<uint8_t>& block) {
  std::vector<int> bits;
  for (size_t i = 0; i < block.size(); ++i)
    for (int k = 0; k < 8; ++k)
      if (block[i] >> k & 1) bits.push_back(static_cast<int>(i) * 8 + k);
  return bits;
}

void expect_single(const KFamily& f, const KParams& p, const uint8_t* codes, Bit where) {
  std::vector<uint8_t> block(static_cast<size_t>(f.block_bytes));
  f.pack(p, codes, block.data());
  const std::vector<int> bits = set_bits(block);
  REQUIRE(bits.size() == 1);
  CHECK(bits[0] == where.byte * 8 + where.bit);
  KParams back;
  uint8_t out[kSuperBlock];
  f.unpack(block.data(), back, out);
  CHECK(back == p);
  CHECK(std::memcmp(out, codes, kSuperBlock) == 0);
}

// Blocks of varied shape: Gaussian, heavy tails, one outlier, all positive, all equal, all zero, tiny.
std::vector<float> varied_blocks(int count, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(count) * kSuperBlock);
  for (int b = 0; b < count; ++b) {
    float* v = x.data() + static_cast<size_t>(b) * kSuperBlock;
    const int kind = b % 7;
    for (int i = 0; i < kSuperBlock; ++i) {
      const double g = rng.normal();
      v[i] = kind == 0   ? static_cast<float>(g)
             : kind == 1 ? static_cast<float>(g * g * g)
             : kind == 2 ? static_cast<float>(0.1 * g)
             : kind == 3 ? static_cast<float>(std::fabs(g) + 0.5)
             : kind == 4 ? 0.75f
             : kind == 5 ? 0.0f
                         : static_cast<float>(1e-6 * g);
    }
    if (kind == 2) v[rng.below(kSuperBlock)] = 3.0f;
  }
  return x;
}

}  // namespace

TEST_CASE("K blocks: sizes, and every stored bit where ggml's layout puts it") {
  const std::map<int, int> bytes = {{2, 84}, {3, 110}, {4, 144}, {5, 176}, {6, 210}};
  REQUIRE(families().size() == 5);
  for (const KFamily* fp : families()) {
    const KFamily& f = *fp;
    CAPTURE(f.name);
    CHECK(f.block_bytes == bytes.at(f.bits));
    CHECK(storage_of(Scheme::kquant(f.bits), 256, 256).total() == 256 * bytes.at(f.bits));
    CHECK(bits_per_weight(Scheme::kquant(f.bits), 1, 256) == doctest::Approx(8.0 * f.block_bytes / 256));
    const uint8_t zeros[kSuperBlock] = {};
    for (int j = 0; j < kSuperBlock; ++j)
      for (int k = 0; k < f.bits; ++k) {
        uint8_t codes[kSuperBlock] = {};
        codes[j] = static_cast<uint8_t>(1 << k);
        CAPTURE(j);
        CAPTURE(k);
        expect_single(f, zero_fields(f), codes, code_bit(f, j, k));
      }
    for (int b = 0; b < f.nsub(); ++b)
      for (int k = 0; k < scale_field_bits(f); ++k) {
        KParams p = zero_fields(f);
        p.sc[b] = f.bits == 3 ? (1 << k) - 32 : f.bits == 6 ? static_cast<int8_t>(1 << k) : (1 << k);
        CAPTURE(b);
        CAPTURE(k);
        expect_single(f, p, zeros, scale_bit(f, b, k));
        if (f.has_min) {
          KParams pm = zero_fields(f);
          pm.m[b] = 1 << k;
          expect_single(f, pm, zeros, min_bit(f, b, k));
        }
      }
    for (int k = 0; k < 16; ++k) {
      KParams p = zero_fields(f);
      p.d = static_cast<uint16_t>(1 << k);
      expect_single(f, p, zeros, {d_offset(f) + k / 8, k % 8});
      if (f.has_min) {
        p = zero_fields(f);
        p.dmin = static_cast<uint16_t>(1 << k);
        expect_single(f, p, zeros, {dmin_offset(f) + k / 8, k % 8});
      }
    }
  }
}

TEST_CASE("K blocks: random params and codes survive pack / unpack, and decode as D (q - zero) - M") {
  Rng rng(3);
  for (const KFamily* fp : families()) {
    const KFamily& f = *fp;
    CAPTURE(f.name);
    for (int trial = 0; trial < 50; ++trial) {
      KParams p;
      p.d = f32_to_f16(static_cast<float>(0.01 * rng.normal()));
      p.dmin = f.has_min ? f32_to_f16(static_cast<float>(0.01 * std::fabs(rng.normal()))) : uint16_t{0};
      for (int b = 0; b < f.nsub(); ++b) {
        p.sc[b] = f.sc_lo + static_cast<int>(rng.below(static_cast<uint64_t>(f.sc_hi - f.sc_lo + 1)));
        p.m[b] = f.has_min ? static_cast<int>(rng.below(static_cast<uint64_t>(f.m_hi + 1))) : 0;
      }
      uint8_t codes[kSuperBlock], back_codes[kSuperBlock];
      for (auto& c : codes) c = static_cast<uint8_t>(rng.below(static_cast<uint64_t>(f.qmax() + 1)));
      std::vector<uint8_t> block(static_cast<size_t>(f.block_bytes));
      f.pack(p, codes, block.data());
      KParams back;
      f.unpack(block.data(), back, back_codes);
      REQUIRE(back == p);
      REQUIRE(std::memcmp(codes, back_codes, kSuperBlock) == 0);
      float out[kSuperBlock];
      kdequantize_block(f, block.data(), out);
      const float d = f16_to_f32(p.d), dmin = f16_to_f32(p.dmin);
      for (int i = 0; i < kSuperBlock; ++i) {
        const int b = i / f.sub;
        const float D = d * static_cast<float>(p.sc[b]), M = f.has_min ? dmin * static_cast<float>(p.m[b]) : 0.0f;
        REQUIRE(out[i] == D * static_cast<float>(codes[i] - f.zero) - M);
      }
    }
  }
}

TEST_CASE("K search: never worse than round-to-nearest in the weighted error, and better on the whole") {
  const std::vector<float> x = varied_blocks(70, 11);
  Rng rng(12);
  for (const KFamily* fp : families()) {
    const KFamily& f = *fp;
    CAPTURE(f.name);
    double rtn_total = 0.0, search_total = 0.0;
    for (int b = 0; b < 70; ++b) {
      const float* v = x.data() + static_cast<size_t>(b) * kSuperBlock;
      float imp[kSuperBlock], wt[kSuperBlock];
      for (int i = 0; i < kSuperBlock; ++i) imp[i] = b % 3 == 0 ? 1.0f : i % 17 == 0 ? 0.0f : static_cast<float>(std::exp(rng.normal()));
      kerror_weights(v, b % 2 ? imp : nullptr, wt);
      const double rtn = kblock_error(f, kchoose_params(f, v, wt, false), v, wt);
      const double found = kblock_error(f, kchoose_params(f, v, wt, true), v, wt);
      CAPTURE(b);
      CHECK(found <= rtn);
      rtn_total += rtn;
      search_total += found;
    }
    MESSAGE(f.name, ": weighted error, search / round-to-nearest = ", search_total / rtn_total);
    CHECK(search_total < 0.9 * rtn_total);
  }
}

TEST_CASE("K quantization: error in bands on Gaussian weights, fewer bits more error, reference = parallel bytes") {
  const int64_t rows = 16, cols = 1024;
  const std::vector<float> w = gaussian_matrix(rows, cols, 5);
  double prev = 1e9;
  for (const KFamily* fp : families()) {
    const Scheme s = Scheme::kquant(fp->bits);
    CAPTURE(s.name());
    const QTensor q = quantize(w.data(), rows, cols, s);
    const QTensor qr = quantize_ref(w.data(), rows, cols, s);
    CHECK(q.codes == qr.codes);
    CHECK(q.scales.empty());
    const std::vector<float> d = dequantize(q);
    double e = 0.0;
    for (size_t i = 0; i < w.size(); ++i) e += (double(w[i]) - d[i]) * (double(w[i]) - d[i]);
    const double rms = std::sqrt(e / static_cast<double>(w.size()));
    // Uniform-noise estimate of a b-bit grid over a Gaussian's range (~6.5 sigma in a 16-32 wide sub-block):
    // rms ~ range / 2^b / sqrt(12); the band allows a factor ~2 either way around what was measured.
    const double step = 6.5 / std::ldexp(1.0, fp->bits);
    MESSAGE(s.name(), ": rms error ", rms, " (", rms / (step / std::sqrt(12.0)), " of a uniform quantizer's)");
    CHECK(rms < 1.2 * step / std::sqrt(12.0));
    CHECK(rms > 0.3 * step / std::sqrt(12.0));
    CHECK(rms < prev);
    prev = rms;
    for (int64_t r = 0; r < rows; r += 5)
      for (int64_t c = 0; c < cols; c += 97) CHECK(q.value_at(r, c) == d[static_cast<size_t>(r * cols + c)]);
  }
}

TEST_CASE("K quantization: bad input is refused with one line") {
  std::vector<float> w = gaussian_matrix(2, 256, 1);
  CHECK_THROWS_WITH_AS(quantize(w.data(), 2, 100, Scheme::kquant(4), "blk"),
                       "tensor 'blk' (2x100): scheme q4_k: its 256-weight super-blocks do not divide the input width 100",
                       UsageError);
  w[300] = std::nanf("");
  CHECK_THROWS_WITH_AS(quantize(w.data(), 2, 256, Scheme::kquant(4), "blk"), "tensor 'blk': non-finite weight nan at index (1, 44)", Error);
  w[300] = 1e9f;  // a sub-block scale of ~1e9 / 63 does not fit fp16
  try {
    quantize(w.data(), 2, 256, Scheme::kquant(4), "blk");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).starts_with("tensor 'blk', row 1, block 0: K-quant block factor"));
  }
  // A loaded block whose fp16 factor is NaN.
  QTensor q = quantize(gaussian_matrix(2, 256, 1).data(), 2, 256, Scheme::kquant(6));
  q.codes[q.row_bytes() + 208] = 0xff;
  q.codes[q.row_bytes() + 209] = 0x7f;  // d = fp16 NaN
  CHECK_THROWS_WITH_AS(kcheck_blocks(q, "file x"), "file x: row 1, block 0: a q6_k block factor is NaN or infinite", Error);
}

TEST_CASE("GPTQ on the K grids: output error below round-to-nearest's, with and without act-order") {
  const int64_t rows = 24, cols = 256, samples = 512;
  const std::vector<float> w = gaussian_matrix(rows, cols, 21);
  // Correlated inputs with uneven column scales (what makes GPTQ's error feedback pay).
  std::vector<float> x = gaussian_matrix(samples, cols, 22);
  for (int64_t t = 0; t < samples; ++t)
    for (int64_t c = cols - 1; c > 0; --c) x[t * cols + c] = static_cast<float>((0.6 * x[t * cols + c] + 0.8 * x[t * cols + c - 1]) * (1 + c % 7));
  Hessian hs(cols);
  hs.add(x.data(), samples);
  const Eigen::MatrixXd h = hs.matrix();
  for (const KFamily* fp : families()) {
    const Scheme s = Scheme::kquant(fp->bits);
    CAPTURE(s.name());
    const double rtn = output_error(w.data(), quantize(w.data(), rows, cols, s), h);
    std::vector<float> imp(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j) imp[static_cast<size_t>(j)] = static_cast<float>(h(j, j));
    const double imatrix = output_error(w.data(), quantize(w.data(), rows, cols, s, {.search = true, .importance = imp.data()}), h);
    for (const bool act : {false, true}) {
      const GptqResult g = gptq_quantize(w.data(), rows, cols, h, s, {.act_order = act, .search = Search::importance});
      const double e = output_error(w.data(), g.q, h);
      MESSAGE(s.name(), std::string(act ? " act-order" : ""), ": output error GPTQ / RTN = ", e / rtn, " (RTN -imatrix / RTN = ", imatrix / rtn, ")");
      CHECK(e < 0.8 * rtn);
      CHECK(e < imatrix);
      // The blocks decode through the same grid GPTQ rounded to: requantizing them changes nothing.
      for (int64_t r = 0; r < rows; r += 7) {
        float blk[kSuperBlock];
        kdequantize_block(*fp, g.q.row_codes(r), blk);
        for (int i = 0; i < kSuperBlock; i += 31) CHECK(g.q.value_at(r, i) == blk[i]);
      }
    }
    CHECK(imatrix < rtn);
  }
}

TEST_CASE("an importance per weight: each row's blocks read their own slice; a column importance repeated per row gives the same bytes") {
  const int64_t rows = 6, cols = 512;
  const std::vector<float> w = gaussian_matrix(rows, cols, 31);
  Rng rng(32);
  std::vector<float> col(static_cast<size_t>(cols)), per(static_cast<size_t>(rows * cols));
  for (auto& v : col) v = static_cast<float>(std::exp(rng.normal()));
  for (int64_t r = 0; r < rows; ++r) std::copy(col.begin(), col.end(), per.begin() + r * cols);
  for (const KFamily* fp : families()) {
    const Scheme s = Scheme::kquant(fp->bits);
    CAPTURE(s.name());
    const QTensor a = quantize(w.data(), rows, cols, s, {.search = true, .importance = col.data()});
    const QTensor b = quantize(w.data(), rows, cols, s, {.search = true, .importance = per.data(), .importance_per_weight = true});
    CHECK(a.codes == b.codes);
    CHECK(quantize_ref(w.data(), rows, cols, s, {.search = true, .importance = per.data(), .importance_per_weight = true}).codes == b.codes);
    // Row 3 alone weighted differently: only row 3's bytes may change, and they do.
    std::vector<float> odd = per;
    for (int64_t c = 0; c < cols; ++c) odd[static_cast<size_t>(3 * cols + c)] = static_cast<float>(std::exp(3.0 * rng.normal()));
    const QTensor c = quantize(w.data(), rows, cols, s, {.search = true, .importance = odd.data(), .importance_per_weight = true});
    for (int64_t r = 0; r < rows; ++r) {
      const bool same = std::memcmp(c.row_codes(r), b.row_codes(r), static_cast<size_t>(b.row_bytes())) == 0;
      CHECK(same == (r != 3));
    }
  }
  // An integer grid's search takes one importance per input column only.
  CHECK_THROWS_AS(quantize(w.data(), rows, cols, Scheme::integer(4, 64), {.search = true, .importance = per.data(), .importance_per_weight = true}),
                  UsageError);
  CHECK_THROWS_AS(quantize_ref(w.data(), rows, cols, Scheme::integer(4, 64), {.search = true, .importance = per.data(), .importance_per_weight = true}),
                  UsageError);
}

TEST_CASE("intN shrink-grid search: never worse than the plain grid in its norm; same bytes both quantizers") {
  Rng rng(4);
  for (const char* name : {"int2-g64", "int3-g64", "int4-g32-asym", "int2-g64-asym", "int4-per-channel", "int8-per-tensor"}) {
    const Scheme s = Scheme::parse(name);
    const std::string sname = name;  // doctest prints a const char* as its address
    CAPTURE(sname);
    const int64_t rows = 6, cols = 256;
    const std::vector<float> w = gaussian_matrix(rows, cols, 31);
    std::vector<float> imp(static_cast<size_t>(cols));
    for (auto& v : imp) v = static_cast<float>(std::exp(rng.normal()));
    for (const float* importance : {static_cast<const float*>(nullptr), static_cast<const float*>(imp.data())}) {
      const QuantizeOptions o{.search = true, .importance = importance};
      const QTensor a = quantize(w.data(), rows, cols, s, o), b = quantize_ref(w.data(), rows, cols, s, o);
      CHECK(a.codes == b.codes);
      CHECK(a.scales == b.scales);
      CHECK(a.zeros == b.zeros);
      const QTensor plain = quantize(w.data(), rows, cols, s);
      const int64_t span = s.group == kPerTensor ? rows * cols : s.group_width(cols);
      for (int64_t i0 = 0; i0 < rows * cols; i0 += span) {
        // The search's score of what each tensor stores (value_at: the decoded weight), recomputed here.
        auto stored_error = [&](const QTensor& q) {
          double e = 0.0;
          for (int64_t i = i0; i < i0 + span; ++i) {
            const double d = std::fabs(double(w[static_cast<size_t>(i)]) - q.value_at(i / cols, i % cols));
            e += (importance ? importance[i % cols] : 1.0) * std::pow(d, kSearchNorm);
          }
          return e;
        };
        // 1e-5: the search ranks its candidates with float powf, this sum is double.
        CHECK(stored_error(a) <= stored_error(plain) * (1 + 1e-5));
      }
    }
  }
  // Ternary int2 (codes -1, 0, 1): the absmax grid rounds most weights to 0; the search's shrunk grid does not.
  const std::vector<float> w = gaussian_matrix(32, 256, 8);
  auto rms = [&](const QTensor& q) {
    const std::vector<float> d = dequantize(q);
    double e = 0.0;
    for (size_t i = 0; i < w.size(); ++i) e += (double(w[i]) - d[i]) * (double(w[i]) - d[i]);
    return std::sqrt(e / static_cast<double>(w.size()));
  };
  const double plain = rms(quantize(w.data(), 32, 256, Scheme::integer(2, 64)));
  const double searched = rms(quantize(w.data(), 32, 256, Scheme::integer(2, 64), {.search = true}));
  MESSAGE("int2-g64 rms error, plain ", plain, ", searched ", searched);
  CHECK(searched < 0.85 * plain);
}

TEST_CASE("intN search's code -(qmax + 1): every kernel, QuantizedLinear and the GGUF export read it") {
  // Round-to-nearest on a symmetric grid never stores the field 0 (the code -(qmax + 1)); the search does, for a
  // group whose largest weight is negative (grid_search.cpp). Every consumer of the fields must decode it as
  // s (0 - z): the weight-only kernels, the +a8 / +a16 block layout (fields as u8 against int8 activations), the
  // bf16 block tile in QuantizedLinear (int8 .. int2), and GGUF's Q8_0 / Q4_0 (int8 -128, nibble 0).
  for (const char* name : {"int8-per-channel", "int8-g32", "int4-g64", "int4-g32", "int3-g64", "int2-g64"}) {
    const std::string sname = name;  // a std::string: doctest prints a const char* as its address
    CAPTURE(sname);
    const Scheme s = Scheme::parse(name);
    const bool gguf_type = s.bits >= 4;  // int3 / int2: no GGUF type
    const int64_t rows = 37, cols = 256, n = 3;  // 37: two full 16-row blocks and a partial one
    std::vector<float> w = gaussian_matrix(rows, cols, 77);
    for (int64_t r = 0; r < rows; r += 2)  // even rows: make each group's largest weight negative
      for (int64_t k = 0; k < cols; ++k) w[r * cols + k] = -std::fabs(w[r * cols + k]) * (k % 7 == 0 ? 1.5f : 1.0f);
    const QTensor q = quantize(w.data(), rows, cols, s, {.search = true});
    int64_t low = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) low += q.field_at(r, k) == 0;
    MESSAGE(sname << ": " << low << " fields at -(qmax + 1)");
    REQUIRE(low > 0);
    const std::vector<float> x = gaussian_matrix(n, cols, 5);
    const std::vector<float> d = dequantize(q);
    // Weight-only, gemm() on the QTensor and QuantizedLinear (the 16-row bf16 tile where the build has it):
    // within 2^-16 sum |w x| (the bf16 split of x) plus float rounding, gamma(cols + 4) sum |w x|, of fp64.
    std::vector<float> y(static_cast<size_t>(n * rows)), yl(y.size());
    gemm(q, x.data(), n, y.data(), {.threads = 2});
    QuantizedLinear(q).forward(x.data(), n, yl.data());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0.0, mag = 0.0;
        for (int64_t k = 0; k < cols; ++k) {
          exact += double(d[r * cols + k]) * x[t * cols + k];
          mag += std::fabs(double(d[r * cols + k]) * x[t * cols + k]);
        }
        const double bound = (std::ldexp(1.0, -16) + actcodes::gamma(cols + 4)) * mag + 1e-30;
        CHECK(std::fabs(y[t * rows + r] - exact) <= bound);
        CHECK(std::fabs(yl[t * rows + r] - exact) <= bound);
      }
    // +a8 / +a16 on the block layout against the dynamic reference, within the bound of test_blocked.
    for (const ActMode act : {ActMode::dynamic_int8, ActMode::dynamic_int16}) {
      std::vector<float> yd(y.size()), yr(y.size());
      gemm(q, x.data(), n, yd.data(), {.threads = 2, .act = act});
      gemm_dynamic_ref(q, x.data(), n, yr.data(), act);
      const std::vector<double> bound = actcodes::dynamic_bounds(q, x.data(), n, act);
      for (size_t i = 0; i < yd.size(); ++i) CHECK(std::fabs(double(yd[i]) - yr[i]) <= bound[i]);
    }
    if (!gguf_type) continue;
    // GGUF: Q8_0 / Q4_0 blocks decode to the same bits as our dequantization.
    const gguf::Tensor g = gguf::from_qtensor(q, "w");
    const std::vector<float> gd = gguf::dequantize(g);
    CHECK(std::memcmp(gd.data(), d.data(), d.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a MiniGPT 256 wide runs K weights: logits match the model with the dequantized weights") {
  using namespace minigpt;
  const ModelConfig c{.vocab_size = 31, .n_ctx = 16, .d_model = 256, .n_layer = 1, .n_head = 2, .d_ff = 1024};
  // One family through the search alone, one through the importance-weighted search and GPTQ (the other
  // families run the same generic code; test_kernels covers every family's kernel), and one with int8
  // activations: each activation moves by at most absmax / 254, so there the match is 2% of the logit scale
  // (test_quantized_model's bound for the int families' +a8; a wrong kernel gives O(1) differences).
  for (const auto& entry : {std::pair<std::string, double>{"q3_k", 1e-4}, {"q5_k-imatrix-gptq", 1e-4}, {"q4_k+a8", 0.02}}) {
    const std::string& name = entry.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    const double tol = entry.second;
    CAPTURE(name);
    Model q(c, 3), ref(c, 3);
    Rng rng(4);
    for (size_t i = 0; i < q.num_params(); ++i) {
      const float v = static_cast<float>(0.05 * rng.normal());
      q.params()[i] += v;
      ref.params()[i] += v;
    }
    std::vector<int32_t> toks(16);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>((i * 5 + 3) % 31);
    const QuantPlan plan = QuantPlan::uniform(name);
    const ModelQuantReport rep = quantize_model(q, plan, {toks});
    for (const auto& [lname, t] : stored_weights(q)) {
      CHECK(t.scheme.is_kquant());
      const std::vector<float> d = dequantize(t);
      std::copy(d.begin(), d.end(), ref.param(lname + ".weight"));
    }
    for (const LinearQuantReport& l : rep.layers)
      if (l.has_hessian) CHECK(l.output_error < l.output_error_rtn);
    const std::vector<float> a = q.logits(toks);
    QuantPlan half;  // fp32 Linears (the dequantized weights), the embedding in fp16 as the K plan stores it
    half.embedding = Scheme::fp16();
    quantize_model(ref, half);
    const std::vector<float> b = ref.logits(toks);
    double diff = 0.0, mag = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
      mag = std::max(mag, std::fabs(double(b[i])));
    }
    CHECK(diff <= tol * (1 + mag));
    if (tol > 1e-4) CHECK(diff > 1e-6 * (1 + mag));  // the activations really were quantized
  }
}
