// Hostile input, issue 53 (round three): every output is a regular file we created through a temporary
// of our own, reads from trees the user names cannot block, options are parsed strictly. Each class's
// test is named after it; every error is checked by its text and exit code, and by what it left behind.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/experiment_io.h"
#include "experiments/kquants.h"
#include "experiments/mixed.h"
#include "hostile_helpers.h"
#include "miniquant/energy/fake_powercap.h"
#include "miniquant/energy/sysfs.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "validators.h"

using namespace hostile;

namespace {

// Names in `dir` that look like a temporary of write_file_atomic (`.<name>.mq-XXXXXX`).
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".mq-") != std::string::npos) out.push_back(e.path().filename().string());
  return out;
}

// The names in `dir`, sorted.
std::vector<std::string> tree_names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("class output not ours: a device, FIFO or link to a device as the output is refused and stays what it was") {
  const std::string dir = fresh_dir("device_out");
  const std::string ck = fp32_checkpoint(dir + "/fp32.safetensors", toy_tokenizer());
  // A link to a character device (no root needed to make it), and a FIFO.
  fs::create_symlink("/dev/null", dir + "/null");
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  for (const std::string& out : {dir + "/null", dir + "/fifo"}) {
    CAPTURE(out);
    check_error(run_cli("quantize --model " + ck + " --scheme int8-per-channel --out " + out), 2,
                {"cannot write '" + out + "'", "not a regular file"});
    check_error(run_cli("export-gguf --model " + ck + " --scheme fp32 --out " + out), 2, {"not a regular file"});
  }
  CHECK(fs::is_symlink(dir + "/null"));
  CHECK(fs::is_character_file(dir + "/null"));
  CHECK(fs::is_fifo(dir + "/fifo"));
  // The one writer refuses it too, whoever calls it, and leaves no temporary.
  CHECK_THROWS_WITH_AS(mq::write_file_atomic(dir + "/null", "x"), doctest::Contains("not a regular file"), mq::UsageError);
  CHECK(fs::is_character_file(dir + "/null"));
  // A folder output holding a device under one of its names.
  fs::create_directories(dir + "/energy");
  fs::create_symlink("/dev/null", dir + "/energy/summary.json");
  check_error(run_cli("energy --meter model --no-gpt2 --no-plot --out " + dir + "/energy"), 2, {"summary.json", "not a regular file"});
  CHECK(temporaries(dir).empty());
  CHECK(temporaries(dir + "/energy").empty());
}

TEST_CASE("class temporary name: the temporary is our own (exclusive, random), so `<out>.tmp` as an input survives") {
  const std::string dir = fresh_dir("tmp_name");
  // As the probe found it: the model is named like the old fixed temporary of the output (the shipped model,
  // whose vocabulary is the corpus's, so quantize runs to the end).
  const std::string model = dir + "/m.safetensors.tmp";
  fs::copy_file(std::string(MQ_SOURCE_DIR) + "/data/minigpt.safetensors", model);
  const std::string sha = mq::sha256_file(model);
  const CliResult r = run_cli("quantize --model " + model + " --scheme int8-per-channel --out " + dir + "/m.safetensors");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(mq::sha256_file(model) == sha);
  CHECK(fs::exists(dir + "/m.safetensors"));
  // export-gguf writes the same way.
  const std::string toy = fp32_checkpoint(dir + "/t.gguf.tmp", toy_tokenizer());
  const std::string toy_sha = mq::sha256_file(toy);
  CHECK(run_cli("export-gguf --model " + toy + " --scheme fp32 --out " + dir + "/t.gguf").code == 0);
  CHECK(mq::sha256_file(toy) == toy_sha);
  CHECK(temporaries(dir).empty());
  // In-process: an existing `<path>.tmp` is not ours and stays; the output has the usual mode.
  mq::write_file_atomic(dir + "/x.txt.tmp", "the user's");
  mq::write_file_atomic(dir + "/x.txt", "ours");
  CHECK(mq::read_file(dir + "/x.txt.tmp") == "the user's");
  CHECK(mq::read_file(dir + "/x.txt") == "ours");
  struct stat st {};
  REQUIRE(::stat((dir + "/x.txt").c_str(), &st) == 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0644 & ~mask));
  CHECK(temporaries(dir).empty());
}

