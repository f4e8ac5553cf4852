// Hostile input, issue 37, JSON: every JSON file goes through one checked reader (size cap, depth,
// duplicate keys, a memory budget proportional to its size), readers check the shape they read and
// name the file and the key, and a safetensors header is bounded before it is read. Each class's test
// is named after it; every error is checked by its text and, through the CLI, its exit code.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/ceilings.h"
#include "experiments/energy_report.h"
#include "hostile_helpers.h"
#include "miniquant/energy/model.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/json_shape.h"

using namespace hostile;
using nlohmann::json;

namespace {

// Growth of the peak resident memory (KB) while `f` runs, measured in a forked child: the child's
// high-water mark starts at its size at the fork, so an earlier peak of the test cannot hide this one.
// -1 when the child could not report.
// Under AddressSanitizer the peak is ASan's allocator's (a redzone around every allocation, freed memory held
// in quarantine, shadow pages), not this library's: the bounds below are asserted by the release build's
// run of this same test, and the sanitizer run checks only that the work is refused.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPeakIsOurs = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPeakIsOurs = false;
#else
constexpr bool kPeakIsOurs = true;
#endif
#else
constexpr bool kPeakIsOurs = true;
#endif

long child_peak_growth_kb(const std::function<void()>& f) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    const long before = max_rss_kb();
    try {
      f();
    } catch (...) {
    }
    const long growth = max_rss_kb() - before;
    (void)!::write(fds[1], &growth, sizeof growth);
    ::_exit(0);
  }
  ::close(fds[1]);
  long growth = -1;
  if (::read(fds[0], &growth, sizeof growth) != static_cast<ssize_t>(sizeof growth)) growth = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return growth;
}

// A summary of the shape the report reads (hand-made; the committed experiments/28-energy one predates the rounds).
const std::string kSummary = MQ_SOURCE_DIR "/tests/data/energy_summary_shape.json";
const std::string kCeilings = MQ_SOURCE_DIR "/experiments/01-roofline/ceilings.json";

}  // namespace

TEST_CASE("class checked JSON: the energy coefficients file goes through the checked reader") {
  const std::string dir = fresh_dir("coefficients");
  // As the probe found it: 200,000 deep crashed (SIGSEGV), 20,000 deep took 1.36 GB; a repeated key passed.
  const std::string deep = write_test_file(dir, "deep.json", R"({"coefficients": )" + nested(200000) + "}");
  check_error(run_cli("energy --coefficients " + deep + " --meter model --no-gpt2 --no-plot --out " + dir + "/out"), 1,
              {"deep.json: JSON nested deeper than 64 levels"});
  const std::string deep20k = write_test_file(dir, "deep20k.json", R"({"coefficients": )" + nested(20000) + "}");
  const long growth = child_peak_growth_kb([&] { (void)mq::energy::load_coefficients(deep20k); });
  if (kPeakIsOurs) {
    CHECK(growth >= 0);
    CHECK(growth < 20 * 1024);
  }
  CHECK_THROWS_WITH_AS(mq::energy::load_coefficients(deep20k), doctest::Contains("nested deeper than 64"), mq::Error);
  const std::string dup = write_test_file(dir, "dup.json", R"({"coefficients": {"static_watts": {"value": 1}, "static_watts": {"value": 2}}})");
  check_error(run_cli("energy --coefficients " + dup + " --meter model --no-gpt2 --no-plot --out " + dir + "/out"), 1,
              {"dup.json: duplicate JSON key \"static_watts\""});
  const std::string big = write_test_file(dir, "big.json", "{}" + std::string(2 << 20, ' '));
  check_error(run_cli("energy --coefficients " + big + " --meter model --no-gpt2 --no-plot --out " + dir + "/out"), 1,
              {"big.json: 2097154 bytes is larger than any JSON file of this kind (at most 1048576)"});
  const std::string cal = write_test_file(dir, "cal.json", R"({"calibrated": "yes", "coefficients": {}})");
  CHECK_THROWS_WITH_AS(mq::energy::load_coefficients(cal), doctest::Contains("coefficient \"static_watts\" missing"), mq::Error);
  // Nothing was written: the file is read before the output folder is made.
  CHECK(!fs::exists(dir + "/out"));
  // The shipped file still loads.
  CHECK(mq::energy::load_coefficients(MQ_SOURCE_DIR "/data/energy_model.json").static_watts > 0);
}

