// GPTQ solver time on GPT-2-small-shaped Linears (int4-g64, block 128, with and without act-order)
// next to round-to-nearest on the same weights, and the implied time to quantize all 12 layers
// (48 Linears). What a user waits for at `miniquant quantize` scale-up, calibration excluded.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "miniquant/gptq.h"
#include "miniquant/util/timer.h"
#include "miniquant/hessian.h"
#include "miniquant/quantize.h"
#include "miniquant/random.h"

namespace {

struct Shape {
  int64_t out, in;  // W: (out, in)
  const char* name;
};
// One GPT-2-small block (d 768, d_ff 3072): each shape occurs once per layer.
const Shape kShapes[] = {{2304, 768, "c_attn"}, {768, 768, "attn.c_proj"}, {3072, 768, "c_fc"}, {768, 3072, "mlp.c_proj"}};
constexpr int kLayers = 12;
constexpr int64_t kSamples = 2048;

// H = X X^T / n of X = A Z (in, n): Z Gaussian, A = D (I + G / sqrt(in)) with G Gaussian and D a
// log-normal per-feature scale, so H has off-diagonal mass and an uneven diagonal as real
// activations do (act-order then has something to sort). Cached per input width: building it
// costs more than the solve.
const Eigen::MatrixXd& hessian(int64_t in) {
  static std::map<int64_t, Eigen::MatrixXd> cache;
  auto it = cache.find(in);
  if (it != cache.end()) return it->second;
  mq::Rng rng(static_cast<uint64_t>(in));
  Eigen::MatrixXd a(in, in);  // (in, in)
  for (int64_t j = 0; j < in; ++j)
    for (int64_t i = 0; i < in; ++i) a(i, j) = rng.normal() / std::sqrt(static_cast<double>(in));
  a += Eigen::MatrixXd::Identity(in, in);
  for (int64_t i = 0; i < in; ++i) a.row(i) *= std::exp(rng.normal());
  Eigen::MatrixXd z(in, kSamples);  // (in, n)
  for (int64_t t = 0; t < kSamples; ++t)
    for (int64_t i = 0; i < in; ++i) z(i, t) = rng.normal();
  // (n, in) row-major floats, as the model's Linear hook hands them to mq::Hessian.
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajorF x = (a * z).transpose().cast<float>();
  mq::Hessian h(in);
  h.add(x.data(), kSamples);
  return cache.emplace(in, h.matrix()).first->second;
}

const std::vector<float>& weights(const Shape& sh) {
  static std::map<std::pair<int64_t, int64_t>, std::vector<float>> cache;
  auto& w = cache[{sh.out, sh.in}];
  if (w.empty()) w = mq::gaussian_matrix(sh.out, sh.in, 42, 0.02);
  return w;
}

// Fastest per-call seconds of each (method, shape), for the 48-Linear summary after the run.
std::map<std::string, std::map<int, double>>& fastest() {
  static std::map<std::string, std::map<int, double>> f;
  return f;
}

const mq::Scheme& scheme() {
  static const mq::Scheme s = mq::Scheme::parse("int4-g64");
  return s;
}

// Args: shape index, method (0 RTN, 1 GPTQ, 2 GPTQ act-order).
void BM_quantize(benchmark::State& state) {
  const int shi = static_cast<int>(state.range(0)), method = static_cast<int>(state.range(1));
  const Shape& sh = kShapes[shi];
  const std::vector<float>& w = weights(sh);
  const Eigen::MatrixXd& h = hessian(sh.in);
  mq::GptqOptions o;
  o.block = 128;
  o.act_order = method == 2;
  // Verify: GPTQ must lower the output error tr((W-Q) H (W-Q)^T) below round-to-nearest's.
  if (method > 0) {
    const double e_gptq = mq::output_error(w.data(), mq::gptq_quantize(w.data(), sh.out, sh.in, h, scheme(), o).q, h);
    const double e_rtn = mq::output_error(w.data(), mq::quantize(w.data(), sh.out, sh.in, scheme()), h);
    state.counters["err/RTN"] = e_gptq / e_rtn;
    if (!(e_gptq < e_rtn)) {
      state.SkipWithError("GPTQ does not beat round-to-nearest on this Hessian: the solver is broken");
      return;
    }
  }
  double best = INFINITY;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (method == 0) benchmark::DoNotOptimize(mq::quantize(w.data(), sh.out, sh.in, scheme()).codes.data());
    else benchmark::DoNotOptimize(mq::gptq_quantize(w.data(), sh.out, sh.in, h, scheme(), o).q.codes.data());
    best = std::min(best, mq::seconds_since(t0));
  }
  state.counters["x12_s"] = kLayers * best;  // this shape's share of a whole 12-layer model
  const char* methods[] = {"rtn", "gptq", "gptq-act-order"};
  fastest()[methods[method]][shi] = best;
}

}  // namespace

BENCHMARK(BM_quantize)->ArgsProduct({{0, 1, 2, 3}, {0, 1, 2}})->ArgNames({"shape", "method"})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("shapes: 0 c_attn 2304x768, 1 attn.c_proj 768x768, 2 c_fc 3072x768, 3 mlp.c_proj 768x3072 (out x in); "
              "int4-g64, GPTQ block 128, H from %lld samples\n", static_cast<long long>(kSamples));
  benchmark::RunSpecifiedBenchmarks();
  // The 48-Linear total from the fastest call of each shape (only when all four shapes ran).
  for (const auto& [method, per_shape] : fastest()) {
    if (per_shape.size() != std::size(kShapes)) continue;
    double block = 0.0;
    for (const auto& [shi, s] : per_shape) block += s;
    std::printf("%-15s one block (4 Linears) %.3f s, 12 layers (48 Linears) %.2f s\n", method.c_str(), block,
                kLayers * block);
  }
  benchmark::Shutdown();
  return 0;
}
