// The set-up scripts on the machines users have: plain Debian 12 ships Node 18, which node-llama-cpp
// refuses; scripts/setup_node.sh must then say in one line what is skipped and return 0, so neither the main
// job nor the tests stop because of Node. Run against fake `node` and `npm` executables first on PATH. Also the
// Slurm scripts' argument checks, and bench/vs_ggml/table.py's README block of every CPU family's run.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace {

// A folder with executables `node` (printing `version` for --version, its major for -p) and `npm` (which
// fails loudly if called: a skipped set-up must not install anything).
std::string fake_bin(const std::string& version, bool with_node = true) {
  const std::string dir = mqtest::temp_path("mq_test", "mq_fake_node_" + version);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string major = version.substr(1, version.find('.') - 1);
  if (with_node) {
    mq::write_file_atomic(dir + "/node", "#!/bin/sh\nif [ \"$1\" = --version ]; then echo " + version + "; else echo " + major + "; fi\n");
    ::chmod((dir + "/node").c_str(), 0755);
  }
  mq::write_file_atomic(dir + "/npm", "#!/bin/sh\necho 'fake npm must not run' >&2\nexit 9\n");
  ::chmod((dir + "/npm").c_str(), 0755);
  return dir;
}

mq::CommandOutput setup_with(const std::string& bin, const std::string& path_rest) {
  return mq::run_command("PATH='" + bin + ":" + path_rest + "' bash " MQ_SOURCE_DIR "/scripts/setup_node.sh 2>&1");
}

}  // namespace

TEST_CASE("setup_node.sh with Node 18: one line, what is skipped and how to enable it, exit 0") {
  const std::string bin = fake_bin("v18.19.0");
  const mq::CommandOutput r = setup_with(bin, "/usr/bin:/bin");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK(r.out.find("node v18.19.0 is older than 20") != std::string::npos);
  CHECK(r.out.find("llama.cpp cross-check is skipped") != std::string::npos);
  CHECK(r.out.find("Node >= 20") != std::string::npos);
  CHECK(r.out.find("fake npm") == std::string::npos);
  fs::remove_all(bin);
}

TEST_CASE("setup_node.sh without Node: one line, exit 0") {
  const std::string bin = fake_bin("v0.0.0", false);
  // A PATH with the tools the script needs before it looks for node, and no node (Debian's /bin is /usr/bin).
  for (const char* tool : {"dirname", "bash"}) fs::create_symlink(fs::path("/usr/bin") / tool, fs::path(bin) / tool);
  const mq::CommandOutput r = mq::run_command("PATH='" + bin + "' /usr/bin/bash " MQ_SOURCE_DIR "/scripts/setup_node.sh 2>&1");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK(r.out.find("no node on PATH") != std::string::npos);
  fs::remove_all(bin);
}

