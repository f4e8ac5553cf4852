// This machine's ceilings, measured: read bandwidth at a chosen working-set size (a STREAM-like
// sum) and peak arithmetic (fp32 FMA, int8 VNNI dot products, bf16 dot products), per thread count.
// Every figure is a median over repetitions after a warm-up, with its spread.
#pragma once
#include <cstdint>
#include <string>

#include "miniquant/util/timer.h"

namespace mq {

// Read bandwidth (bytes/s) summing a buffer of `bytes` with `threads` threads, each its own slice,
// several passes inside one parallel region so cache-resident sizes are not dominated by the fork; the
// better of reading each slice as one stream and as four in lockstep (the kernels read several rows at once).
Rate read_bandwidth(int64_t bytes, int threads);
// Peak rates (ops/s, a multiply-add counts 2) with `threads` threads on independent chains.
Rate fma_peak(int threads);            // fp32 FMA at the widest xsimd batch
Rate vnni_peak(int threads, int vector_bits);  // vpdpbusd on 256- or 512-bit registers; 0 without VNNI
Rate bf16_peak(int threads);           // vdpbf16ps on 512-bit registers; 0 without AVX512-BF16
bool has_vnni_probe();
bool has_bf16_probe();

}  // namespace mq
