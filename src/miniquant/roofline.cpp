// The probes behind roofline.h. The arithmetic probes keep 8-10 independent accumulator chains per
// thread, enough to cover the instruction latency (4-5 cycles) at 2 issues per cycle.
#include "miniquant/roofline.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include <xsimd/xsimd.hpp>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace mq {

#if defined(__AVX512F__)
namespace {
// Sum of the 16 lanes through memory: gcc 12's _mm512_reduce_add_* reads an uninitialised register
// (-Wuninitialized on `__Y` in its own header); the probes only need the sum to keep the chains alive.
float lane_sum(__m512 v) {
  alignas(64) float a[16];
  _mm512_store_ps(a, v);
  float s = 0;
  for (float x : a) s += x;
  return s;
}
int lane_sum(__m512i v) {
  alignas(64) int32_t a[16];
  _mm512_store_si512(a, v);
  int32_t s = 0;
  for (int32_t x : a) s += x;
  return s;
}
}  // namespace
#endif

// One pass pattern of the read probe: each thread's slice read as `streams` equal sub-slices in lockstep
// (one block of each per step), so `streams` = 1 is a plain STREAM-like sum.
static Rate read_streams(const std::vector<float>& buf, int64_t nblk, int64_t kBlk, int64_t passes, int threads, int streams) {
  using B = xsimd::batch<float>;
  volatile float sink = 0.0f;
  const Timing t = time_call([&] {
#pragma omp parallel num_threads(threads)
    {
      const int id = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t lo = nblk * id / nt, hi = nblk * (id + 1) / nt;
      const int64_t per = (hi - lo) / streams;  // blocks per sub-slice; the rest is read alone at the end
      B a(0.0f), b(0.0f), c(0.0f), d(0.0f);  // 4 chains: the adds never limit the loads
      auto block = [&](int64_t blk) {
        const float* p = buf.data() + blk * kBlk;
        a += B::load_unaligned(p);
        b += B::load_unaligned(p + B::size);
        c += B::load_unaligned(p + 2 * B::size);
        d += B::load_unaligned(p + 3 * B::size);
      };
      for (int64_t pass = 0; pass < passes; ++pass) {
        for (int64_t i = 0; i < per; ++i)
          for (int s = 0; s < streams; ++s) block(lo + s * per + i);
        for (int64_t blk = lo + streams * per; blk < hi; ++blk) block(blk);
      }
      sink = sink + xsimd::hadd((a + b) + (c + d));
    }
  });
  return rate_of(static_cast<double>(nblk * kBlk) * 4.0 * static_cast<double>(passes), t);
}

Rate read_bandwidth(int64_t bytes, int threads) {
  using B = xsimd::batch<float>;
  constexpr int64_t kBlk = 4 * static_cast<int64_t>(B::size);  // floats per block: 4 vectors
  const int64_t nblk = std::max<int64_t>(bytes / 4 / kBlk, threads);
  // At least 64 MiB read per call, so small sizes are not dominated by the parallel region's start.
  const int64_t passes = std::max<int64_t>(1, (int64_t{64} << 20) / (nblk * kBlk * 4));
  std::vector<float> buf(static_cast<size_t>(nblk * kBlk), 1.0f);
  // The better of one stream per thread and four: from DRAM one stream leaves bandwidth unused on some
  // cores (Zen 5, 1 thread, 512 MiB: 24.5 GB/s with one, 29 with four), and the kernels read 4-16 row
  // streams at once (decode tiles, 16-row blocks), which read faster than a one-stream probe said they could.
  const Rate one = read_streams(buf, nblk, kBlk, passes, threads, 1);
  const Rate four = read_streams(buf, nblk, kBlk, passes, threads, 4);
  return four.median > one.median ? four : one;
}

