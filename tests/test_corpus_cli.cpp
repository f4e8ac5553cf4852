// `miniquant corpus` end to end: JSON output on a small corpus, and exit code 2 for bad options.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "miniquant/util/sysinfo.h"

namespace {

struct Run {
  int code = -1;
  std::string out;
};

Run run(const std::string& args) {
  mq::CommandOutput r = mq::run_command(std::string(MQ_CLI_PATH) + " " + args + " 2>/dev/null");
  return {r.code, std::move(r.out)};
}

}  // namespace

TEST_CASE("corpus --json reports every split") {
  const Run r = run("corpus --json --sample 2 --train-tokens 3000 --val-tokens 1000 --test-tokens 2000");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["seed"] == 42);
  CHECK(j["lexicon"]["irregular"].get<int>() >= 80);
  CHECK(j["samples"].size() == 2);
  for (const char* split : {"train", "val", "test"}) {
    const auto& s = j["splits"][split];
    CHECK(s["tokens"].get<int64_t>() >= 1000);
    const double nats = s["nats_per_token"].get<double>();
    CHECK(s["floor_ppl"].get<double>() == doctest::Approx(std::exp(nats)));
    CHECK(s["bits_per_token"].get<double>() == doctest::Approx(nats / std::log(2.0)));
    CHECK(s["slots"].size() == 7);  // the four easy constructions and the hard three
  }
}

TEST_CASE("corpus: bad option values exit with code 2") {
  CHECK(run("corpus --sample -1").code == 2);
  CHECK(run("corpus --seed banana").code == 2);
  CHECK(run("corpus --lexicon /nonexistent/lexicon").code == 2);
  CHECK(run("corpus --train-tokens -5").code == 2);
  CHECK(run("corpus --no-such-option").code == 2);
}
