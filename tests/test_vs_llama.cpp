// bench/vs_llama without llama.cpp: the README block rendered from a results document (rows, cells,
// ratios, busy warning), the median / range summary, option validation (message and UsageError),
// `miniquant vs-llama` rejecting bad options with one line and exit code 2 before any work, and
// the prefill option it relies on (logits of the last position only) computing the same logits and
// cache as a full prefill.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/vs_llama.h"
#include "miniquant/error.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"

using namespace mqexp;

namespace {

nlohmann::json side(double dmed, double dmin, double dmax, double pmed, double pmin, double pmax) {
  return {{"decode_tokens_per_s", {{"median", dmed}, {"min", dmin}, {"max", dmax}, {"samples", {dmin, dmed, dmax}}}},
          {"prefill_tokens_per_s", {{"median", pmed}, {"min", pmin}, {"max", pmax}, {"samples", {pmin, pmed, pmax}}}}};
}

nlohmann::json results(bool busy) {
  nlohmann::json llama = side(1000, 900, 1100, 20000, 19000, 21000);
  nlohmann::json node = side(80, 70, 90, 10000, 9000, 11000);
  node["decode_ratio"] = 0.08;
  node["prefill_ratio"] = 0.5;
  nlohmann::json wo = side(1500, 1400, 1600, 10000, 9000, 11000);
  wo["path"] = "weight-only";
  wo["scheme"] = "int4-g64";
  wo["decode_ratio"] = 1.5;
  wo["prefill_ratio"] = 0.5;
  nlohmann::json a8 = side(2500, 2400, 2600, 30000, 29000, 31000);
  a8["path"] = "+a8";
  a8["scheme"] = "int4-g64+a8";
  a8["decode_ratio"] = 2.5;
  a8["prefill_ratio"] = 1.5;
  return {
      {"date", "2026-11-23T12:00:00Z"},
      {"seed", 42},
      {"options", {{"threads", 2}, {"rounds", 3}, {"prompt", 64}, {"decode", 32}, {"models", {"minigpt"}}, {"kv_cache", "F32"}}},
      {"llama_cpp", {{"release", "b1234"}, {"node_llama_cpp", "3.22.1"}}},
      {"load_average", {{"before", busy ? 3.5 : 0.2}, {"after", 1.9}, {"limit", 2.5}, {"busy", busy}}},
      {"models",
       {{{"name", "minigpt"},
         {"shape", {{"vocab_size", 1963}, {"n_ctx", 128}, {"d_model", 256}, {"n_layer", 4}, {"n_head", 4}, {"d_ff", 1024}}},
         {"weights", "the shipped checkpoint minigpt.safetensors"},
         {"formats", {{{"scheme", "int4-g64"}, {"gguf_type", "Q4_0"}, {"file_bytes", 1234567}, {"llama_cpp", llama}, {"llama_cpp_node", node}, {"miniquant", {wo, a8}}}}}}}},
      {"durations_s", {{"export", 1.0}, {"rounds", 10.0}, {"total", 12.0}}},
  };
}

VsLlamaOptions valid() {
  VsLlamaOptions o;
  o.models = {"minigpt"};
  return o;
}

void expect_usage(const VsLlamaOptions& o, const std::string& needle) {
  CAPTURE(needle);
  try {
    validate(o);
    FAIL("no error");
  } catch (const mq::UsageError& e) {
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("the README block: one row per side with median [min-max] and ratios") {
  const std::string b = vs_llama_readme_block(results(false));
  CHECK(b.find("| MiniGPT | Q4_0 (int4-g64, 1.2 MB) | llama.cpp (C API) | 1000 [900-1100] | 20000 [19000-21000] | | |") != std::string::npos);
  CHECK(b.find("| MiniGPT | Q4_0 (int4-g64, 1.2 MB) | llama.cpp via node-llama-cpp | 80 [70-90] | 10000 [9000-11000] | 0.08x | 0.50x |") !=
        std::string::npos);
  // The rows in order: the C API row first (the ratios' denominator), then node-llama-cpp, then ours.
  CHECK(b.find("llama.cpp (C API)") < b.find("llama.cpp via node-llama-cpp"));
  CHECK(b.find("llama.cpp via node-llama-cpp") < b.find("miniquant weight-only"));
  CHECK(b.find("| MiniGPT | Q4_0 (int4-g64, 1.2 MB) | miniquant weight-only | 1500 [1400-1600] | 10000 [9000-11000] | 1.50x | 0.50x |") !=
        std::string::npos);
  CHECK(b.find("| MiniGPT | Q4_0 (int4-g64, 1.2 MB) | miniquant +a8 | 2500 [2400-2600] | 30000 [29000-31000] | 2.50x | 1.50x |") !=
        std::string::npos);
  CHECK(b.find("2 threads on every side, a 64-token prompt then 32 tokens decoded") != std::string::npos);
  CHECK(b.find("3 interleaved rounds") != std::string::npos);
  CHECK(b.find("llama.cpp as built by node-llama-cpp 3.22.1 (its binaries' release tag b1234), driven through its C API by "
               "`llama_speed`") != std::string::npos);
  CHECK(b.find("K/V cache F32") != std::string::npos);
  CHECK(b.find("MiniGPT: the shipped checkpoint minigpt.safetensors, d 256, 4 layers") != std::string::npos);
  CHECK(b.find("The run took 12 s") != std::string::npos);
  CHECK(b.find("Warning") == std::string::npos);
  CHECK(b.find("Not measured yet") == std::string::npos);
}

TEST_CASE("the README block warns when the machine was busy") {
  const std::string b = vs_llama_readme_block(results(true));
  CHECK(b.rfind("**Warning: the machine was busy", 0) == 0);
  CHECK(b.find("3.50 before") != std::string::npos);
}

TEST_CASE("the README block rejects a results document without its fields") {
  nlohmann::json r = results(false);
  r.erase("options");
  CHECK_THROWS(vs_llama_readme_block(r));
}

TEST_CASE("rate_summary: median of odd and even counts, range, samples in order") {
  const nlohmann::json odd = rate_summary({3, 1, 2});
  CHECK(odd["median"].get<double>() == 2);
  CHECK(odd["min"].get<double>() == 1);
  CHECK(odd["max"].get<double>() == 3);
  CHECK(odd["samples"].get<std::vector<double>>() == std::vector<double>{3, 1, 2});
  CHECK(rate_summary({4, 1, 2, 3})["median"].get<double>() == 2.5);
  CHECK(rate_summary({7})["median"].get<double>() == 7);
  CHECK_THROWS_AS(rate_summary({}), mq::Error);
}

TEST_CASE("option validation names the bad option") {
  CHECK_NOTHROW(validate(valid()));
  VsLlamaOptions o = valid();
  o.threads = 0;
  expect_usage(o, "--threads 0");
  o = valid();
  o.rounds = 0;
  expect_usage(o, "--rounds 0");
  o = valid();
  o.prompt = 1;
  expect_usage(o, "--prompt-tokens 1: must be >= 2");
  o = valid();
  o.decode = 0;
  expect_usage(o, "--gen-tokens 0");
  o = valid();
  o.models = {};
  expect_usage(o, "--models");
  o.models = {"llama"};
  expect_usage(o, "unknown model 'llama'");
  o.models = {"minigpt", "minigpt"};
  expect_usage(o, "given twice");
  // MiniGPT's context is 128 positions, the GPT-2-shaped body's 256.
  o = valid();
  o.prompt = 100;
  o.decode = 28;
  expect_usage(o, "exceed minigpt's context of 128 positions less the one cell node-llama-cpp keeps free (127)");
  o.decode = 27;
  CHECK_NOTHROW(validate(o));
  o.models = {"gpt2"};
  o.prompt = 200;
  o.decode = 55;
  CHECK_NOTHROW(validate(o));
  o.decode = 56;
  expect_usage(o, "exceed gpt2's context of 256");
  // --schemes: a subset of the table, by scheme; the K types are in it.
  o = valid();
  o.formats = {"q4_k", "int4-g64"};
  CHECK_NOTHROW(validate(o));
  o.formats = {"q4_0"};
  expect_usage(o, "unknown scheme 'q4_0'");
  o.formats = {"q6_k", "q6_k"};
  expect_usage(o, "'q6_k' given twice");
}

TEST_CASE("the formats: F32, Q8_0, Q4_0 and every K type, in the table's order") {
  const std::vector<std::pair<std::string, std::string>> want = {{"fp32", "F32"},  {"int8-per-channel", "Q8_0"}, {"int4-g64", "Q4_0"},
                                                                  {"q2_k", "Q2_K"}, {"q3_k", "Q3_K"},             {"q4_k", "Q4_K"},
                                                                  {"q5_k", "Q5_K"}, {"q6_k", "Q6_K"}};
  REQUIRE(vs_llama_formats().size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(vs_llama_formats()[i].scheme == want[i].first);
    CHECK(vs_llama_formats()[i].gguf_type == want[i].second);
  }
}

TEST_CASE("miniquant vs-llama: bad options exit 2 with one line, before any work") {
  struct Bad {
    const char* args;
    const char* says;
  };
  for (const Bad& b : {Bad{"--threads 0", "--threads 0: must be >= 1"}, Bad{"--rounds 0", "--rounds 0"},
                       Bad{"--prompt-tokens 1", "--prompt-tokens 1: must be >= 2"}, Bad{"--models minigpt,bert", "unknown model 'bert'"},
                       Bad{"--prompt-tokens 100 --gen-tokens 100 --models minigpt", "exceed minigpt's context of 128"},
                       Bad{"--threads two", "--threads"}, Bad{"--frobnicate", "frobnicate"}}) {
    CAPTURE(b.args);
    const CliResult r = run_cli(std::string("vs-llama ") + b.args + " --out /nonexistent/never/written");
    CHECK(r.code == 2);
    CHECK(r.out.find(b.says) != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
}

TEST_CASE("prefill with Outputs::last: the last position's logits and the same cache as a full prefill") {
  const minigpt::ModelConfig c{.vocab_size = 50, .n_ctx = 32, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512};
  for (const std::string scheme : {"fp32", "int4-g32+a8"}) {
    CAPTURE(scheme);
    minigpt::Model m(c, 42);
    minigpt::quantize_model(m, minigpt::QuantPlan::uniform(scheme));
    const std::vector<int32_t> toks = {1, 7, 3, 9, 12, 40, 2, 5, 33, 8};
    const std::vector<float> all = m.prefill(toks);
    const std::vector<float> next_all = m.decode(11);
    const std::vector<float> last = m.prefill(toks, minigpt::Outputs::last);
    REQUIRE(last.size() == static_cast<size_t>(c.vocab_size));
    CHECK(m.cache_length() == static_cast<int>(toks.size()));
    const std::vector<float> next_last = m.decode(11);
    // The last row runs through the same ops, alone instead of among 10 rows: float summation
    // order may differ (GEMM vs GEMV), nothing else. Logits here are O(1).
    double diff = 0, ndiff = 0;
    for (int v = 0; v < c.vocab_size; ++v) {
      diff = std::max(diff, double(std::fabs(last[v] - all[(toks.size() - 1) * c.vocab_size + v])));
      ndiff = std::max(ndiff, double(std::fabs(next_last[v] - next_all[v])));
    }
    CHECK(diff <= 1e-4);
    CHECK(ndiff == 0);  // the cache is the same: every position's keys and values were computed
    // A one-token prompt: its only row is the last.
    const std::vector<float> one_all = m.prefill({5});
    CHECK(m.prefill({5}, minigpt::Outputs::last) == one_all);
  }
}
