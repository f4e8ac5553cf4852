// vs_ggml: ggml_mul_mat on llama.cpp's own CPU backend (the npm package node-llama-cpp ships) against our
// QuantizedLinear on the same weights, pair by pair (pairs.h), hot and from DRAM, in interleaved rounds with
// the same-run read bandwidth. Writes one JSON file (manifest + cells); bench/vs_ggml/table.py turns it into the
// table in bench/README.md. A benchmark only: ggml is opened with dlopen here and nowhere else.
//
// Exit codes: 0 done, or skipped where the package is absent; 1 a failed ABI or correctness check (mq::Error);
// 2 a bad argument (mq::UsageError).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "abi_check.h"
#include "compare.h"
#include "ggml_api.h"
#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/random.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "pairs.h"

namespace {

// The manifest names a folder inside the repository relative to its root, as every experiment output does
// (experiments/experiment_io.h relativize): tracked results carry no absolute path of the machine that wrote them.
std::string repo_relative(const std::string& path) {
  const std::string root = std::string(MQ_SOURCE_DIR) + "/";
  return path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
}

using nlohmann::json;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = std::min(s.find(',', p), s.size());
    if (q > p) out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

int64_t positive(const std::string& flag, const std::string& v) {
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || x < 1) throw mq::UsageError("vs_ggml: " + flag + " takes positive integers, got '" + v + "'");
  return x;
}

json load_json(const mq::LoadAverage& l) { return {l.one, l.five, l.fifteen}; }

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

json cpu_json() {
  const mq::CpuInfo c = mq::cpu_info();
  json caches = json::array();
  for (const mq::CacheLevel& k : c.caches) caches.push_back({{"level", k.level}, {"type", k.type}, {"bytes", k.bytes}});
  return {{"model", c.model},       {"family", c.family},     {"model_number", c.model_number}, {"stepping", c.stepping},
          {"logical_cpus", c.logical_cpus}, {"flags", c.flags}, {"caches", caches}, {"cache_source", c.cache_source}};
}

