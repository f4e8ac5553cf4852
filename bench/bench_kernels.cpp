// Kernel and whole-model speed of every scheme: GEMV / GEMM GB/s and GFLOP/s next to a same-run
// read-bandwidth probe at the same working-set size and a peak-arithmetic probe (roofline fractions),
// and MiniGPT / GPT-2-small-shaped decode and prefill tokens/s. Every kernel is verified first.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "miniquant/format_table.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/kernels/registry.h"
#include "miniquant/random.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/embedding.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "roofline_probes.h"

namespace {

using mq::ActMode;
using mq::QTensor;
using mq::Scheme;

struct Shape {
  int64_t out, in;  // W: (out, in)
};
const Shape kShapes[] = {{4096, 4096}, {4096, 11008}, {11008, 4096}, {768, 3072}, {3072, 768},
                         {768, 256},   {256, 256},    {1024, 256},   {256, 1024}};

// The last shape's fp32 weights and the last (scheme, shape)'s tensor: benchmarks are registered
// shape-major, scheme-next, so each matrix is generated and quantized once.
const std::vector<float>& weights(const Shape& sh) {
  static Shape last{0, 0};
  static std::vector<float> w;
  if (last.out != sh.out || last.in != sh.in) {
    w = mq::gaussian_matrix(sh.out, sh.in, 42, 0.02);
    last = sh;
  }
  return w;
}
const QTensor& tensor(const Shape& sh, const Scheme& s) {
  static std::string key;
  static QTensor q;
  const std::string k = s.name() + "/" + std::to_string(sh.out) + "x" + std::to_string(sh.in);
  if (k != key) {
    q = mq::quantize(weights(sh).data(), sh.out, sh.in, s);
    key = k;
  }
  return q;
}

// Compares the kernel with the scalar reference on the first rows (the reference is slow), relative
// to sum |w'||x| (the scale of rounding differences). Returns an error text or "".
template <class Kernel>  // kernel(x, y): the timed call
std::string verify(const QTensor& q, const std::vector<float>& x, int64_t n, const mq::KernelOptions& o,
                   const Kernel& kernel) {
  const int64_t rows = std::min<int64_t>(q.rows, 16);
  QTensor head = q;  // the first `rows` rows: row-major codes, scales and (packed, from bit 0) zero-points
  head.rows = rows;
  head.codes.resize(static_cast<size_t>(rows * q.row_bytes()));
  if (q.scheme.is_integer() && q.scheme.group != mq::kPerTensor) {
    head.scales.resize(static_cast<size_t>(rows * q.scheme.groups_per_row(q.cols)));
    if (!q.scheme.symmetric) head.zeros.resize((head.scales.size() * q.scheme.bits + 7) / 8);
  }
  std::vector<float> y(static_cast<size_t>(n * q.rows)), yr(static_cast<size_t>(n * rows));
  kernel(x.data(), y.data());
  std::vector<float> xr = x;  // +bf16: the reference multiplies the rounded activations (a NaN-free x: bf16_safe)
  if (o.act == ActMode::bf16)
    for (float& v : xr) v = mq::bf16_round(v);
  if (mq::is_dynamic(o.act)) mq::gemm_dynamic_ref(head, x.data(), n, yr.data(), o.act);
  else mq::gemm_ref(head, xr.data(), n, yr.data());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double mag = 0.0;
      for (int64_t c = 0; c < q.cols; ++c) mag += std::fabs(head.value_at(r, c) * x[t * q.cols + c]);
      const double e = std::fabs(y[t * q.rows + r] - yr[t * rows + r]);
      if (e > 1e-4 * mag + 1e-30) return "kernel differs from the reference at token " + std::to_string(t) + " row " + std::to_string(r);
    }
  return "";
}

// The activation modes' arguments (row names take the recipe suffixes, minigpt::act_suffix).
ActMode act_arg(int64_t v) {
  return v == 3 ? ActMode::bf16 : v == 2 ? ActMode::dynamic_int16 : v == 1 ? ActMode::dynamic_int8 : ActMode::weight_only;
}

