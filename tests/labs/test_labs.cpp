// The lab course's graders, run as a learner runs them (`miniquant lab check NN`): on the library's
// implementation every block passes; on the starter files every block fails with its "not implemented"
// message (a check that passes on a starter would grade nothing), as long as the starter files are the
// committed ones (labs/starters.sha256) or still implement nothing; once a learner has started, the starter
// test grades their work instead and reports it without failing. The committed solutions/ are exactly what
// `miniquant lab solutions` generates from the committed JSON; a grader older than its sources is refused or
// rebuilt; a learner's file that calls the library's twin of a block is caught by its symbols.
// Registered per lab by CMakeLists.txt (labels lab, labNN); built only with MQ_LABS.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "../cli_run.h"
#include "experiments/lab_course.h"
#include "experiments/lab_solutions.h"
#include "labs/lab06_bars.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/io.h"
#include "../temp_dir.h"

namespace {

namespace fs = std::filesystem;

void reference(const std::string& nn) {
  const mqexp::LabInfo& lab = mqexp::find_lab(nn);
  const CliResult r = run_cli("lab check " + nn + " --reference --no-rebuild");
  INFO(r.out);
  CHECK(r.code == 0);
  const std::string n = std::to_string(lab.blocks.size());
  CHECK(r.out.find(fmt::format("lab {}: {} of {} blocks passed\n", nn, n, n)) != std::string::npos);
  CHECK(r.out.find("FAILED") == std::string::npos);
  CHECK(r.out.find("numeric bars:") != std::string::npos);
}

void starter(const std::string& nn) {
  const mqexp::LabInfo& lab = mqexp::find_lab(nn);
  const mqexp::StarterState state = mqexp::starter_state(MQ_SOURCE_DIR, lab);
  // Blocks that grade a run (labs 02, 04, 05) read it from a folder that is not there.
  const std::string cmd = "lab check " + nn + " --no-rebuild --run-dir " + std::string(MQ_SOURCE_DIR) + "/labs/no-such-run";
  const CliResult r = run_cli(cmd);
  INFO(r.out);
  if (state == mqexp::StarterState::started) {
    // The learner's work: graded, and reported, not a failure of the test suite.
    const size_t at = r.out.find(fmt::format("lab {}: ", nn), r.out.rfind("numeric bars:") == std::string::npos ? 0 : r.out.rfind("numeric bars:"));
    MESSAGE(fmt::format("lab {}: your files differ from the starters (labs/starters.sha256): graded as your work, not required to "
                        "fail: {}", nn, at == std::string::npos ? std::string("no summary line") : r.out.substr(at, r.out.find('\n', at) - at)));
    CHECK(r.code != 2);  // the grader ran (a failing block is your progress, not a broken test)
    return;
  }
  CHECK(r.code == 1);
  for (char b : lab.blocks) {
    const std::string line = fmt::format("lab {} block {}: not implemented yet", nn, b);
    INFO("missing: " << line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(r.out.find(fmt::format("lab {}: 0 of {} blocks passed", nn, lab.blocks.size())) != std::string::npos);
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
TEST_CASE("lab 04 reference: the library and the committed energy run pass every block") { reference("04"); }
TEST_CASE("lab 04 starter: every block fails, not implemented") { starter("04"); }
TEST_CASE("lab 05 reference: the library and the committed mixed study pass every block") { reference("05"); }
TEST_CASE("lab 05 starter: every block fails, not implemented") { starter("05"); }

TEST_CASE("lab 06 reference: the library passes every block, its speed bars against itself and the read bandwidth") { reference("06"); }
TEST_CASE("lab 06 starter: every block fails, not implemented") { starter("06"); }

TEST_CASE("lab 07 reference: the library passes every block") { reference("07"); }
TEST_CASE("lab 07 starter: every block fails, not implemented") { starter("07"); }

// Lab 06's block E bars on recorded figures (share of the read bandwidth, the library's share, the library's time over
// yours): a bar held on a machine must not grade the machine. Per round, share = library's time over yours x library's
// share, so wherever the share bar is held, a GEMV that passes the library bar passes it too.
TEST_CASE("lab course: lab 06's held bars (D, E, F) on recorded figures; the share bar asks no more than the library bar") {
  using namespace mqlab::lab06;
  struct Run { const char* what; double share, library_share, library_over_yours; bool share_held, passes; };
  const Run runs[] = {
      // The handout's solution, this project's Intel Xeon VM, 2026-12-03: 3.0 of 33 GB/s, the library 19 GB/s.
      {"handout solution, Xeon, 33 GB/s", 0.091, 0.57, 0.16, false, true},
      // The same kernel and library on the same CPU with 45 GB/s of read bandwidth: under the old 40% bound the share
      // bar was held there and failed (6.7% < 8%) while the library bar passed.
      {"handout solution, Xeon, 45 GB/s", 0.067, 0.42, 0.16, false, true},
      // Zen 4 VM, 2026-11-29, the top of the recorded ranges (solution 24% and 0.36, library 66%): not held, met.
      {"handout solution, Zen 4, top of its range", 0.24, 0.66, 0.36, false, true},
      // Constructed, not recorded: the same solution where the library's GEMV is bound by the memory (70%): held, met.
      {"handout solution, a memory-bound machine (constructed)", 0.25, 0.70, 0.36, true, true},
      // The first version of that solution (a group decoded into a buffer, one hadd per group; 5% and 0.07 on Zen 4):
      // fails wherever it runs; the memory-bound row is constructed the same way.
      {"buffer-and-hadd version, Zen 4", 0.05, 0.66, 0.07, false, false},
      {"buffer-and-hadd version, a memory-bound machine (constructed)", 0.05, 0.70, 0.07, true, false},
  };
  for (const Run& r : runs) {
    CAPTURE(r.what);
    const Bar share = bandwidth_share_bar(r.share, r.library_share), ratio = library_gemv_bar(r.library_over_yours);
    CHECK(share.held == r.share_held);
    CHECK((share.passed && ratio.passed) == r.passes);
    // Where held, the share bar follows from the library bar (share = ratio x library share, >= 0.12 x 2/3 = 8%).
    if (share.held && ratio.passed) CHECK(r.library_over_yours * r.library_share >= kMinDramFraction);
  }
  CHECK(library_gemv_bar(kMinLibraryGemv).passed);
  CHECK(!library_gemv_bar(kMinLibraryGemv - 1e-9).passed);
  CHECK(bandwidth_share_bar(kMinDramFraction - 1e-9, kLibraryMemoryBound).held);
  CHECK(!bandwidth_share_bar(kMinDramFraction - 1e-9, kLibraryMemoryBound).passed);
  CHECK(bandwidth_share_bar(0.0, kLibraryMemoryBound - 1e-9).passed);  // not held: reported only
  // Blocks D and F: held where the library shows what they ask, met at the threshold itself.
  CHECK(thread_speedup_bar(kMinThreadSpeedup, kMinThreadSpeedup).passed);
  CHECK(!thread_speedup_bar(1.0, kMinThreadSpeedup).passed);
  CHECK(!thread_speedup_bar(1.0, 1.0).held);
  CHECK(thread_speedup_bar(1.0, 1.0).passed);
  CHECK(eight_over_one_bar(kMaxGemmOverGemv, kLibraryCeiling).passed);
  CHECK(!eight_over_one_bar(8.2, 4.6).passed);  // a loop of 8 GEMVs (8.2x) where the library shares its reads (4.3-5.1x)
  CHECK(!eight_over_one_bar(8.2, 7.15).held);   // this Xeon: the library's own 7.15x, reported only
}

// A learner's lab 06 written from the handout alone (tests/labs/lab06_solution.cpp), graded by the same checks: the
// handout's speed bars are within reach of what it teaches.
// Its code blocks A-F; the answers of block G are read against a table by test_lab_answers.cpp. The run's table is
// kept in a folder of the test's own, not in the source tree's labs/06-kernel/run/.
TEST_CASE("lab 06 solution: a learner-style solution passes every code block and bar, and keeps its table") {
  const std::string exe = (std::filesystem::path(MQ_CLI_PATH).parent_path() / "labs" / "lab06_solution").string();
  const std::string dir = mqtest::temp_path("mq_test", "mq_lab06_run_" + std::to_string(::getpid()));
  const mq::CommandOutput r = mq::run_command(exe + " --block ABCDEF --run-dir " + dir + " 2>&1");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("lab 06: 6 of 6 blocks passed (--block ABCDEF)\n") != std::string::npos);
  CHECK(r.out.find("FAILED") == std::string::npos);
  const nlohmann::json kept = nlohmann::json::parse(mq::read_file(dir + "/tables.json"));
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].at("cpu") == mq::cpu_info().model);
  CHECK(kept[0].at("eight_over_one").get<double>() > 1.0);
  std::filesystem::remove_all(dir);
}

// Every lab written from its handout alone (tests/labs/labNN_solution.cpp; lab 06's test is above): its code blocks
// pass (lab 07's block E too: it runs the learner's AWQ on the whole model; the run-and-answers blocks of 02, 04 and
// 05 grade a learner's own run, which tests/labs/test_lab_answers.cpp covers on the committed runs).
static void learner_solution(const std::string& nn, const std::string& blocks) {
  const std::string exe = (std::filesystem::path(MQ_CLI_PATH).parent_path() / "labs" / ("lab" + nn + "_solution")).string();
  const mq::CommandOutput r = mq::run_command(exe + " --block " + blocks + " 2>&1");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find(fmt::format("lab {}: {} of {} blocks passed (--block {})\n", nn, blocks.size(), blocks.size(), blocks)) != std::string::npos);
  CHECK(r.out.find("FAILED") == std::string::npos);
}
TEST_CASE("lab 00 solution: a learner-style solution passes every block") { learner_solution("00", "ABCDEF"); }
TEST_CASE("lab 01 solution: a learner-style solution passes every block") { learner_solution("01", "ABC"); }
TEST_CASE("lab 02 solution: a learner-style solution passes blocks A-B") { learner_solution("02", "AB"); }
TEST_CASE("lab 03 solution: a learner-style solution passes every block") { learner_solution("03", "ABC"); }
TEST_CASE("lab 04 solution: a learner-style solution passes blocks A-D") { learner_solution("04", "ABCD"); }
TEST_CASE("lab 05 solution: a learner-style solution passes blocks A-D") { learner_solution("05", "ABCD"); }
TEST_CASE("lab 07 solution: a learner-style solution passes every block") { learner_solution("07", "ABCDE"); }