int run(int argc, char** argv) {
  CLI::App app{"ggml_mul_mat (llama.cpp's CPU backend) against miniquant's QuantizedLinear"};
  std::string bins = MQ_GGML_BINS_DIR, out_path = "bench/vs_ggml/results.json";
  std::string shapes = "4096x4096,4096x11008", batches = "1,64", threads = "1,2", modes = "hot,dram", pairs = "all";
  vsggml::RunOptions o;
  double batch_ms = 20, settle_ms = 10;
  app.add_option("--ggml-dir", bins, "the package's bins folder (libggml-base.so, libggml-cpu-*.so)");
  app.add_option("--out", out_path, "results JSON (manifest + one cell per pair, shape, mode, n, threads)");
  app.add_option("--shapes", shapes, "weights as OUTxIN, comma-separated");
  app.add_option("--batches", batches, "tokens per call, comma-separated");
  app.add_option("--threads", threads, "thread counts, comma-separated");
  app.add_option("--modes", modes, "hot (one weight copy), dram (copies cycled past the last-level cache), or both");
  app.add_option("--pairs", pairs, "our side of the pairs to run, comma-separated (q4_k, q4_k+a8, int4-g64, ...), or all");
  app.add_option("--rounds", o.rounds, "interleaved rounds (at least 2 for the ratio's interval)");
  app.add_option("--batch-ms", batch_ms, "each side's timed batch per round and cell, ms");
  app.add_option("--settle-ms", settle_ms, "pause before each batch, ms");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw mq::UsageError(std::string("vs_ggml: ") + e.what());
  }
  if (o.rounds < 2) throw mq::UsageError("vs_ggml: --rounds must be at least 2 (the paired interval needs two rounds)");
  if (!(batch_ms > 0) || !(settle_ms >= 0)) throw mq::UsageError("vs_ggml: --batch-ms must be positive, --settle-ms not negative");
  o.batch_seconds = batch_ms / 1e3;
  o.settle_seconds = settle_ms / 1e3;
  std::vector<vsggml::Setup> setups;
  std::vector<bool> dram_modes;
  for (const std::string& m : split(modes)) {
    if (m != "hot" && m != "dram") throw mq::UsageError("vs_ggml: --modes takes hot and dram, got '" + m + "'");
    dram_modes.push_back(m == "dram");
  }
  for (const std::string& sh : split(shapes)) {
    const size_t x = sh.find('x');
    if (x == std::string::npos) throw mq::UsageError("vs_ggml: --shapes takes OUTxIN, got '" + sh + "'");
    const int64_t rows = positive("--shapes", sh.substr(0, x)), cols = positive("--shapes", sh.substr(x + 1));
    for (bool d : dram_modes) setups.push_back({rows, cols, d});
  }
  // Our side's names (the scheme, +a8 for the dynamic mode): each one asked for must name a pair of the table.
  std::vector<const vsggml::Pair*> chosen;
  const std::vector<std::string> wanted = split(pairs);
  const auto ours = [](const vsggml::Pair& p) { return p.ours(); };
  for (const std::string& want : wanted) {
    if (want == "all") continue;
    if (std::none_of(vsggml::pair_table().begin(), vsggml::pair_table().end(), [&](const vsggml::Pair& p) { return ours(p) == want; }))
      throw mq::UsageError("vs_ggml: --pairs: no pair has '" + want + "' on our side (q4_k, q4_k+a8, int4-g64, int8-per-channel+a8, int2-g64-table, int2-g64-table16, int3-g64-table16, q2_k-table16, q3_k-table16, ...)");
  }
  for (const vsggml::Pair& p : vsggml::pair_table())
    if (std::find(wanted.begin(), wanted.end(), "all") != wanted.end() || std::find(wanted.begin(), wanted.end(), ours(p)) != wanted.end())
      chosen.push_back(&p);
  o.batches.clear();
  for (const std::string& b : split(batches)) o.batches.push_back(positive("--batches", b));
  o.threads.clear();
  for (const std::string& t : split(threads)) o.threads.push_back(static_cast<int>(positive("--threads", t)));
  if (setups.empty() || o.batches.empty() || o.threads.empty() || chosen.empty())
    throw mq::UsageError("vs_ggml: no pair, shape, batch, thread count or mode to run");
  // Spinning OpenMP workers would run through ggml's calls on the same cores (and ggml's poll through ours is
  // stopped by pausing its pool): the idle side must sleep.
  if (env_or("OMP_WAIT_POLICY", "") == "active" || env_or("OMP_WAIT_POLICY", "") == "ACTIVE")
    throw mq::UsageError("vs_ggml: OMP_WAIT_POLICY=active keeps our idle workers spinning through ggml's calls; unset it");

  if (!vsggml::package_present(bins)) {
    std::printf("vs_ggml: skipped: no node-llama-cpp package at %s (bash scripts/setup_node.sh installs it)\n", bins.c_str());
    return 0;
  }
  mq::check_writable_output(out_path);
  const mq::LoadAverage load0 = mq::load_average();
  const std::string started = mq::utc_now_iso8601();
  vsggml::Api api = vsggml::load_api(bins);
  const auto checks = vsggml::abi_checks(api, MQ_GGML_HEADER_VERSION, MQ_GGML_HEADER_COMMIT);
  for (const auto& k : checks)
    std::printf("abi %-4s %s: headers %s, library %s\n", k.ok ? "ok" : "FAIL", k.what.c_str(), k.headers.c_str(), k.library.c_str());
  vsggml::require_abi(checks);
  std::printf("ggml CPU variant: %s (score %d); ours: %s, +a8 %s (int3: %s, K: %s)\n", api.chosen.name.c_str(), api.chosen.score,
              mq::simd_arch_name(), mq::dynamic_kernel_name("int4"), mq::dynamic_kernel_name("int3"), mq::kquant_dynamic_kernel_name());
  vsggml::GgmlBackend be(api);

  json cells = json::array();
  for (const vsggml::Setup& s : setups) {
    const std::vector<float> w = mq::gaussian_matrix(s.out, s.in, 42, 0.02);  // (out, in)
    for (const vsggml::Pair* pp : chosen) {
      const vsggml::Pair& p = *pp;
      std::printf("%s %lldx%lld %s ...\n", p.label().c_str(), static_cast<long long>(s.out), static_cast<long long>(s.in),
                  s.dram ? "dram" : "hot");
      std::fflush(stdout);
      for (json& c : vsggml::compare(be, p, s, w, o)) {
        std::printf("  n=%lld t=%d: ggml %.1f us, ours %.1f us, ggml/ours %.3f [%.3f, %.3f]\n", c["n"].get<long long>(),
                    c["threads"].get<int>(), c["ggml"]["us_median"].get<double>(), c["ours"]["us_median"].get<double>(),
                    c["ratio"]["ggml_over_ours"].get<double>(), c["ratio"]["low"].get<double>(), c["ratio"]["high"].get<double>());
        cells.push_back(std::move(c));
      }
    }
  }

  json variants = json::array();
  for (const auto& v : api.variants) variants.push_back({{"name", v.name}, {"score", v.score}});
  const mq::BuildInfo b = mq::build_info();
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  const json manifest = {
      {"command", command},
      {"started_utc", started},
      {"finished_utc", mq::utc_now_iso8601()},
      {"load_average_start", load_json(load0)},
      {"load_average_end", load_json(mq::load_average())},
      {"cpu", cpu_json()},
      {"ours", {{"commit", b.git_commit}, {"build_type", b.build_type}, {"flags", b.flags}, {"compiler", b.compiler},
                {"simd_arch", mq::simd_arch_name()}, {"a8_kernels", mq::dynamic_kernel_name("int4")},
                {"a8_kernels_int3", mq::dynamic_kernel_name("int3")},
                {"k_a8_kernels", mq::kquant_dynamic_kernel_name()},
                {"int4_weight_only_bf16", mq::has_bf16_weight_path(mq::Scheme::integer(4, 64))}}},
      {"ggml", {{"bins_dir", repo_relative(bins)}, {"version", api.ggml_version()}, {"commit", api.ggml_commit()},
                {"header_version", MQ_GGML_HEADER_VERSION}, {"header_commit", MQ_GGML_HEADER_COMMIT},
                {"variants", variants}, {"chosen", api.chosen.name}, {"features", api.features},
                {"threadpool", "persistent, one per thread count, ggml_threadpool_params_init defaults (poll 50), paused after each batch"},
                {"abi_checks", vsggml::abi_json(checks)}}},
      {"env", {{"OMP_WAIT_POLICY", env_or("OMP_WAIT_POLICY", "(unset)")}, {"GOMP_SPINCOUNT", env_or("GOMP_SPINCOUNT", "(unset)")},
               {"OMP_NUM_THREADS", env_or("OMP_NUM_THREADS", "(unset)")}}},
      {"options", {{"rounds", o.rounds}, {"batch_ms", batch_ms}, {"settle_ms", settle_ms}, {"batches", o.batches},
                   {"threads", o.threads}, {"shapes", shapes}, {"modes", modes}, {"pairs", pairs}}},
  };
  mq::write_file_atomic(out_path, json{{"manifest", manifest}, {"cells", cells}}.dump(1) + "\n");
  std::printf("wrote %s (%zu cells)\n", out_path.c_str(), cells.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const mq::UsageError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // mq::Error and anything below it: a failed check or a missing library
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