TEST_CASE("class duplicate split: a split listed twice, or also a method, is refused before any work") {
  const std::string dir = fresh_dir("dup_split");
  const std::string sp = "'int4-g64[prefill=+a8]'";
  const std::string common = " --meter model --no-gpt2 --no-plot --out " + dir + "/out";
  // As the probe found it (a SIGSEGV in summarize_subject after the batch curve).
  check_error(run_cli("energy --splits " + sp + " " + sp + common), 2, {"--splits: int4-g64[prefill=+a8] is listed twice"});
  check_error(run_cli("energy --schemes fp32 " + sp + " --splits " + sp + common), 2,
              {"--splits: int4-g64[prefill=+a8] is also one of --schemes"});
  check_error(run_cli("energy --gpt2-splits " + sp + " " + sp + " --meter model --no-plot --out " + dir + "/out"), 2,
              {"--gpt2-splits: int4-g64[prefill=+a8] is listed twice"});
  CHECK(!fs::exists(dir + "/out/summary.json"));
}

TEST_CASE("class blocking read: a FIFO in a powercap tree is skipped with its reason, never waited on") {
  const std::string dir = fresh_dir("fifo_powercap");
  const std::string root = dir + "/powercap";
  mq::energy::write_fake_powercap(root);
  for (const char* f : {"/intel-rapl:0/energy_uj", "/intel-rapl:0:1/name"}) {
    fs::remove(root + f);
    REQUIRE(::mkfifo((root + f).c_str(), 0600) == 0);
  }
  // In-process: the one bounded reader says why at once (a blocking open would never return here).
  const auto t0 = std::chrono::steady_clock::now();
  const mq::energy::SysfsValue v = mq::energy::read_sysfs(root + "/intel-rapl:0/energy_uj");
  CHECK(!v.ok);
  CHECK(v.error.find("not a regular file") != std::string::npos);
  const mq::ReadResult big = mq::try_read_file(write_test_file(dir, "big", std::string(5000, '1')), 4096);
  CHECK(!big.ok);
  CHECK(big.error == "larger than 4096 bytes");
  CHECK_THROWS_WITH_AS(mq::read_file(root + "/intel-rapl:0:1/name"), doctest::Contains("not a regular file"), mq::Error);
  // Through the CLI, under a timeout so that a regression fails instead of hanging the test run. energy
  // prints its banner first; the error is then its one line.
  const mq::CommandOutput r = mq::run_command("timeout 120 " + std::string(MQ_CLI_PATH) + " energy --meter rapl --powercap-root " + root +
                                              " --perf-root /nonexistent --no-gpt2 --no-plot --out " + dir + "/out 2>&1");
  INFO(r.out);
  CHECK(r.code == 1);
  const size_t err = r.out.find("miniquant: error: ");
  REQUIRE(err != std::string::npos);
  check_error({r.code, r.out.substr(err)}, 1, {"--meter rapl: no readable package zone", "intel-rapl:0 (package-0): energy_uj not a regular file"});
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(100));
}

