// The shipped MiniGPT (data/minigpt.safetensors) still meets the bars: test perplexity
// within 10% of the corpus floor (and never below it), verb-tense accuracy >= 97% overall and
// >= 90% on the attractor and long-range constructions.
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_run.h"

TEST_CASE("the shipped model meets the quality bars") {
  const std::string model = MQ_SOURCE_DIR "/data/minigpt.safetensors";
  REQUIRE(std::filesystem::exists(model));
  const CliResult r = run_cli("eval --model " + model + " --json");
  INFO(r.out);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double ratio = j["ppl"].get<double>() / j["ppl_floor"].get<double>();
  CHECK(ratio >= 1.0);  // below the floor would mean the floor or the perplexity is miscomputed
  CHECK(ratio <= 1.10);
  CHECK(j["verb_tense_accuracy"].get<double>() >= 0.97);
  CHECK(j["verb_tense"]["by_construction"]["attractor"]["accuracy"].get<double>() >= 0.90);
  CHECK(j["verb_tense"]["by_construction"]["long_range"]["accuracy"].get<double>() >= 0.90);
  CHECK(j["verb_tense"]["overall"]["total"].get<int>() >= 2000);
}