TEST_CASE("lab solutions: the committed files are what the generator writes from the committed JSON") {
  for (const auto& [file, text] : mqexp::lab_solutions(MQ_SOURCE_DIR)) {
    const std::string& name = file;  // INFO captures it in a lambda, which clang 14 refuses for a structured binding
    INFO(name << ": run `miniquant lab solutions` and commit the result");
    CHECK(mq::read_file(std::string(MQ_SOURCE_DIR) + "/solutions/" + name) == text);
  }
  const CliResult r = run_cli("lab check 8");
  CHECK(r.code == 2);
  CHECK(r.out.find("no such lab") != std::string::npos);
  const CliResult list = run_cli("lab list");
  CHECK(list.code == 0);
  for (const mqexp::LabInfo& lab : mqexp::lab_list()) CHECK(list.out.find(lab.number + "  " + lab.title) != std::string::npos);
}

TEST_CASE("lab course: starter state, stale graders") {
  const fs::path dir = fs::path(mqtest::temp_path("mq_test", "mq_test_labs_" + std::to_string(::getpid())));
  fs::remove_all(dir);
  // A copy of lab 01's starter in a tree of its own: unchanged, edited without implementing, started.
  mqexp::LabInfo lab = mqexp::find_lab("01");
  const fs::path file = dir / "labs" / lab.dir / lab.file;
  fs::create_directories(file.parent_path());
  fs::copy_file(fs::path(MQ_SOURCE_DIR) / "labs" / lab.dir / lab.file, file);
  fs::copy_file(fs::path(MQ_SOURCE_DIR) / "labs" / "starters.sha256", dir / "labs" / "starters.sha256");
  CHECK(mqexp::starter_state(dir.string(), lab) == mqexp::StarterState::unchanged);
  std::ofstream(file, std::ios::app) << "// a learner's note\n";
  CHECK(mqexp::starter_state(dir.string(), lab) == mqexp::StarterState::untouched);
  std::string text = mq::read_file(file.string());
  const std::string msg = "lab 01 block B: not implemented yet";
  text.replace(text.find(msg), msg.size(), "lab 01 block B: done");
  mq::write_file_atomic(file.string(), text);
  CHECK(mqexp::starter_state(dir.string(), lab) == mqexp::StarterState::started);

  // A binary older than a source is stale; a newer one is not.
  const fs::path bin = dir / "lab01";
  std::ofstream(bin) << "x";
  const auto now = fs::last_write_time(bin);
  fs::last_write_time(file, now + std::chrono::hours(1));
  CHECK(mqexp::newer_source(bin, {file}) == file.string());
  fs::last_write_time(file, now - std::chrono::hours(1));
  CHECK(mqexp::newer_source(bin, {file}).empty());
  CHECK(mqexp::newer_source(dir / "absent", {file}).empty());

  // Through the CLI: a copy of miniquant whose lab 01 grader is older than the course's sources (MQ_SOURCE_DIR)
  // refuses it with --no-rebuild, and without it tries to rebuild, in one line each (here there is no build folder).
  fs::create_directories(dir / "bin" / "labs");
  fs::copy_file(MQ_CLI_PATH, dir / "bin" / "miniquant");
  std::ofstream(dir / "bin" / "labs" / "lab01") << "#!/bin/sh\nexit 0\n";
  fs::permissions(dir / "bin" / "labs" / "lab01", fs::perms::owner_all);
  fs::last_write_time(dir / "bin" / "labs" / "lab01", now - std::chrono::hours(24 * 365 * 20));
  const auto run = [&](const std::string& args) {
    mq::CommandOutput r = mq::run_command((dir / "bin" / "miniquant").string() + " " + args + " 2>&1");
    return CliResult{r.code, r.out};
  };
  CliResult r = run("lab check 01 --no-rebuild");
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("lab 01: the grader " + (dir / "bin" / "labs" / "lab01").string() + " is older than ") != std::string::npos);
  CHECK(r.out.find("rebuild it (cmake --build " + dir.string() + " --target lab01 -j 2) or drop --no-rebuild") != std::string::npos);
  r = run("lab check 01");
  CHECK(r.code == 1);
  CHECK(r.out.find("is not a CMake build folder to rebuild it in") != std::string::npos);
  fs::remove_all(dir);
}