Rate fma_peak(int threads) {
  using B = xsimd::batch<float>;
  constexpr int64_t kIters = 1 << 16;
  volatile float sink = 0.0f;
  const Timing t = time_call([&] {
#pragma omp parallel num_threads(threads)
    {
      B acc[10];
      for (int k = 0; k < 10; ++k) acc[k] = B(static_cast<float>(k));
      const B m(0.999f), a(0.001f);
      for (int64_t i = 0; i < kIters; ++i)
        for (auto& v : acc) v = xsimd::fma(v, m, a);
      B s = acc[0];
      for (int k = 1; k < 10; ++k) s += acc[k];
      sink = sink + xsimd::hadd(s);
    }
  });
  return rate_of(static_cast<double>(threads) * kIters * 10 * 2 * B::size, t);
}

// Ten independent accumulators a0..a9 (locals of the caller) advanced by one asm statement: the
// compiler may neither drop nor merge the instructions, and the accumulators stay in registers.
// (One asm statement per element of an accumulator array let gcc 12 move them through the stack
// between statements: the VNNI probe then read 370 GOP/s per thread where the core does ~940.)
#define MQ_TEN_CHAINS(INSN, U, B)                                                                              \
  asm volatile(INSN " %11, %10, %0\n\t" INSN " %11, %10, %1\n\t" INSN " %11, %10, %2\n\t" INSN " %11, %10, %3\n\t" \
               INSN " %11, %10, %4\n\t" INSN " %11, %10, %5\n\t" INSN " %11, %10, %6\n\t" INSN " %11, %10, %7\n\t" \
               INSN " %11, %10, %8\n\t" INSN " %11, %10, %9"                                                  \
               : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9) \
               : "v"(U), "v"(B))

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
bool has_vnni_probe() { return true; }
Rate vnni_peak(int threads, int vector_bits) {
  constexpr int64_t kIters = 1 << 16;
  volatile int32_t sink = 0;
  // 4 bytes x 2 ops per lane per instruction.
  const Timing t = time_call([&] {
#pragma omp parallel num_threads(threads)
    {
      if (vector_bits == 512) {
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
        const __m512i u = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
        for (int64_t i = 0; i < kIters; ++i) MQ_TEN_CHAINS("vpdpbusd", u, b);
        const __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                                           _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));
        sink = sink + lane_sum(_mm512_add_epi32(s, _mm512_add_epi32(a8, a9)));
      } else {
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
        const __m256i u = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
        for (int64_t i = 0; i < kIters; ++i) MQ_TEN_CHAINS("vpdpbusd", u, b);
        const __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                                           _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
        sink = sink + _mm256_extract_epi32(_mm256_add_epi32(s, _mm256_add_epi32(a8, a9)), 0);
      }
    }
  });
  return rate_of(static_cast<double>(threads) * kIters * 10 * (vector_bits / 8) * 2, t);
}
#else
bool has_vnni_probe() { return false; }
Rate vnni_peak(int, int) { return {}; }
#endif

#if defined(__AVX512BF16__)
bool has_bf16_probe() { return true; }
Rate bf16_peak(int threads) {
  constexpr int64_t kIters = 1 << 16;
  volatile float sink = 0.0f;
  // vdpbf16ps: 16 fp32 lanes, each += two bf16 products: 64 ops per instruction.
  const Timing t = time_call([&] {
#pragma omp parallel num_threads(threads)
    {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
      const __m512i u = _mm512_set1_epi16(0x3f80), b = _mm512_set1_epi16(0x3f00);  // bf16 1.0, 0.5
      for (int64_t i = 0; i < kIters; ++i) MQ_TEN_CHAINS("vdpbf16ps", u, b);
      const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                     _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
      sink = sink + lane_sum(_mm512_add_ps(s, _mm512_add_ps(a8, a9)));
    }
  });
  return rate_of(static_cast<double>(threads) * kIters * 10 * 64, t);
}
#else
bool has_bf16_probe() { return false; }
Rate bf16_peak(int) { return {}; }
#endif

#undef MQ_TEN_CHAINS

}  // namespace mq
