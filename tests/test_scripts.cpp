// The set-up scripts on the machines users have: plain Debian 12 ships Node 18, which node-llama-cpp
// refuses; scripts/setup_node.sh must then say in one line what is skipped and return 0, so neither the main
// job nor the tests stop because of Node. Run against fake `node` and `npm` executables first on PATH.
#include <doctest/doctest.h>

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