TEST_CASE("class shared temp names: every test's temporary folder is unique (mkdtemp), none is a fixed name") {
  // Two processes (two overlapping runs of the test command) get different, private folders.
  const std::string a = mqtest::temp_dir("mq_probe");
  CHECK(mqtest::temp_dir("mq_probe") == a);  // the same one within a process
  struct stat st {};
  REQUIRE(::stat(a.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  const mq::CommandOutput other = mq::run_command("mktemp -d " + (fs::path(a).parent_path() / "mq_probe.XXXXXX").string());
  CHECK(other.out.substr(0, other.out.find('\n')) != a);
  fs::remove_all(other.out.substr(0, other.out.find('\n')));
  // No test source builds a path in the temp folder by a fixed name: only tests/temp_dir.h touches it.
  for (const auto& e : fs::recursive_directory_iterator(std::string(MQ_SOURCE_DIR) + "/tests")) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == "temp_dir.h" || name == "test_hostile_outputs.cpp") continue;
    if (e.path().extension() != ".cpp" && e.path().extension() != ".h") continue;
    const std::string text = mq::read_file(e.path().string());
    CAPTURE(e.path().string());
    CHECK(text.find("temp_directory_path") == std::string::npos);
    CHECK(text.find("\"/tmp/") == std::string::npos);
    CHECK(text.find("_tmp/\"") == std::string::npos);
  }
}

TEST_CASE("class machine path in a tracked output: no committed manifest names a temp or home folder; command lines are made portable") {
  const std::string tmp = fs::temp_directory_path().string();
  CHECK(mqexp::portable_command_arg(tmp + "/kq29") == "$TMPDIR/kq29");
  CHECK(mqexp::portable_command_arg("--out=" + tmp + "/kq29") == "--out=$TMPDIR/kq29");
  CHECK(mqexp::portable_command_arg(std::string(MQ_SOURCE_DIR) + "/experiments/29-kquants") == "experiments/29-kquants");
  CHECK(mqexp::portable_command_arg("int4-g64") == "int4-g64");
  CHECK(mqexp::portable_command_arg("/opt/models/m.safetensors") == "/opt/models/m.safetensors");
  // Every string of every committed manifest, recursively.
  std::vector<std::string> manifests;
  for (const char* top : {"experiments", "bench"})
    for (const auto& e : fs::directory_iterator(std::string(MQ_SOURCE_DIR) + "/" + top))
      if (fs::exists(e.path() / "manifest.json")) manifests.push_back((e.path() / "manifest.json").string());
  CHECK(manifests.size() >= 5);
  const char* home = std::getenv("HOME");
  for (const std::string& m : manifests) {
    const std::string text = mq::read_file(m);
    CAPTURE(m);
    for (const std::string& bad : {std::string("\"/tmp/"), std::string(" /tmp/"), std::string("/var/tmp/"), std::string("/home/"),
                                   std::string("/root/"), std::string(MQ_SOURCE_DIR) + "/", " " + tmp + "/",
                                   home && std::string(home).size() > 1 ? std::string(home) + "/" : std::string("\x01")}) {
      CAPTURE(bad);
      CHECK(text.find(bad) == std::string::npos);
    }
  }
}

TEST_CASE("class empty output folder: lab solutions --out \"\" is refused, nothing is written into /") {
  check_error(run_cli("lab solutions --out \"\""), 2, {"--out is empty"});
  CHECK(!fs::exists("/00-quantizers-ref.md"));
  // A device under one of its names, in a folder of our own: refused, the device stays.
  const std::string dir = fresh_dir("lab_out");
  fs::create_symlink("/dev/null", dir + "/00-quantizers-ref.md");
  check_error(run_cli("lab solutions --out " + dir), 2, {"not a regular file"});
  CHECK(fs::is_character_file(dir + "/00-quantizers-ref.md"));
  CHECK(tree_names(dir) == std::vector<std::string>{"00-quantizers-ref.md"});
}

TEST_CASE("class output into an input folder: mixed --out equal to --configs or a --runs folder is refused") {
  const std::string dir = fresh_dir("mixed_in_out");
  fs::create_directories(dir + "/C");
  fs::create_directories(dir + "/R");
  write_test_file(dir + "/C", "m.json", R"({"config_id": "m", "default": "int8-per-channel"})");
  check_error(run_cli("mixed --stage merge --configs " + dir + "/C --out " + dir + "/C --runs " + dir + "/R --no-plot"), 2,
              {"--out '" + dir + "/C' is the same folder as --configs"});
  check_error(run_cli("mixed --stage merge --configs " + dir + "/C --out " + dir + "/./R --runs " + dir + "/R --no-plot"), 2,
              {"is the same folder as --runs"});
  CHECK(tree_names(dir + "/C") == std::vector<std::string>{"m.json"});
  CHECK(fs::is_empty(dir + "/R"));
}

