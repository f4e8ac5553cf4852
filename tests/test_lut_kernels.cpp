// The lookup-table kernels of bench/ (T-MAC's idea, issue 56; bench-only, vs_ggml times them against ggml's q2_K /
// q3_K): each AVX-512 tile equal to its portable twin bit for bit, and both W x within the bound their headers
// derive, against fp64 sums of the dequantized weights; the int3 planes hold the int3 codes, the q2_k chunks its
// blocks; a corrupted plane bit, code or scale leaves the bound (so the bound can catch a layout error).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "lut3_kernel16.h"
#include "lut_kernel.h"
#include "lut_kernel16.h"
#include "lut_q3k_kernel16.h"
#include "miniquant/error.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"

namespace {

using namespace mq;

std::vector<float> normal(int64_t count, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& f : v) f = static_cast<float>(rng.normal());
  return v;
}

// The largest |y - W x| / bound over every output, W the dequantized q (rows, cols), x (n, cols); the bound per output
// is 1.01 (sum_j |w_j| e_j + (cols + 8) 2^-24 sum_j |w_j| (|x_j| + e_j)), e_j = slack(t, j) (as vs_ggml's verify.h).
// mags: (rows, cols) what each weight's errors scale with in place of |w_j| (the q2_k table's |D| q + |M|), or null.
template <class Slack>
double worst_ratio(const QTensor& q, const std::vector<float>& x, int64_t n, const std::vector<float>& y, Slack slack,
                   const std::vector<float>* mags = nullptr) {
  const std::vector<float> deq = dequantize(q);  // (rows, cols)
  double worst = 0.0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < q.rows; ++r) {
      double ref = 0.0, werr = 0.0, mag = 0.0;
      for (int64_t j = 0; j < q.cols; ++j) {
        const double w = deq[static_cast<size_t>(r * q.cols + j)], xj = x[static_cast<size_t>(t * q.cols + j)], e = slack(t, j);
        const double m = mags ? (*mags)[static_cast<size_t>(r * q.cols + j)] : std::fabs(w);
        ref += w * xj;
        werr += m * e;
        mag += m * (std::fabs(xj) + e);
      }
      const double bound = 1.01 * (werr + static_cast<double>(q.cols + 8) * 0x1p-24 * mag);
      const double err = std::fabs(static_cast<double>(y[static_cast<size_t>(t * q.rows + r)]) - ref);
      worst = std::max(worst, bound > 0.0 ? err / bound : (err > 0.0 ? 1e30 : 0.0));
    }
  return worst;
}

}  // namespace

TEST_CASE("int2 table kernels: fp32 and 16-bit tables, tile equal to twin, within their bounds") {
  for (bool sym : {true, false})
    for (int64_t n : {1, 3}) {
      const int64_t rows = 40, cols = 320;  // 3 blocks, the last one partly rows; 5 groups
      const QTensor q = quantize(normal(rows * cols, 42).data(), rows, cols, Scheme::integer(2, 64, sym));
      const BlockedCodes b = pack_blocked(q);
      const std::vector<float> x = normal(n * cols, 7);
      std::vector<float> tile(static_cast<size_t>(n * rows)), twin(tile.size());
      mqbench::lut::gemm_lut(b, x.data(), n, tile.data(), 2, true);
      mqbench::lut::gemm_lut(b, x.data(), n, twin.data(), 1, false);
      CHECK(tile == twin);
      CHECK(worst_ratio(q, x, n, tile, [](int64_t, int64_t) { return 0.0; }) <= 1.0);
      if (!sym) continue;  // the 16-bit tables' bound holds for symmetric schemes
      mqbench::lut::gemm_lut16(b, x.data(), n, tile.data(), 2, true);
      mqbench::lut::gemm_lut16(b, x.data(), n, twin.data(), 1, false);
      CHECK(tile == twin);
      const std::vector<double> slack = mqbench::lut::table16_slack(b, x.data(), n);  // 0.5 s_g (1 + 2^-20)
      CHECK(worst_ratio(q, x, n, tile, [&](int64_t t, int64_t j) { return slack[static_cast<size_t>(t * b.groups + j / b.group_k)]; }) <= 1.0);
    }
}

