// `miniquant corpus` end to end: JSON output on a small corpus, and exit code 2 for bad options.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

struct Run {
  int code = -1;
  std::string out;
};

Run run(const std::string& args) {
  Run r;
  const std::string cmd = std::string(MQ_CLI_PATH) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
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
    CHECK(s["slots"].size() == 4);
  }
}

TEST_CASE("corpus: bad option values exit with code 2") {
  CHECK(run("corpus --sample -1").code == 2);
  CHECK(run("corpus --seed banana").code == 2);
  CHECK(run("corpus --lexicon /nonexistent/lexicon").code == 2);
  CHECK(run("corpus --train-tokens -5").code == 2);
  CHECK(run("corpus --no-such-option").code == 2);
}