TEST_CASE("class failure after the work: an output path JSON cannot hold is refused before any work") {
  const std::string dir = fresh_dir("non_utf8");
  const std::string bad = dir + "/out\xff";
  CHECK(mq::utf8_error_offset("caf\xc3\xa9") == std::string_view::npos);
  CHECK(mq::utf8_error_offset("a\xff") == 1);
  CHECK(mq::utf8_error_offset("\xc0\xaf") == 0);      // overlong '/'
  CHECK(mq::utf8_error_offset("\xed\xa0\x80") == 0);  // a surrogate
  CHECK(mq::utf8_error_offset("ab\xe2\x82") == 2);    // cut short
  for (const std::string& cmd : {"energy --meter model --no-gpt2 --no-plot --out '" + bad + "'", "sweep --no-plot --no-gpt2 --out '" + bad + "'",
                                 "mixed --stage merge --no-plot --out '" + bad + "'", "kquants --no-plot --out '" + bad + "'",
                                 "calibration-draws --out '" + bad + "'"}) {
    CAPTURE(cmd);
    check_error(run_cli(cmd), 2, {"--out '" + dir + "/out\\xff': byte 0xff at offset", "is not UTF-8"});
  }
  const std::string ck = fp32_checkpoint(dir + "/m\xfe.safetensors", toy_tokenizer());
  check_error(run_cli("eval --json --model '" + ck + "'"), 2, {"--model", "byte 0xfe"});
  check_error(run_cli("quantize --model " + fp32_checkpoint(dir + "/m.safetensors", toy_tokenizer()) + " --scheme fp16 --out '" + dir +
                      "/q\xff.safetensors'"),
              2, {"--out", "byte 0xff"});
  CHECK(!fs::exists(bad));
}

TEST_CASE("class no git metadata: a manifest records that it is absent, and the READMEs do not fail on it") {
  const nlohmann::json b = mqexp::build_json();
  REQUIRE(b.contains("git_metadata"));
  CHECK((b["git_commit"].is_null() ? b["git_metadata"].get<std::string>().rfind("absent", 0) == 0 : b["git_metadata"] == "present"));
  // The committed kquants run, as a release tarball would have recorded it (git_commit null): the README block
  // is written, saying so (it failed with "type must be string, but is null" after writing the results).
  const std::string root = std::string(MQ_SOURCE_DIR) + "/experiments/29-kquants/";
  nlohmann::json manifest = nlohmann::json::parse(mq::read_file(root + "manifest.json"));
  manifest["build"]["git_commit"] = nullptr;
  const nlohmann::json results = nlohmann::json::parse(mq::read_file(root + "results.json"));
  std::string block;
  CHECK_NOTHROW(block = mqexp::kquants_readme_block(results, manifest));
  CHECK(block.find("commit unknown (no git metadata)") != std::string::npos);
  manifest["build"].erase("git_commit");
  CHECK(mqexp::commit_text(manifest["build"]) == "unknown (no git metadata)");
}