TEST_CASE("int3 planes: the codes, the tile equal to its twin, W x within sum |w| s_g") {
  for (int64_t rows : {16, 40})
    for (int64_t n : {1, 2, 5}) {
      const int64_t cols = 320;
      const QTensor q = quantize(normal(rows * cols, 42).data(), rows, cols, Scheme::integer(3, 64));
      const BlockedCodes b = pack_blocked(q);
      const BlockedCodes p = mqbench::lut::pack_planes3(b);
      CHECK(p.bytes() == b.bytes());
      // Every code back from the planes, read as the header's layout says.
      bool same = true;
      for (int64_t blk = 0; blk < b.blocks; ++blk)
        for (int l = 0; l < 16; ++l)
          for (int64_t c = 0; c < b.cols_pad; ++c) {
            const uint8_t* d = p.block_codes(blk) + (c / 32) * 192;
            const int cc = static_cast<int>(c % 32), st = cc / 16, c16 = cc % 16;
            const int lo = (d[64 * st + 4 * l + c16 / 4] >> (2 * (c16 % 4))) & 3;
            const int bit = 16 * (c16 / 8) + c16 % 8 + 8 * st;
            const int hi = (d[128 + 4 * l + bit / 8] >> (bit % 8)) & 1;
            same = same && lo + 4 * hi == block_field(b.block_codes(blk), Int3Family::slot(l, c), 3);
          }
      CHECK(same);
      const std::vector<float> x = normal(n * cols, 7);
      std::vector<float> tile(static_cast<size_t>(n * rows)), twin(tile.size());
      mqbench::lut::gemm_lut3_16(p, x.data(), n, tile.data(), 2, true);
      mqbench::lut::gemm_lut3_16(p, x.data(), n, twin.data(), 1, false);
      CHECK(tile == twin);
      const std::vector<double> s3 = mqbench::lut::table16_slack(p, x.data(), n);  // s_g (1 + 2^-20): two lookups per weight
      const auto slack = [&](int64_t t, int64_t j) { return s3[static_cast<size_t>(t * b.groups + j / b.group_k)]; };
      const double worst = worst_ratio(q, x, n, tile, slack);
      CHECK(worst <= 1.0);
      CHECK(worst > 0.01);  // the bound is not so loose that any answer passes (measured: 0.045 - 0.062)
      // One hi bit flipped (row 0, column 5: its weight moves by 4 scales) leaves the bound.
      BlockedCodes bad = p;
      bad.codes[128 + 0] = static_cast<uint8_t>(bad.codes[128] ^ (1u << 5));
      mqbench::lut::gemm_lut3_16(bad, x.data(), n, tile.data(), 1, true);
      CHECK(worst_ratio(q, x, n, tile, slack) > 1.0);
    }
}

TEST_CASE("int3 planes refuse what they cannot hold") {
  const std::vector<float> w = normal(32 * 64, 42);
  CHECK_THROWS_AS(mqbench::lut::pack_planes3(pack_blocked(quantize(w.data(), 32, 64, Scheme::integer(3, 64, false)))), UsageError);
  CHECK_THROWS_AS(mqbench::lut::pack_planes3(pack_blocked(quantize(w.data(), 32, 64, Scheme::integer(2, 64)))), UsageError);
  CHECK_THROWS_AS(mqbench::lut::pack_planes3(pack_blocked(quantize(w.data(), 32, 64, Scheme::integer(3, 16)))), UsageError);
}

TEST_CASE("K table kernels (q2_k, q3_k): their blocks in 16-row chunks, the tile equal to its twin, within the bound") {
  for (const char* name : {"q2_k", "q3_k"})
    for (int64_t rows : {16, 40})
      for (int64_t n : {1, 2, 5}) {
        CAPTURE(name);
        const int64_t cols = 512;  // two super-blocks
        const QTensor q = quantize(normal(rows * cols, 42).data(), rows, cols, Scheme::parse(name));
        const mqbench::lut::KTable16 w = mqbench::lut::pack_ktable16(q);
        const bool q3 = std::string(name) == "q3_k";
        // Byte for byte as many as the rows' blocks (q3_k: 4 more per row and super-block, its scales in whole bytes).
        CHECK(w.bytes() == (rows + 15) / 16 * 16 * (q.row_bytes() + (q3 ? 4 * cols / 256 : 0)));
        const std::vector<float> x = normal(n * cols, 7);
        std::vector<float> tile(static_cast<size_t>(n * rows)), twin(tile.size());
        mqbench::lut::gemm_ktable16(w, x.data(), n, tile.data(), 2, true);
        mqbench::lut::gemm_ktable16(w, x.data(), n, twin.data(), 1, false);
        CHECK(tile == twin);
        const std::vector<double> sg = mqbench::lut::ktable16_slack(w, x.data(), n);
        const auto slack = [&](int64_t t, int64_t j) { return sg[static_cast<size_t>(t * w.sbs() + j / 256)]; };
        const std::vector<float> mags = mqbench::lut::k_magnitudes(q);  // q2_k: |D| q + |M|; q3_k: |w|
        const double worst = worst_ratio(q, x, n, tile, slack, &mags);
        CHECK(worst <= 1.0);
        CHECK(worst > 0.003);  // the bound is not so loose that any answer passes (measured: q2_k 0.009-0.017, q3_k 0.019-0.022)
        // One lo code moved by one step (row 0, column 5), one sub-block's scale by 4 (row 0, sub-block 1), and for
        // q3_k one hi bit (row 0, sub-block 1's column 3: its weight moves by 4 D) each leave the bound.
        std::vector<int64_t> bytes = {1, q3 ? mqbench::lut::Q3KTable::kScales + 1 : mqbench::lut::Q2KTable::kScales + 1};
        if (q3) bytes.push_back(mqbench::lut::Q3KTable::kHi + 2);
        for (int64_t at : bytes) {
          mqbench::lut::KTable16 bad = w;
          std::visit([&](auto& t) { t.data[static_cast<size_t>(at)] ^= static_cast<uint8_t>(at == 1 ? 1u << 2 : at == mqbench::lut::Q3KTable::kHi + 2 ? 1u << 3 : 0x04); }, bad.t);
          mqbench::lut::gemm_ktable16(bad, x.data(), n, tile.data(), 1, true);
          CHECK(worst_ratio(q, x, n, tile, slack, &mags) > 1.0);
        }
      }
  const std::vector<float> w = normal(16 * 256, 42);
  CHECK_THROWS_AS(mqbench::lut::pack_ktable16(quantize(w.data(), 16, 256, Scheme::parse("q4_k"))), UsageError);
}
