// `miniquant vs-llama` end to end on the shipped MiniGPT with the real llama.cpp through both drivers (llama_speed,
// its C API; tools/llama/speed.mjs, node-llama-cpp): one round, a short prompt and decode. Speed decides nothing
// here; the test checks that every number is a positive finite rate, the ratios are the medians' quotients against
// the C API row, the driver passed its ABI checks, every file is written
// (results, manifest with the machine facts, README block) and the temporary GGUF files are gone.
// Skipped (exit 77: ctest reports it skipped, with the reason) when tools/llama/node_modules is missing (scripts/setup_node.sh).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "llama_env.h"
#include "experiments/experiment_io.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace {

const std::string kLlamaDir = MQ_SOURCE_DIR "/tools/llama";

bool llama_installed() { return llama_usable(); }

void check_rate(const nlohmann::json& s) {
  CAPTURE(s.dump());
  for (const char* k : {"median", "min", "max"}) {
    const double v = s.at(k).get<double>();
    CHECK(std::isfinite(v));
    CHECK(v > 0);
  }
  CHECK(s["min"].get<double>() <= s["median"].get<double>());
  CHECK(s["median"].get<double>() <= s["max"].get<double>());
  CHECK(s["samples"].size() == 1);
}

}  // namespace

TEST_CASE("node-llama-cpp is usable (else the vs-llama run below is skipped)") {
  const std::string why = llama_skip_reason();
  if (!why.empty()) {  // ctest reports exit 77 as skipped (SKIP_RETURN_CODE): the reason is this line
    std::printf("skipped: miniquant vs-llama: %s\n", why.c_str());
    std::fflush(stdout);
    std::_Exit(77);
  }
}

TEST_CASE("miniquant vs-llama: one round on MiniGPT writes consistent results" * doctest::skip(!llama_installed())) {
  const std::string dir = mqtest::temp_path("mq_test", "mq_vs_llama_slow");
  fs::remove_all(dir);
  fs::create_directories(dir + "/tmp");
  const mq::CommandOutput r = mq::run_command("TMPDIR=" + dir + "/tmp " + MQ_CLI_PATH +
                                              " vs-llama --rounds 1 --prompt-tokens 16 --gen-tokens 8 --models minigpt --schemes fp32,int8-per-channel,int4-g64,q4_k --out " + dir + "/out 2>&1");
  INFO(r.out);
  REQUIRE(r.code == 0);

  const nlohmann::json res = mqexp::read_json(dir + "/out/results.json");
  CHECK(res["options"]["threads"].get<int>() == 2);
  CHECK(res["options"]["prompt"].get<int>() == 16);
  CHECK(res["options"]["decode"].get<int>() == 8);
  CHECK(res["llama_cpp"]["settings"]["threads"].get<int>() == 2);
  CHECK(res["llama_cpp"]["settings"]["kv_cache"].get<std::string>() == "F32");
  CHECK(res["llama_cpp"]["settings"]["threadpool"].get<std::string>() == "persistent");
  CHECK(res["llama_cpp"]["node_settings"]["threads"].get<int>() == 2);
  REQUIRE(!res["llama_cpp"]["abi"].empty());
  for (const auto& k : res["llama_cpp"]["abi"]) CHECK(k["ok"].get<bool>());
  REQUIRE(res["models"].size() == 1);
  const auto& m = res["models"][0];
  CHECK(m["name"].get<std::string>() == "minigpt");
  REQUIRE(m["formats"].size() == 4);
  const char* types[] = {"F32", "Q8_0", "Q4_0", "Q4_K"};
  for (size_t i = 0; i < 4; ++i) {
    const auto& f = m["formats"][i];
    CAPTURE(f["scheme"].get<std::string>());
    CHECK(f["gguf_type"].get<std::string>() == types[i]);
    CHECK(f["file_bytes"].get<int64_t>() > 0);
    const auto& l = f["llama_cpp"];
    const auto& n = f["llama_cpp_node"];
    for (const char* k : {"decode_tokens_per_s", "prefill_tokens_per_s", "wall_decode_tokens_per_s", "wall_prefill_tokens_per_s"}) {
      check_rate(l[k]);
      check_rate(n[k]);
    }
    CHECK(n["decode_ratio"].get<double>() ==
          doctest::Approx(n["decode_tokens_per_s"]["median"].get<double>() / l["decode_tokens_per_s"]["median"].get<double>()).epsilon(1e-12));
    // fp32 runs weight-only only; Q8_0, Q4_0 and Q4_K also with int8 activations.
    REQUIRE(f["miniquant"].size() == (i == 0 ? 1u : 2u));
    for (const auto& o : f["miniquant"]) {
      check_rate(o["decode_tokens_per_s"]);
      check_rate(o["prefill_tokens_per_s"]);
      const double dr = o["decode_tokens_per_s"]["median"].get<double>() / l["decode_tokens_per_s"]["median"].get<double>();
      const double pr = o["prefill_tokens_per_s"]["median"].get<double>() / l["prefill_tokens_per_s"]["median"].get<double>();
      CHECK(o["decode_ratio"].get<double>() == doctest::Approx(dr).epsilon(1e-12));
      CHECK(o["prefill_ratio"].get<double>() == doctest::Approx(pr).epsilon(1e-12));
    }
    CHECK(f["miniquant"][0]["path"].get<std::string>() == "weight-only");
  }

  // The table in the README block, machine facts and load in the manifest.
  const std::string readme = mq::read_file(dir + "/out/README.md");
  CHECK(readme.find("| MiniGPT | Q4_0 (int4-g64") != std::string::npos);
  CHECK(readme.find("| MiniGPT | Q4_K (q4_k") != std::string::npos);
  CHECK(readme.find("miniquant +a8") != std::string::npos);
  CHECK(readme.find("| MiniGPT | Q4_0 (int4-g64, 3.0 MB) | llama.cpp (C API) |") != std::string::npos);
  CHECK(readme.find("| MiniGPT | Q4_0 (int4-g64, 3.0 MB) | llama.cpp via node-llama-cpp |") != std::string::npos);
  const nlohmann::json man = mqexp::read_json(dir + "/out/manifest.json");
  CHECK(man["machine"]["cpu_family"].get<int>() >= 0);
  CHECK(!man["machine"]["cpu_flags"].empty());
  CHECK(man["load_average"]["before"].get<double>() >= 0);
  CHECK(man["load_average"]["after"].get<double>() >= 0);
  CHECK(man["checkpoint"]["sha256"].get<std::string>().size() == 64);
  CHECK(man["command"].get<std::string>().find("vs-llama") != std::string::npos);
  // The GGUF files went to TMPDIR and were removed.
  CHECK(fs::is_empty(dir + "/tmp"));
  fs::remove_all(dir);
}