TEST_CASE("class lenient parsing: shards, lists, folders and named files are parsed strictly, whole or not at all") {
  for (const char* bad : {"0/2/3", "1x/2", "0x1/2", " 0/1", "+0/+1", "1/2 ", "1/1", "/2", "0/", "-1/2", "0/0"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(mqcli::parse_shard(bad, "--shard"), mq::UsageError);
    check_error(run_cli(std::string("mixed --stage merge --no-plot --shard '") + bad + "' --out " + fresh_dir("shard")), 2, {"--shard"});
  }
  CHECK(mqcli::parse_shard("1/2", "--shard") == std::pair<int, int>{1, 2});
  CHECK(mqcli::parse_shard("0/1", "--shard") == std::pair<int, int>{0, 1});
  const std::string dir = fresh_dir("lenient");
  const std::string file = write_test_file(dir, "file", "x");
  for (const std::string& runs : {file, dir + "/missing", std::string(), std::string("/dev/null")}) {
    CAPTURE(runs);
    check_error(run_cli("mixed --stage merge --no-plot --out " + dir + "/out --runs '" + runs + "'"), 2, {"--runs"});
  }
  // An empty list given is an error, not "all" (vs-llama ran all eight formats).
  for (const char* empty : {"\"\"", ",", "' , '"}) {
    CAPTURE(empty);
    check_error(run_cli(std::string("vs-llama --schemes ") + empty + " --out " + dir + "/vs"), 2, {"--schemes is empty"});
    check_error(run_cli(std::string("sweep --no-plot --add-scheme ") + empty + " --out " + dir + "/sw"), 2, {"--add-scheme is empty"});
  }
  check_error(run_cli("sweep --no-plot --add-scheme ,,, --out " + dir + "/sw"), 2, {"--add-scheme is empty"});
  // A library the user named must be there.
  check_error(run_cli("kquants --no-plot --ggml " + dir + "/missing.so --out " + dir + "/kq"), 2, {"--ggml", "missing.so"});
  // A two-phase split is one name wherever a list of schemes is read (energy --splits always read it so).
  CHECK(mqcli::split_names({"q4_k[prefill=+a8,decode=weight-only], int8-per-channel"}) ==
        std::vector<std::string>{"q4_k[prefill=+a8,decode=weight-only]", "int8-per-channel"});
  CHECK(!fs::exists(dir + "/vs"));
  CHECK(!fs::exists(dir + "/sw/results.json"));
}

TEST_CASE("class hand-edited unit: a mixed unit file is checked against what the merge reads, naming the file and the field") {
  // Every committed unit passes (the check describes what the study writes).
  int units = 0;
  for (const auto& e : fs::recursive_directory_iterator(std::string(MQ_SOURCE_DIR) + "/experiments/27-mixed-epi")) {
    const std::string p = e.path().string();
    if (e.path().extension() != ".json" || p.find("/runs/") == std::string::npos || p.find("/runs/energy/") != std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(mq::read_file(p));
    if (j.value("status", "") != "ok") continue;
    CAPTURE(p);
    CHECK_NOTHROW(mqexp::check_mixed_unit(j, p));
    ++units;
  }
  CHECK(units > 40);
  const std::string file = std::string(MQ_SOURCE_DIR) + "/experiments/27-mixed-epi/runs/config/bookends-e8m3l8.json";
  const nlohmann::json unit = nlohmann::json::parse(mq::read_file(file));
  nlohmann::json u = unit;
  u["row"]["ppl"] = "abc";
  CHECK_THROWS_WITH_AS(mqexp::check_mixed_unit(u, "runs/config/x.json"), doctest::Contains("runs/config/x.json: /row/ppl"), mq::Error);
  u = unit;
  u["row"]["bytes"] = -5;
  CHECK_THROWS_WITH_AS(mqexp::check_mixed_unit(u, "runs/config/x.json"), doctest::Contains("runs/config/x.json: /row/bytes"), mq::Error);
  u = unit;
  u["machine"]["host"] = 7;
  CHECK_THROWS_WITH_AS(mqexp::check_mixed_unit(u, "f.json"), doctest::Contains("f.json: /machine/host"), mq::Error);
  u = unit;
  u["kind"] = "other";
  CHECK_THROWS_WITH_AS(mqexp::check_mixed_unit(u, "f.json"), doctest::Contains("/kind"), mq::Error);
}