// Args: shape index, scheme index, n, threads, act (0 weight-only, 1 dynamic int8, 2 dynamic int16, 3 bf16), cold (0: the same
// weights every call, cache-resident where they fit; 1: cycle through cold_copies() copies, from DRAM).
void BM_gemm(benchmark::State& st) {
  const Shape sh = kShapes[st.range(0)];
  const Scheme s = mq::scheme_table()[static_cast<size_t>(st.range(1))];
  const int64_t n = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  const ActMode act = act_arg(st.range(4));
  const bool cold = st.range(5) == 1;
  const QTensor& q = tensor(sh, s);
  const std::vector<float> x = mq::gaussian_matrix(n, sh.in, 7);
  std::vector<float> y(static_cast<size_t>(n * sh.out));
  const mq::KernelOptions o{.threads = threads, .act = act};
  // The 16-row block layout where QuantizedLinear keeps the tensor in it (runs_blocked), packed once as it does.
  const bool blocked = mq::runs_blocked(q, act);
  const mq::BlockedCodes b = blocked ? mq::pack_blocked(q) : mq::BlockedCodes{};
  // Bytes the kernel reads: the block layout's when it runs (the same codes and scales; u8 zero-points).
  const double bytes = static_cast<double>(blocked ? b.bytes() : q.storage().total());
  // Copies for the cold mode (copy 0 is the tensor itself); each call reads the next one.
  const int64_t copies = cold ? mqbench::cold_copies(bytes) : 1;
  std::vector<QTensor> qs(static_cast<size_t>(blocked ? 0 : copies - 1), q);
  std::vector<mq::BlockedCodes> bs(static_cast<size_t>(blocked ? copies - 1 : 0), b);
  int64_t next = 0;
  auto run_copy = [&](int64_t i, const float* xp, float* yp) {
    if (blocked) mq::gemm_blocked(i == 0 ? b : bs[static_cast<size_t>(i - 1)], xp, n, yp, threads, true, act);
    else mq::gemm(i == 0 ? q : qs[static_cast<size_t>(i - 1)], xp, n, yp, o);
  };
  auto kernel = [&](const float* xp, float* yp) { run_copy(0, xp, yp); };
  if (const std::string err = verify(q, x, n, o, kernel); !err.empty()) {
    st.SkipWithError(err.c_str());
    return;
  }
  const double ops = 2.0 * static_cast<double>(sh.out * sh.in * n);
  // The same-run probe at the working set the timed loop reads: all copies when cold (DRAM).
  const double bw = mqbench::read_bandwidth(static_cast<int64_t>(bytes * static_cast<double>(copies)), threads);
  // +a8 / +a16 rows against the int8 VNNI peak where the CPU has it, else (AVX2 or portable path) the fp32
  // FMA peak. (+a16 does two int8 dots per weight, so its own ceiling is half of that.)
  const double vnni = mq::is_dynamic(act) ? mqbench::vnni_peak(threads) : 0.0;
  const double peak = vnni > 0 ? vnni : mqbench::fma_peak(threads);
  const double roof = std::min(peak, ops / bytes * bw);
  for (int64_t i = 0; i < std::max<int64_t>(3, copies); ++i) run_copy(i % copies, x.data(), y.data());  // warm-up
  for (auto _ : st) {
    run_copy(next, x.data(), y.data());
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["GBps"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GOPps"] = benchmark::Counter(ops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["probe_GBps"] = bw;
  st.counters["peak_GOPps"] = peak;
  st.counters["frac_bw"] = benchmark::Counter(bytes / bw, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["frac_roof"] = benchmark::Counter(ops / roof, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["copies"] = static_cast<double>(copies);
  st.SetLabel(s.name() + std::string(minigpt::act_suffix(act)) + " " + std::to_string(sh.out) + "x" +
              std::to_string(sh.in) + " n=" + std::to_string(n) + " t=" + std::to_string(threads) + (cold ? " cold" : ""));
}

// Eigen's fp32 GEMM on the same shape: the baseline the fp32 kernel should match. Args as BM_gemm.
void BM_eigen(benchmark::State& st) {
  const Shape sh = kShapes[st.range(0)];
  const int64_t n = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::vector<float>& w = weights(sh);
  const std::vector<float> x = mq::gaussian_matrix(n, sh.in, 7);
  std::vector<float> y(static_cast<size_t>(n * sh.out));
  Eigen::setNbThreads(threads);
  const double bytes = 4.0 * static_cast<double>(sh.out * sh.in);
  const double ops = 2.0 * static_cast<double>(sh.out * sh.in * n);
  const double bw = mqbench::read_bandwidth(static_cast<int64_t>(bytes), threads);
  const double roof = std::min(mqbench::fma_peak(threads), ops / bytes * bw);
  auto run = [&] {
    Eigen::Map<M>(y.data(), n, sh.out).noalias() =
        Eigen::Map<const M>(x.data(), n, sh.in) * Eigen::Map<const M>(w.data(), sh.out, sh.in).transpose();
  };
  for (int i = 0; i < 3; ++i) run();
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["GBps"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GOPps"] = benchmark::Counter(ops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["probe_GBps"] = bw;
  st.counters["frac_bw"] = benchmark::Counter(bytes / bw, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["frac_roof"] = benchmark::Counter(ops / roof, benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel("eigen-fp32 " + std::to_string(sh.out) + "x" + std::to_string(sh.in) + " n=" + std::to_string(n) +
              " t=" + std::to_string(threads));
}

// --- whole model ---

minigpt::ModelConfig model_config(int which) {
  // MiniGPT itself, and a GPT-2-small-shaped body (768 wide, 12 layers, 12 heads) keeping MiniGPT's
  // vocabulary of 1964: with GPT-2's 50257 the fp32 tied LM head (154 MB) would dominate decode.
  if (which == 0) return {.vocab_size = 1964, .n_ctx = 128, .d_model = 256, .n_layer = 4, .n_head = 4, .d_ff = 1024};
  return {.vocab_size = 1964, .n_ctx = 256, .d_model = 768, .n_layer = 12, .n_head = 12, .d_ff = 3072};
}

// Args: model (0 MiniGPT, 1 GPT-2-small-shaped), scheme index (-1: the model's own Eigen fp32
// projections), threads, act (as BM_gemm's), phase (0 decode, 1 prefill of 64 tokens).
void BM_model(benchmark::State& st) {
  const int which = static_cast<int>(st.range(0));
  const int si = static_cast<int>(st.range(1));
  const int threads = static_cast<int>(st.range(2));
  const ActMode act = act_arg(st.range(3));
  const bool prefill = st.range(4) == 1;
  const minigpt::ModelConfig c = model_config(which);
  mq::set_default_threads(threads);
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  // The last (model, scheme, act)'s model: Google Benchmark calls this function several times per
  // row, and building + quantizing the GPT-2-shaped body takes seconds.
  static std::string key;
  static std::unique_ptr<minigpt::Model> model;
  static long long bytes = 0;
  static std::string name;
  const std::string k = std::to_string(which) + "/" + std::to_string(si) + "/" + std::to_string(st.range(3));
  if (k != key) {
    model = std::make_unique<minigpt::Model>(c, 42);
    name = "eigen-fp32";
    bytes = 0;
    for (const auto& li : model->linears()) bytes += 4LL * li.in * li.out;
    if (si >= 0) {
      const Scheme s = mq::scheme_table()[static_cast<size_t>(si)];
      name = s.name() + std::string(minigpt::act_suffix(act));
      // The sweep's plan for that name: every Linear in the scheme, the tied embedding (and LM head) in fp16.
      const minigpt::ModelQuantReport rep = minigpt::quantize_model(*model, minigpt::QuantPlan::uniform(name));
      bytes = 0;
      for (const auto& l : rep.layers) bytes += l.storage.total();
    }
    key = k;
  }
  minigpt::Model& m = *model;
  mq::Rng rng(3);
  std::vector<int32_t> toks(static_cast<size_t>(c.n_ctx));
  for (auto& t : toks) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab_size)));
  const int n_prompt = 64;
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + n_prompt);
  m.prefill(prompt);
  int pos = n_prompt;
  for (auto _ : st) {
    if (prefill) {
      benchmark::DoNotOptimize(m.prefill(prompt).data());
    } else {
      if (pos >= c.n_ctx) {  // the cache is full: start again from the prompt, untimed
        st.PauseTiming();
        m.prefill(prompt);
        pos = n_prompt;
        st.ResumeTiming();
      }
      benchmark::DoNotOptimize(m.decode(toks[static_cast<size_t>(pos++)]).data());
    }
  }
  st.counters["tok_per_s"] = benchmark::Counter(prefill ? n_prompt : 1, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["linear_MB"] = static_cast<double>(bytes) / 1e6;
  st.SetLabel(std::string(which == 0 ? "minigpt" : "gpt2-small-shaped") + " " + name + (prefill ? " prefill64" : " decode") +
              " t=" + std::to_string(threads));
  mq::set_default_threads(0);
}

int scheme_index(const std::string& name) {
  const auto& t = mq::scheme_table();
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].name() == name) return static_cast<int>(i);
  return -1;
}

// Registration: the full table at batch 1 on every shape; batch 8 / 64 and the dynamic path for the
// schemes the bars name plus one of each remaining family; models per scheme.
void register_all() {
  const auto& table = mq::scheme_table();
  const std::vector<std::string> batch_schemes = {"fp32", "fp16", "bf16", "int8-per-channel", "int4-g64",
                                                  "int4-g128-asym", "int3-g128", "int2-g64"};
  const std::vector<std::string> dyn_schemes = {"int8-per-tensor", "int8-per-channel", "int8-per-channel-asym",
                                                "int4-g64",        "int4-g64-asym",    "int4-g128",
                                                "int4-g32",        "int3-g64",         "int2-g64"};
  // +bf16 (activations rounded to bf16): the widths with a bf16 kernel.
  const std::vector<std::string> bf16_schemes = {"int4-g64", "int3-g64", "int2-g64"};
  auto reg = [](const char* name, auto fn, std::vector<int64_t> args) {
    benchmark::RegisterBenchmark(name, fn)->Args(args)->Unit(benchmark::kMicrosecond)->UseRealTime()
        ->MinTime(0.05)->Repetitions(3)->ReportAggregatesOnly(true);
  };
  for (int64_t shi = 0; shi < static_cast<int64_t>(std::size(kShapes)); ++shi) {
    const bool big = shi <= 2, batched = shi <= 3 || shi == 8;  // 4096-class, 768x3072, 256x1024
    for (int threads : {1, 2}) {
      for (int64_t n : {1, 8, 64}) {
        if (n > 1 && !batched) continue;
        reg("eigen", BM_eigen, {shi, -1, n, threads, 0});
      }
    }
    for (size_t si = 0; si < table.size(); ++si) {
      const std::string nm = table[si].name();
      const bool in_batch = std::find(batch_schemes.begin(), batch_schemes.end(), nm) != batch_schemes.end();
      const bool in_dyn = std::find(dyn_schemes.begin(), dyn_schemes.end(), nm) != dyn_schemes.end();
      for (int threads : {1, 2})
        for (int64_t n : {1, 8, 64}) {
          if (n > 1 && (!in_batch || !batched)) continue;
          reg("gemm", BM_gemm, {shi, static_cast<int64_t>(si), n, threads, 0, 0});
        }
      if (in_dyn && (big || batched))
        for (int64_t act : {1, 2})
          for (int threads : {1, 2})
            for (int64_t n : {1, 8, 64}) reg("gemm", BM_gemm, {shi, static_cast<int64_t>(si), n, threads, act, 0});
      if (std::find(bf16_schemes.begin(), bf16_schemes.end(), nm) != bf16_schemes.end() && (big || batched))
        for (int threads : {1, 2})
          for (int64_t n : {1, 64}) reg("gemm", BM_gemm, {shi, static_cast<int64_t>(si), n, threads, 3, 0});
    }
  }
  // Cold rows: one decode GEMV per 4096-class shape from DRAM for every weight-only scheme the sweep runs and
  // the dynamic ones (+a8 and +a16), beside the hot rows above.
  const std::vector<std::string> cold_schemes = {"fp32", "fp16", "bf16", "int8-per-channel", "int4-g64", "int4-g128",
                                                 "int4-per-channel", "int3-g64", "int2-g64"};
  auto index_of = [](const std::string& nm) {
    const int i = scheme_index(nm);
    if (i < 0) throw std::logic_error("bench_kernels: no scheme named " + nm);
    return static_cast<int64_t>(i);
  };
  for (int64_t shi : {0, 1})
    for (int threads : {1, 2}) {
      for (const std::string& nm : cold_schemes) reg("gemm", BM_gemm, {shi, index_of(nm), 1, threads, 0, 1});
      for (int64_t act : {1, 2})
        for (const char* nm : {"int8-per-channel", "int4-g64", "int4-g32", "int3-g64", "int2-g64"}) reg("gemm", BM_gemm, {shi, index_of(nm), 1, threads, act, 1});
      for (const std::string& nm : bf16_schemes) reg("gemm", BM_gemm, {shi, index_of(nm), 1, threads, 3, 1});
    }
  for (int which : {0, 1}) {
    std::vector<std::pair<int, int>> runs = {{-1, 0}};  // (scheme index, act)
    for (size_t si = 0; si < table.size(); ++si)
      if (which == 0 || std::find(batch_schemes.begin(), batch_schemes.end(), table[si].name()) != batch_schemes.end())
        runs.push_back({static_cast<int>(si), 0});
    for (int act : {1, 2})
      for (const char* d : {"int8-per-channel", "int4-g64"}) runs.push_back({scheme_index(d), act});
    runs.push_back({scheme_index("int4-g64"), 3});
    for (auto [si, act] : runs)
      for (int threads : {1, 2})
        for (int phase : {0, 1})
          benchmark::RegisterBenchmark("model", BM_model)->Args({which, si, threads, act, phase})
              ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.2)->Repetitions(3)->ReportAggregatesOnly(true);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("dynamic (+a8) kernel path: %s (int3: %s)\n", mq::dynamic_kernel_name("int4"), mq::dynamic_kernel_name("int3"));
  std::printf("weight-only on AVX-512 BF16 dots: int4 %s, int3 %s, int2 %s\n", mq::has_bf16_weight_path(mq::Scheme::integer(4, 64)) ? "yes" : "no",
              mq::has_bf16_weight_path(mq::Scheme::integer(3, 64)) ? "yes" : "no", mq::has_bf16_weight_path(mq::Scheme::integer(2, 64)) ? "yes" : "no");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
