// How many independent vdpbf16ps accumulator chains it takes to reach the unit's rate, and whether other
// vector instructions beside 12 chains slow them: the measurement behind the one-token bf16 tile's shape
// (src/miniquant/kernels/word_kernel.h bf16_tile, bench/HISTORY.md). Needs AVX-512 BF16; not part of the build:
//   g++ -O2 -march=native -std=c++20 bench/dot_chains.cpp -o /tmp/dot_chains && /tmp/dot_chains
// Prints nanoseconds per dot (median of 7 timed runs after one warm-up). Each accumulator starts at its own
// value and every input passes through an empty asm statement, so the compiler can neither merge the chains
// nor hoist the extra instructions out of the loop. Run it on an otherwise idle machine.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

constexpr long kIters = 20'000'000;

// N chains of acc = dot(acc, a, b); Extra > 0 adds `Extra` independent vaddps per iteration (not chained).
template <int N, int Extra>
[[gnu::noinline]] void chains(long iters) {
  __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(2.0f), g = _mm512_set1_ps(3.0f);
  asm volatile("" : "+v"(a), "+v"(b), "+v"(g));
  __m512 acc[N];
#pragma GCC unroll 32
  for (int i = 0; i < N; ++i) {
    acc[i] = _mm512_set1_ps(static_cast<float>(i + 1));
    asm volatile("" : "+v"(acc[i]));
  }
  for (long k = 0; k < iters; ++k) {
#pragma GCC unroll 32
    for (int i = 0; i < N; ++i) {
      acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, (__m512bh)b);
      if constexpr (Extra > 0) {
        if (i < Extra) {
          const __m512 e = _mm512_add_ps(g, a);
          asm volatile("" ::"v"(e));
        }
      }
    }
    asm volatile("" : "+v"(a), "+v"(b), "+v"(g));
  }
#pragma GCC unroll 32
  for (int i = 0; i < N; ++i) asm volatile("" ::"v"(acc[i]));
}

template <int N, int Extra = 0>
void report(const char* what) {
  chains<N, Extra>(kIters / 10);
  std::vector<double> ns;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    chains<N, Extra>(kIters);
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / (kIters * N));
  }
  std::sort(ns.begin(), ns.end());
  std::printf("%2d chains%s: %.3f ns per dot\n", N, what, ns[ns.size() / 2]);
}

}  // namespace

int main() {
  report<1>("");
  report<2>("");
  report<4>("");
  report<8>("");
  report<12>("");
  report<16>("");
  report<24>("");
  report<12, 12>(" + 12 vaddps");
}