TEST_CASE("class checked JSON: energy --report-only and sweep --ceilings name the file and the key") {
  const std::string dir = fresh_dir("report_only");
  const json committed = json::parse(mq::read_file(kSummary));  // valid: the base of every mutation below
  auto report_only = [&](const json& summary) {
    write_test_file(dir, "summary.json", summary.dump());
    return run_cli("energy --report-only --no-plot --out " + dir);
  };
  const std::string file = dir + "/summary.json";
  check_error(report_only(json::array({1, 2})), 1, {file + ": /: expected an object, got an array of 2 elements"});
  check_error(report_only(json::object()), 1, {file + ": /: key \"energy_source\" is missing"});
  json s = committed;
  s["models"]["minigpt"]["methods"][0]["phases"].erase("total");
  check_error(report_only(s), 1, {file + ": /models/minigpt/methods/0/phases: key \"total\" is missing"});
  s = committed;
  s["models"]["minigpt"]["methods"][1]["phases"]["decode"]["watts"]["mean"] = "x";
  check_error(report_only(s), 1, {"/models/minigpt/methods/1/phases/decode/watts/mean: expected a finite number, got \"x\""});
  s = committed;
  s["models"]["minigpt"]["methods"][0].erase("role");  // the README reads it (operator[] on a const object)
  check_error(report_only(s), 1, {"/models/minigpt/methods/0: key \"role\" is missing"});
  s = committed;
  s["models"]["minigpt"]["prompt_curve"]["crossover"].erase("int8-per-channel");
  check_error(report_only(s), 1, {"/models/minigpt/prompt_curve/crossover: key \"int8-per-channel\" is missing"});
  s = committed;
  s["models"]["minigpt"]["ranking"]["order"][0]["mean_joules_per_token"] = nullptr;
  check_error(report_only(s), 1, {"/models/minigpt/ranking/order/0/mean_joules_per_token: expected a finite number"});
  s = committed;
  s["options"]["batch"] = json::array({1, 5000000000LL});
  check_error(report_only(s), 1, {"/options/batch/1: expected an integer that fits 32 bits, got 5000000000"});
  s = committed;
  s["models"]["minigpt"]["methods"][2] = {{"name", "int8"}, {"status", "failed"}};
  check_error(report_only(s), 1, {"/models/minigpt/methods/2: key \"error\" is missing"});
  // What passes the check reports: the valid summary, and one with a failed method.
  CHECK(report_only(committed).code == 0);
  CHECK(mq::read_file(dir + "/report.txt").find("miniquant energy: energy per token by inference phase") == 0);
  s["models"]["minigpt"]["methods"][2]["error"] = "it broke";
  const CliResult r = report_only(s);
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(mq::read_file(dir + "/report.txt").find("FAILED: it broke") != std::string::npos);

  // sweep --ceilings on a JSON array ("cannot use at() with array", no file named) and a wrong type.
  const std::string arr = write_test_file(dir, "array.json", "[1, 2]");
  check_error(run_cli("sweep --ceilings " + arr + " --no-plot --no-gpt2 --out " + dir + "/sweep"), 1,
              {arr + ": /: expected an object, got an array of 2 elements"});
  json c = json::parse(mq::read_file(kCeilings));
  c["levels"][0]["bytes"] = "big";
  const std::string typed = write_test_file(dir, "typed.json", c.dump());
  check_error(run_cli("sweep --ceilings " + typed + " --no-plot --no-gpt2 --out " + dir + "/sweep"), 1,
              {"typed.json: /levels/0/bytes: expected a finite number, got \"big\""});
  CHECK_NOTHROW(mqexp::check_ceilings(json::parse(mq::read_file(kCeilings)), kCeilings));
  // A reader's backstop: what escapes a shape check is still one line naming the file.
  CHECK_THROWS_WITH_AS(mq::interpret_json("f.json", [] { return json::array().at("k"); }),
                       doctest::Contains("f.json: unexpected content (cannot use at() with array)"), mq::Error);
}

TEST_CASE("class checked JSON: shapes are checked by a spec, naming the path of the first mismatch") {
  const json spec = json::parse(R"({"a": "int", "b?": ["number"], "c": {"|": ["null", {"d": "string|bool"}]}, "m": {"*": {"v": "number"}}})");
  auto fails = [&](const char* text) {
    try {
      mq::check_json_shape(json::parse(text), spec, "f");
      return std::string("(passed)");
    } catch (const mq::Error& e) {
      return std::string(e.what());
    }
  };
  CHECK(fails(R"({"a": 1, "c": null, "m": {}})") == "(passed)");
  CHECK(fails(R"({"a": 1, "b": [1, 2.5], "c": {"d": true}, "m": {"x": {"v": 1}}})") == "(passed)");
  CHECK(fails(R"({"c": null, "m": {}})") == "f: /: key \"a\" is missing; the file is corrupt or not the one meant");
  CHECK(fails(R"({"a": 2147483648, "c": null, "m": {}})").find("f: /a: expected an integer that fits 32 bits, got 2147483648") == 0);
  CHECK(fails(R"({"a": 1.5, "c": null, "m": {}})").find("/a: expected an integer") != std::string::npos);
  CHECK(fails(R"({"a": 1, "b": [1, "x"], "c": null, "m": {}})").find("/b/1: expected a finite number, got \"x\"") != std::string::npos);
  CHECK(fails(R"({"a": 1, "c": {"d": 7}, "m": {}})").find("/c/d: expected a string or true or false, got 7") != std::string::npos);
  CHECK(fails(R"({"a": 1, "c": null, "m": {"x": {"v": "no"}}})").find("/m/x/v: expected a finite number") != std::string::npos);
  // A value built as inf (JSON text cannot hold one) is not a finite number either.
  try {
    mq::check_json_shape(json{{"a", 1}, {"b", {1.0, INFINITY}}, {"c", nullptr}, {"m", json::object()}}, spec, "f");
    FAIL("passed");
  } catch (const mq::Error& e) {
    CHECK(std::string(e.what()).find("/b/1: expected a finite number, got inf") != std::string::npos);
  }
}

