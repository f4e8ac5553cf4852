// Throughput of MiniGPT training steps, prefill and decode for candidate configs: tokens/s,
// FLOPs/token (see flops.h) and achieved GFLOP/s. Verifies each path before timing it.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "minigpt/flops.h"
#include "minigpt/model.h"
#include "minigpt/train.h"

using namespace minigpt;

namespace {
// Args: d_model, n_layer, batch. n_head = d_model / 64, vocab 3000 (the corpus will have
// ~2,500-3,500 words), n_ctx 128.
ModelConfig config_of(const benchmark::State& s) {
  const int d = static_cast<int>(s.range(0));
  return ModelConfig{.vocab_size = 3000, .n_ctx = 128, .d_model = d, .n_layer = static_cast<int>(s.range(1)),
                     .n_head = d / 64, .d_ff = 4 * d};
}

std::vector<int32_t> random_stream(size_t n, int vocab) {
  std::mt19937_64 rng(42);
  std::vector<int32_t> s(n);
  for (auto& x : s) x = static_cast<int32_t>(rng() % vocab);
  return s;
}

void BM_TrainStep(benchmark::State& state) {
  const ModelConfig c = config_of(state);
  Model m(c);
  TrainConfig tc;
  tc.batch = static_cast<int>(state.range(2));
  tc.steps = 1000000;
  Trainer t(m, tc);
  const auto stream = random_stream(200000, c.vocab_size);
  // Verify: the first loss of an untrained model on random tokens is close to log(vocab).
  const StepReport r = t.step(stream);
  if (!std::isfinite(r.loss) || std::abs(r.loss - std::log(c.vocab_size)) > 0.5) {
    state.SkipWithError("first training loss is not ~log(vocab): the training path is broken");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(t.step(stream).loss);
  const double tokens = static_cast<double>(state.iterations()) * tc.batch * c.n_ctx;
  state.SetItemsProcessed(static_cast<int64_t>(tokens));
  state.counters["tok/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["MFLOP/tok"] = train_flops_per_token(c) / 1e6;
  state.counters["GFLOP/s"] = benchmark::Counter(tokens * train_flops_per_token(c) / 1e9, benchmark::Counter::kIsRate);
  state.counters["params_M"] = static_cast<double>(m.num_params()) / 1e6;
  state.counters["fp32_MB"] = 4.0 * static_cast<double>(m.num_params()) / 1e6;
}

void BM_Prefill(benchmark::State& state) {
  const ModelConfig c = config_of(state);
  Model m(c);
  const auto tok = random_stream(c.n_ctx, c.vocab_size);
  const auto full = m.logits(tok);
  if (!std::isfinite(full[0])) {
    state.SkipWithError("non-finite logits");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(m.prefill(tok).data());
  const double tokens = static_cast<double>(state.iterations()) * c.n_ctx;
  state.counters["tok/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(tokens * forward_flops_per_token(c) / 1e9, benchmark::Counter::kIsRate);
}

// One token of prefill, then decode to the full context: the per-token cost of generation.
void BM_Decode(benchmark::State& state) {
  const ModelConfig c = config_of(state);
  Model m(c);
  const auto tok = random_stream(c.n_ctx, c.vocab_size);
  // Verify: decode after a prefill reproduces the whole-sequence logits of the last position.
  const auto full = m.logits(tok);
  m.prefill(std::vector<int32_t>(tok.begin(), tok.end() - 1));
  const auto last = m.decode(tok.back());
  double worst = 0;
  for (int j = 0; j < c.vocab_size; ++j)
    worst = std::max(worst, std::abs(double(last[j]) - full[static_cast<size_t>(c.n_ctx - 1) * c.vocab_size + j]));
  if (worst > 1e-4) {
    state.SkipWithError("decode disagrees with the whole-sequence pass");
    return;
  }
  for (auto _ : state) {
    m.prefill({tok[0]});
    for (int i = 1; i < c.n_ctx; ++i) benchmark::DoNotOptimize(m.decode(tok[i]).data());
  }
  const double tokens = static_cast<double>(state.iterations()) * c.n_ctx;
  state.counters["tok/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_TrainStep)->ArgsProduct({{256}, {4, 6}, {16}})->ArgNames({"d", "L", "B"})->Unit(benchmark::kMillisecond)->MinTime(3.0)->UseRealTime();
BENCHMARK(BM_Prefill)->ArgsProduct({{256}, {4, 6}})->ArgNames({"d", "L"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decode)->ArgsProduct({{256}, {4, 6}})->ArgNames({"d", "L"})->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