TEST_CASE("class slurm arguments: the scripts of scripts/slurm/ check shard, task id, flags and folder before creating anything") {
  // A scratch folder holding OUT; each call runs there with a binary that would succeed (/bin/true), so only
  // the argument checks can stop it. Each bad call: exit 2, one line, and nothing new in the scratch folder.
  const std::string dir = mqtest::temp_path("mq_test", "slurm_args");
  fs::remove_all(dir);
  fs::create_directories(dir + "/work/OUT");
  const std::string s = MQ_SOURCE_DIR "/scripts/slurm/";
  const std::pair<std::string, std::string> bad[] = {
      {"bash " + s + "energy_task.sh OUT '0/../../esc' fp32", "energy_task: INDEX must be an integer >= 0 (digits only), got '0/../../esc'"},
      {"bash " + s + "energy_task.sh '' 0 fp32", "energy_task: OUT is empty"},
      {"bash " + s + "mixed_task.sh configs 'x/../../../esc' 2 OUT", "mixed_task: SHARD must be an integer >= 0 (digits only)"},
      {"bash " + s + "mixed_task.sh configs 2 2 OUT", "mixed_task: SHARD 2 must be below SHARDS 2"},
      {"bash " + s + "mixed_task.sh configs 0 0x2 OUT", "mixed_task: SHARDS must be a positive integer"},
      {"SLURM_ARRAY_TASK_ID='x/../../../esc' MQ_ROOT=" MQ_SOURCE_DIR " bash " + s + "mixed_array.sbatch 2 OUT configs",
       "mixed_array: SLURM_ARRAY_TASK_ID must be an integer >= 0"},
      {"SLURM_ARRAY_TASK_ID='1 ' MQ_ROOT=" MQ_SOURCE_DIR " bash " + s + "energy_array.sbatch OUT a b", "energy_array: SLURM_ARRAY_TASK_ID must be"},
      {"bash " + s + "submit_mixed.sh --max-parallel", "submit_mixed: --max-parallel needs a value"},
      {"bash " + s + "submit_mixed.sh 2 ''", "submit_mixed: OUT is empty"},
      {"bash " + s + "submit_energy.sh --cpus", "submit_energy: --cpus needs a value"},
      {"bash " + s + "mixed_merge.sh OUT 7", "mixed_merge: AUTO must be 0 or 1, got '7'"},
  };
  for (const auto& b : bad) {
    const std::string& cmd = b.first;  // CAPTURE cannot capture a structured binding under clang 14
    CAPTURE(cmd);
    const mq::CommandOutput r = mq::run_command("cd '" + dir + "/work' && MQ_BIN=/bin/true " + cmd + " 2>&1");
    CHECK(r.code == 2);
    CHECK(r.out.find(b.second) != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    std::vector<std::string> made;
    for (const auto& e : fs::recursive_directory_iterator(dir)) made.push_back(fs::relative(e.path(), dir).string());
    CHECK(made == std::vector<std::string>{"work", "work/OUT"});
  }
  fs::remove_all(dir);
}

TEST_CASE("bench/vs_ggml/table.py: one section per CPU family's stored run, the newest first, the README replaced whole") {
  // The committed Zen 5 run, and a copy made to look like a later run on another CPU (its first ratio changed, so
  // the two sections can be told apart).
  const std::string dir = mqtest::temp_path("mq_test", "vs_ggml_table");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string older = dir + "/AuthenticAMD-26-2.json", newer = dir + "/GenuineIntel-6-1.json", readme = dir + "/README.md";
  const std::string committed = mq::read_file(MQ_SOURCE_DIR "/bench/vs_ggml/runs/AuthenticAMD-26-2.json");
  mq::write_file_atomic(older, committed);
  nlohmann::json later = nlohmann::json::parse(committed);
  later["manifest"]["started_utc"] = "2026-12-09T00:00:00Z";
  later["manifest"]["cpu"]["model"] = "Test Xeon";
  later["manifest"]["cpu"]["family"] = 6;
  later["manifest"]["cpu"]["model_number"] = 1;
  later["cells"][0]["ratio"] = {{"ggml_over_ours", 9.87}, {"low", 9.5}, {"high", 10.25}};
  mq::write_file_atomic(newer, later.dump());
  const std::string begin = "<!-- vs_ggml table: begin (bench/vs_ggml/table.py writes it) -->", end = "<!-- vs_ggml table: end -->";
  const std::string before = "# bench\n\nreading\n\n" + begin + "\nold table\n" + end + "\n\nafter\n";
  mq::write_file_atomic(readme, before);
  const std::string py = "python3 " MQ_SOURCE_DIR "/bench/vs_ggml/table.py ";

  const mq::CommandOutput ok = mq::run_command(py + "'" + older + "' '" + newer + "' --readme '" + readme + "' 2>&1");
  INFO(ok.out);
  CHECK(ok.code == 0);
  const std::string doc = mq::read_file(readme);
  CHECK(doc.rfind("# bench\n\nreading\n\n" + begin + "\n### Test Xeon, family 6 model 1: run of 2026-12-09\n", 0) == 0);
  CHECK(doc.find("old table") == std::string::npos);
  CHECK(doc.size() > before.size());
  CHECK(doc.substr(doc.size() - end.size() - 8) == end + "\n\nafter\n");
  const size_t at_new = doc.find("### Test Xeon"), at_old = doc.find("### AMD EPYC, family 26 model 2: run of 2026-12-01");
  REQUIRE(at_old != std::string::npos);
  CHECK(at_new < at_old);
  CHECK(doc.find("9.87x [9.50, 10.25]") < at_old);  // the changed ratio is in the newer run's section only
  CHECK(doc.find("9.87x", at_old) == std::string::npos);
  CHECK(doc.find("2.19x [2.17, 2.21]", at_old) != std::string::npos);  // the committed run's first cell, in its own
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"AuthenticAMD-26-2.json", "GenuineIntel-6-1.json", "README.md"});  // no temporary left

  // Two runs without a README to write, an unreadable run, or a README that is a folder: one line, exit 2 / 1, the
  // README untouched.
  const mq::CommandOutput two = mq::run_command(py + "'" + older + "' '" + newer + "' 2>&1");
  CHECK(two.code == 2);
  CHECK(std::count(two.out.begin(), two.out.end(), '\n') == 1);
  const mq::CommandOutput missing = mq::run_command(py + "'" + dir + "/none.json' --readme '" + readme + "' 2>&1");
  CHECK(missing.code == 1);
  CHECK(std::count(missing.out.begin(), missing.out.end(), '\n') == 1);
  const mq::CommandOutput folder = mq::run_command(py + "'" + older + "' --readme '" + dir + "' 2>&1");
  CHECK(folder.code == 1);
  CHECK(std::count(folder.out.begin(), folder.out.end(), '\n') == 1);
  CHECK(mq::read_file(readme) == doc);
  fs::remove_all(dir);
}
