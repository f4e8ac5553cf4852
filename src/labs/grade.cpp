// Runs a lab's blocks and prints the report (see grade.h).
#include "labs/grade.h"

#include <cmath>
#include <exception>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

namespace mqlab {

bool Checks::expect(bool ok, std::string name, std::string expected, std::string got) {
  checks_.push_back({std::move(name), ok, std::move(expected), std::move(got), false});
  return ok;
}

bool Checks::bar(bool ok, std::string name, std::string expected, std::string got) {
  checks_.push_back({std::move(name), ok, std::move(expected), std::move(got), true});
  return ok;
}

std::string num(double v, int digits) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  return fmt::format("{:.{}g}", v, digits);
}

std::string pct(double fraction, int digits) { return fmt::format("{:+.{}f}%", 100.0 * fraction, digits); }

namespace {

void print_check(const Check& c) {
  if (c.passed)
    fmt::print("      passed  {}: {}\n", c.name, c.got);
  else
    fmt::print("      FAILED  {}: expected {}, got {}\n", c.name, c.expected, c.got);
}

}  // namespace

int run_lab(const std::function<Lab(const LabOptions&)>& make, int argc, char** argv) {
  LabOptions o;
  o.root = MQ_SOURCE_DIR;
  CLI::App app{"grades one lab of the course (run it as `miniquant lab check NN`)"};
  app.add_option("--root", o.root, "the repository (data/, experiments/)");
  app.add_option("--sweep-dir", o.sweep_dir, "lab 02: the folder `miniquant sweep --out` wrote");
  app.add_option("--answers", o.answers, "lab 02: the file with your answers to the four questions");
  app.add_option("--ppl-tokens", o.ppl_tokens, "perplexity checks score this many test-split tokens")
      ->check(CLI::Range(int64_t{1024}, int64_t{200000}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "lab: error: {} (see --help)\n", e.what());
    return 2;
  }

  const Lab lab = make(o);
  fmt::print("lab {} {}: your file is {}\n", lab.number, lab.title, lab.file);
  int passed = 0;
  std::vector<Check> bars;
  for (const Block& b : lab.blocks) {
    Checks checks;
    std::string error;
    try {
      b.run(checks);
    } catch (const std::exception& e) {
      error = e.what();
    }
    bool ok = error.empty();
    for (const Check& c : checks.all()) ok = ok && c.passed;
    passed += ok;
    if (!error.empty())
      fmt::print("  block {} {}: FAILED: {}\n", b.id, b.title, error);
    else
      fmt::print("  block {} {}: {}\n", b.id, b.title, ok ? "passed" : "FAILED");
    for (const Check& c : checks.all()) {
      print_check(c);
      if (c.bar) bars.push_back(c);
    }
    // A block that stopped before its bars still owes them: listed as not measured.
    if (!error.empty())
      for (const std::string& name : b.bars) bars.push_back({name, false, "block " + b.id + " passing", "not measured", true});
  }
  fmt::print("  numeric bars:\n");
  for (const Check& c : bars)
    fmt::print("    {}  {}: {} (bar: {})\n", c.passed ? "passed" : "FAILED", c.name, c.got, c.expected);
  if (bars.empty()) fmt::print("    (none measured)\n");
  const int n = static_cast<int>(lab.blocks.size());
  fmt::print("lab {}: {} of {} blocks passed{}\n", lab.number, passed, n,
             passed == n ? "" : "; see the handout's TODO blocks and pitfalls");
  return passed == n ? 0 : 1;
}

}  // namespace mqlab
