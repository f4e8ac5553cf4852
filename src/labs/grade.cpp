// Runs a lab's blocks and prints the report (see grade.h).
#include "labs/grade.h"

#include "labs/twins.h"
#include "minigpt/safetensors.h"
#include "miniquant/util/sysinfo.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <thread>
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

void within_seconds(double seconds, const std::string& what, const std::function<void()>& f) {
  std::packaged_task<void()> task(f);
  std::future<void> done = task.get_future();
  std::thread t(std::move(task));
  if (done.wait_for(std::chrono::duration<double>(seconds)) == std::future_status::timeout) {
    fmt::print("      FAILED  {}: still running after {:g} s; the grader stops here\n", what, seconds);
    std::fflush(stdout);
    std::_Exit(1);  // the learner's thread cannot be stopped; nothing else is left to report
  }
  t.join();
  done.get();
}

std::string pct(double fraction, int digits) { return fmt::format("{:+.{}f}%", 100.0 * fraction, digits); }

namespace {

void print_check(const Check& c) {
  if (c.passed)
    fmt::print("      passed  {}: {}\n", c.name, c.got);
  else
    fmt::print("      FAILED  {}: expected {}, got {}\n", c.name, c.expected, c.got);
}

// A learner's block that crashes (an empty vector's front(), an index out of range) must still name its block: the
// report line is written before the block runs and printed by the signal handler, with write(2) only.
char g_crash_line[768];

extern "C" void on_crash(int sig) {
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGFPE ? "SIGFPE" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGABRT";
  const char* tail = " inside this block (an index out of range, an empty vector's front(), a null pointer?); the blocks after it were "
                     "not graded\n";
  ssize_t ignored = ::write(STDOUT_FILENO, g_crash_line, std::strlen(g_crash_line));
  ignored = ::write(STDOUT_FILENO, name, std::strlen(name));
  ignored = ::write(STDOUT_FILENO, tail, std::strlen(tail));
  (void)ignored;
  ::_exit(1);
}

void guard_block(const Lab& lab, const Block& b) {
  std::fflush(stdout);  // what the earlier blocks printed comes first
  std::snprintf(g_crash_line, sizeof g_crash_line, "  block %s %s: FAILED: lab %s: your code crashed with ", b.id.c_str(), b.title.c_str(),
                lab.number.c_str());
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int run_lab(const std::function<Lab(const LabOptions&)>& make, int argc, char** argv, const std::string& learner_object,
            const std::string& graded_file) {
  LabOptions o;
  o.root = MQ_SOURCE_DIR;
  CLI::App app{"grades one lab of the course (run it as `miniquant lab check NN`)"};
  app.add_option("--root", o.root, "the repository (data/, experiments/)");
  app.add_option("--run-dir,--sweep-dir", o.run_dir, "labs 02, 04, 05: the folder `miniquant sweep / energy / mixed --out` wrote");
  app.add_option("--answers", o.answers, "labs 02, 04, 05, 07: the file with your answers to the lab's questions");
  app.add_option("--block", o.blocks, "grade only these blocks, e.g. E or CD (default: every block)");
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

  if (app.count("--block") && o.blocks.empty()) {
    fmt::print(stderr, "lab: error: --block is empty: give the blocks to grade, e.g. E\n");
    return 2;
  }
  o.learner = !learner_object.empty();
  Lab lab = make(o);
  if (!graded_file.empty()) lab.file = graded_file;
  if (!o.blocks.empty()) {
    std::vector<Block> chosen;
    for (const Block& b : lab.blocks)
      if (o.blocks.find(b.id) != std::string::npos) chosen.push_back(b);
    std::string ids;
    for (const Block& b : lab.blocks) ids += b.id;
    if (o.blocks.find_first_not_of(ids) != std::string::npos) {
      fmt::print(stderr, "lab: error: --block {}: lab {} has blocks {} only\n", o.blocks, lab.number, ids);
      return 2;
    }
    lab.blocks = chosen;
  }
  fmt::print("lab {} {}: your file is {}\n", lab.number, lab.title, lab.file);
  int passed = 0;
  std::vector<Check> bars;
  std::vector<std::string> calls;  // what the learner's file calls, read once
  std::string calls_error;
  if (!learner_object.empty()) try {
      calls = undefined_symbols(learner_object);
    } catch (const std::exception& e) {
      calls_error = e.what();
    }
  for (const Block& b : lab.blocks) {
    Checks checks;
    std::string error;
    guard_block(lab, b);
    try {
      b.run(checks);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!learner_object.empty() && !b.twins.empty()) {
      std::string names;
      for (const std::string& t : b.twins) names += (names.empty() ? "" : ", ") + t;
      const std::string hit = calls_error.empty() ? references_twin(calls, b.twins) : "";
      checks.expect(calls_error.empty() && hit.empty(), "your own code, not the library's twin",
                    "no call of " + names + " in " + lab.file,
                    !calls_error.empty() ? calls_error : hit.empty() ? "none called" : "calls " + hit);
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
  fmt::print("lab {}: {} of {} blocks passed{}{}\n", lab.number, passed, n, o.blocks.empty() ? std::string() : " (--block " + o.blocks + ")",
             passed == n ? "" : "; see the handout's TODO blocks and pitfalls");
  return passed == n ? 0 : 1;
}

bool is_shipped_checkpoint(const std::string& sha256, const std::string& root) {
  const std::string path = root + "/data/minigpt.safetensors";
  return !sha256.empty() && (sha256 == mq::sha256_file(path) || sha256 == minigpt::content_sha256(path));
}

}  // namespace mqlab