TEST_CASE("class checked JSON: one reader for every JSON file, within a memory budget proportional to its size") {
  const std::string dir = fresh_dir("json_reader");
  // Every JSON file the project commits reads under the default budget (16 bytes of values per byte).
  for (const char* rel : {"experiments/26-quant-curve/results.json", "experiments/27-mixed-epi/results.json",
                          "experiments/28-energy/summary.json", "experiments/01-roofline/ceilings.json", "data/energy_model.json",
                          "data/minigpt.json", "data/train.json", "experiments/27-mixed-epi/allocation.json",
                          "experiments/27-mixed-epi/k-types/results.json"}) {
    CAPTURE(rel);
    CHECK_NOTHROW((void)mq::read_json_file(std::string(MQ_SOURCE_DIR) + "/" + rel));
  }
  // Dense hostile text: 1 MiB of empty arrays ("[[],[],...") would take ~21x its size; refused at the budget.
  std::string dense = "[";
  while (dense.size() < (1u << 20)) dense += "[],";
  dense.back() = ']';
  CHECK_THROWS_WITH_AS(mq::parse_json_checked(dense, "dense"), doctest::Contains("dense: the JSON would take more than 17 MB of memory"),
                       mq::Error);
  // The same document parses when the caller allows more (the budget is the reason, not the syntax).
  CHECK(mq::parse_json_checked(dense, "dense", mq::kMaxJsonDepth, size_t{1} << 30).size() > 300000);
  // Objects of many members close in linear time (nlohmann's callback parser rescanned the parent at
  // every closing brace: quadratic); this one has 100,000 members.
  std::string members = "{";
  for (int i = 0; i < 100000; ++i) members += "\"k" + std::to_string(i) + "\":{},";
  members.back() = '}';
  CHECK(mq::parse_json_checked(members, "members").size() == 100000);
  // A FIFO is refused before it is opened (it would block), a folder too.
  const std::string fifo = dir + "/fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH_AS(mq::read_json_file(fifo), doctest::Contains("not a regular file"), mq::Error);
  CHECK_THROWS_WITH_AS(mq::read_json_file(dir), doctest::Contains("it is a folder"), mq::Error);
}

TEST_CASE("class absurd allocation: a safetensors header is bounded before it is read and parsed within a budget") {
  const std::string dir = fresh_dir("header");
  // As the probe found it: an 80 MB header cost 2.07 GB before it was rejected. Now the length is refused
  // before anything is allocated (a sparse file: 80 MB long, no data written).
  const std::string sparse = dir + "/header80.safetensors";
  {
    const uint64_t hlen = uint64_t{80} << 20;
    const int fd = ::open(sparse.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, &hlen, 8) == 8);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(8 + hlen)) == 0);
    ::close(fd);
  }
  check_error(run_cli("generate --model " + sparse), 1,
              {"header80.safetensors", "header length 83886080 is larger than the file (83886088 bytes) or than 4 MiB"});
  const long refused = child_peak_growth_kb([&] { (void)read_safetensors(sparse); });
  if (kPeakIsOurs) {
    CHECK(refused >= 0);
    CHECK(refused < 8 * 1024);
  }

  // A header under the 4 MiB cap, made of what costs most per byte (empty arrays, ~21x): refused at its
  // budget of 16 bytes per byte, the peak well under 16 x 4 MiB plus the text.
  std::string h = "{\"t\":[";
  while (h.size() < (4u << 20) - 64) h += "[],";
  h.back() = ']';
  h += "}";
  const std::string bytes = safetensors_bytes(h);
  const long peak = child_peak_growth_kb([&] {
    try {
      (void)read_safetensors_buffer(bytes, "dense");
    } catch (const mq::Error& e) {
      if (std::string(e.what()).find("would take more than") == std::string::npos) ::_exit(3);
      throw;
    }
  });
  if (kPeakIsOurs) {
    CHECK(peak >= 0);
    CHECK(peak < 96 * 1024);  // budget 64 MiB of values + 4 MiB of text and its copy
  }
  CHECK_THROWS_WITH_AS(read_safetensors_buffer(bytes, "dense"), doctest::Contains("dense: header: the JSON would take more than 65 MB"),
                       mq::Error);
  // The shipped model's header (26 KB) is far inside both.
  CHECK(read_safetensors(mqexp::kDefaultModel).tensors.size() == 52);
}
