// The command line: help, exit codes, one-line errors, and quant-report's numbers.
#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace {
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("--help works for the tool and every subcommand") {
  CliResult r = run_cli("--help");
  CHECK(r.code == 0);
  CHECK(r.out.find("quant-report") != std::string::npos);
  r = run_cli("quant-report --help");
  CHECK(r.code == 0);
  CHECK(r.out.find("--shape") != std::string::npos);
}

TEST_CASE("bad command lines exit 2 with one line") {
  for (const char* args : {"", "frobnicate", "quant-report --bogus", "quant-report --shape 12", "quant-report --shape 0x4",
                           "quant-report --seed abc", "quant-report --schemes int5-g64", "quant-report --npy /nonexistent.npy",
                           "quant-report --npy /etc/hostname --shape 4x4"}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    CHECK(r.code == 2);
    CHECK(lines(r.out) == 1);
    CHECK(r.out.rfind("miniquant: error: ", 0) == 0);
  }
  const CliResult r = run_cli("quant-report --schemes int5-g64");
  CHECK(r.out.find("unknown scheme 'int5-g64'") != std::string::npos);
  CHECK(r.out.find("int4-g128-asym") != std::string::npos);  // lists the valid names
}

TEST_CASE("a file that is not .npy is a runtime error with exit code 1") {
  const CliResult r = run_cli("quant-report --npy /etc/hostname");
  CHECK(r.code == 1);
  CHECK(r.out.find("is not a .npy file") != std::string::npos);
}

TEST_CASE("quant-report --json reports exact bytes for 256x256") {
  const CliResult r = run_cli("quant-report --shape 256x256 --seed 42 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["source"]["seed"] == 42);
  bool seen = false;
  for (const auto& s : j["schemes"]) {
    CHECK(s.contains("bytes"));
    if (s["scheme"] == "int4-g64") {
      seen = true;
      CHECK(s["bytes"] == 32768 + 2048);
      CHECK(s["code_bytes"] == 32768);
      CHECK(s["bits_per_weight"] == 4.25);
      CHECK(s["sqnr_db"].get<double>() > 18.0);  // ~19.4 dB for N(0,1) at int4-g64
      CHECK(s["sqnr_db"].get<double>() < 21.0);
    }
    if (s["scheme"] == "fp32") CHECK(s["sqnr_db"].is_null());  // lossless: infinite SQNR
  }
  CHECK(seen);
  // Same seed, same numbers (timings aside).
  auto again = nlohmann::json::parse(run_cli("quant-report --shape 256x256 --seed 42 --json").out);
  auto first = j;
  for (auto* doc : {&first, &again})
    for (auto& s : (*doc)["schemes"]) s.erase("quantize_ms");
  CHECK(first == again);
}

TEST_CASE("schemes that do not fit the shape are reported, the others still run") {
  const CliResult r = run_cli("quant-report --shape 4x96 --schemes int4-g64,int4-g32 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schemes"][0]["error"].get<std::string>().find("group size 64 does not divide the input width 96") != std::string::npos);
  CHECK(j["schemes"][1]["bytes"] == 4 * 48 + 4 * 3 * 2);
}
