// The lab course's graders, run as a learner runs them (`miniquant lab check NN`): on the library's
// implementation every block passes; on the starter files as committed every block fails with its
// "not implemented" message (a check that passes on a starter would grade nothing). And the
// committed solutions/ are exactly what `miniquant lab solutions` generates from the committed JSON.
// Registered per lab by CMakeLists.txt (labels lab, labNN); built only with MQ_LABS.
#include <doctest/doctest.h>

#include <string>

#include <fmt/core.h>

#include "../cli_run.h"
#include "experiments/lab_solutions.h"
#include "miniquant/util/io.h"

namespace {

// Blocks per lab, in order.
std::string blocks_of(const std::string& nn) {
  if (nn == "00") return "ABCDEF";
  if (nn == "01") return "ABC";
  if (nn == "02") return "ABCD";
  return "ABC";
}

void reference(const std::string& nn) {
  const CliResult r = run_cli("lab check " + nn + " --reference");
  INFO(r.out);
  CHECK(r.code == 0);
  const std::string n = std::to_string(blocks_of(nn).size());
  CHECK(r.out.find(fmt::format("lab {}: {} of {} blocks passed\n", nn, n, n)) != std::string::npos);
  CHECK(r.out.find("FAILED") == std::string::npos);
  CHECK(r.out.find("numeric bars:") != std::string::npos);
}

void starter(const std::string& nn) {
  // Lab 02's blocks C and D read files: the default (absent) sweep folder and the starter answers.md.
  const CliResult r = run_cli("lab check " + nn + " --sweep-dir " + std::string(MQ_SOURCE_DIR) + "/labs/no-such-sweep");
  INFO(r.out);
  CHECK(r.code == 1);
  for (char b : blocks_of(nn)) {
    const std::string line = fmt::format("lab {} block {}: not implemented yet", nn, b);
    INFO("missing: " << line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(r.out.find(fmt::format("lab {}: 0 of {} blocks passed", nn, blocks_of(nn).size())) != std::string::npos);
  CHECK(r.out.find("miniquant: error: lab " + nn + ": not every block passed") != std::string::npos);
}

}  // namespace

TEST_CASE("lab 00 reference: the library passes every block") { reference("00"); }
TEST_CASE("lab 00 starter: every block fails, not implemented") { starter("00"); }
TEST_CASE("lab 01 reference: the library passes every block") { reference("01"); }
TEST_CASE("lab 01 starter: every block fails, not implemented") { starter("01"); }
TEST_CASE("lab 02 reference: the library and the committed sweep pass every block") { reference("02"); }
TEST_CASE("lab 02 starter: every block fails, not implemented") { starter("02"); }
TEST_CASE("lab 03 reference: the library passes every block") { reference("03"); }
TEST_CASE("lab 03 starter: every block fails, not implemented") { starter("03"); }

TEST_CASE("lab solutions: the committed files are what the generator writes from the committed JSON") {
  for (const auto& [name, text] : mqexp::lab_solutions(MQ_SOURCE_DIR)) {
    INFO(name << ": run `miniquant lab solutions` and commit the result");
    CHECK(mq::read_file(std::string(MQ_SOURCE_DIR) + "/solutions/" + name) == text);
  }
  const CliResult r = run_cli("lab check 7");
  CHECK(r.code == 2);
  CHECK(r.out.find("no such lab") != std::string::npos);
}
