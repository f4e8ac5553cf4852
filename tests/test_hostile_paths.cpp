// Hostile input, issue 37, files and paths: a name from a file never becomes a path outside the output
// folder; an output is never one of the inputs (nor empty); a file-size limit is one line, exit 1 and
// no temporary file. Each class's test is named after it; every error is checked by its text and exit code.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/mixed.h"
#include "experiments/mixed_energy.h"
#include "hostile_helpers.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/path_name.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/quant_plan.h"
#include "minigpt/safetensors.h"

using namespace hostile;

namespace {

// Every file and folder under `root`, for "nothing was written" checks.
std::vector<std::string> tree(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

const char* kEscapingMap = R"({"config_id": "../../../escaped", "default": "int8-per-channel"})";

}  // namespace

TEST_CASE("class traversal: a config_id, method or unit id from a file cannot name a path outside --out") {
  // The one check every file-borne name passes where it meets a path.
  for (const char* ok : {"int4-g64+a8", "L3-mlp_down-int8-per-channel-gptq", "a.b", "protect-early", "x",
                         "int4-g64[prefill=+a8,decode=+bf16]"}) {
    CAPTURE(ok);
    CHECK(mq::path_name_problem(ok).empty());
  }
  const std::pair<std::string, const char*> bad[] = {{"", "it is empty"},
                                                     {"../x", "path separator"},
                                                     {"a/b", "path separator"},
                                                     {"a\\b", "path separator"},
                                                     {"..", "\"..\""},
                                                     {"a..b", "\"..\""},
                                                     {".hidden", "starts with '.'"},
                                                     {"-rf", "starts with '-'"},
                                                     {std::string(97, 'a'), "97 characters long"},
                                                     {"a b", "contains ' '"},
                                                     {std::string("a\x01"), "byte 0x01"}};
  for (const auto& [name_, why] : bad) {
    const std::string& name = name_;  // CAPTURE's lambda cannot capture a structured binding under clang 14
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(mq::check_path_name(name, "config_id"), doctest::Contains(why), mq::UsageError);
  }
  // At the map's parse, whichever command reads it.
  CHECK_THROWS_WITH_AS(QuantPlan::from_json(nlohmann::json::parse(kEscapingMap), "m.json"),
                       "m.json: config_id \"../../../escaped\" cannot name a file: it contains a path separator; use 1-96 letters, "
                       "digits, '.', '_', '+', '-', '[', ']', '=' or ',', not starting with '.' or '-'",
                       mq::UsageError);

  // Through the CLI, as the probe found it: energy wrote its trial files three folders above --out.
  const std::string dir = fresh_dir("traversal");
  const std::string map = write_test_file(dir, "m.json", kEscapingMap);
  const std::string out = dir + "/a/b/c/out";
  check_error(run_cli("energy --quant-map " + map + " --meter model --no-gpt2 --no-plot --out " + out), 2,
              {"--quant-map " + map + ": config_id \"../../../escaped\" cannot name a file", "path separator"});
  check_error(run_cli("sweep --quant-map " + map + " --no-plot --no-gpt2 --out " + out), 2, {"config_id \"../../../escaped\""});
  check_error(run_cli("eval --quant-map " + map), 2, {"cannot name a file"});
  check_error(run_cli("quantize --quant-map " + map + " --out " + dir + "/q.safetensors"), 2, {"cannot name a file"});
  check_error(run_cli("energy --schemes ../up --meter model --no-gpt2 --no-plot --out " + out), 2,
              {"--schemes: method \"../up\" cannot name a file"});
  check_error(run_cli("energy --schemes \"\" --no-plot --out " + out), 2, {"method \"\" cannot name a file: it is empty"});
  fs::create_directories(dir + "/configs");
  write_test_file(dir + "/configs", "m.json", kEscapingMap);
  check_error(run_cli("mixed --stage configs --configs " + dir + "/configs --no-plot --out " + out), 2, {"cannot name a file"});
  CHECK(!fs::exists(dir + "/../../escaped"));
  CHECK(!fs::exists(dir + "/escaped"));
  CHECK(!fs::exists(dir + "/a/escaped"));
  // energy and sweep stop before making --out; mixed (which made it) wrote nothing into it.
  std::vector<std::string> after = tree(dir);
  std::erase_if(after, [&](const std::string& p) { return p.rfind("configs", 0) == 0 || p.rfind("a", 0) == 0; });
  CHECK(after == std::vector<std::string>{"m.json"});
  if (fs::exists(out)) CHECK(tree(out).empty());

  // A quantized checkpoint whose recorded plan has such an id is a corrupt file (exit 1).
  const std::string q = quantized_checkpoint(dir + "/q.safetensors", toy_tokenizer(), mq::Scheme::integer(8, mq::kPerChannel),
                                             [](TensorFile& f) {
                                               nlohmann::json j = nlohmann::json::parse(f.metadata[kMetaQuantization]);
                                               j["plan"]["config_id"] = "../x";
                                               f.metadata[kMetaQuantization] = j.dump();
                                             });
  check_error(run_cli("generate --model " + q), 1, {"q.safetensors", "its recorded plan is not valid", "cannot name a file"});
}

TEST_CASE("class traversal: the mixed study's energy sets and round files") {
  const std::string dir = fresh_dir("mixed_rounds");
  mqexp::MixedOptions o;
  o.model = fp32_checkpoint(dir + "/fp32.safetensors", toy_tokenizer());
  o.out = dir + "/out";
  o.rounds = 2;
  minigpt::QuantPlan base = minigpt::QuantPlan::uniform("fp32");
  base.id = "fp32";
  const std::vector<mqexp::MixedUnit> units = {{"config", "fp32", base}};
  // A set's name becomes runs/energy/<set>/: the one path-name check, whoever named it.
  CHECK_THROWS_WITH_AS(mqexp::read_mixed_energy(o, units, "../up"), doctest::Contains("energy set \"../up\" cannot name a file"),
                       mq::UsageError);
  // A round file of this set (its key) read with its shape checked: one line naming the file and the key path.
  const std::string key = mqexp::energy_set_key(o, units, minigpt::content_sha256(o.model));
  const std::string round = write_test_file(o.out + "/runs/energy/configs", "round-000.json",
                                            nlohmann::json{{"key", key}, {"order", "x"}, {"configs", nlohmann::json::object()}, {"machine", nlohmann::json::object()}}.dump());
  CHECK_THROWS_WITH_AS(mqexp::read_mixed_energy(o, units, "configs"), doctest::Contains((round + ": /order: expected an array").c_str()), mq::Error);
  // Another set's round (another key) and a file that is not JSON are not this set's: no rounds, no error.
  write_test_file(o.out + "/runs/energy/configs", "round-000.json", nlohmann::json{{"key", "other"}, {"order", "x"}}.dump());
  write_test_file(o.out + "/runs/energy/configs", "round-001.json", "{\"key\": ");
  CHECK(!mqexp::read_mixed_energy(o, units, "configs").has_value());
}

TEST_CASE("class replaced input: an output that is an input, or empty, is refused and the input stays byte-identical") {
  const std::string dir = fresh_dir("replaced_input");
  const std::string ck = fp32_checkpoint(dir + "/fp32.safetensors", toy_tokenizer());
  const std::string sha = mq::sha256_file(ck);
  // The same file by another spelling and by a hard link: same device and inode.
  fs::create_hard_link(ck, dir + "/link.safetensors");
  for (const std::string& out : {ck, dir + "/./sub/../fp32.safetensors", dir + "/link.safetensors"}) {
    CAPTURE(out);
    fs::create_directories(dir + "/sub");
    check_error(run_cli("quantize --model " + ck + " --scheme int8-per-channel --out " + out), 2,
                {"--out '" + out + "' is the same file as --model", "would replace an input"});
    check_error(run_cli("export-gguf --model " + ck + " --scheme int8-per-channel --out " + out), 2, {"is the same file as --model"});
  }
  CHECK(mq::sha256_file(ck) == sha);
  check_error(run_cli("quantize --model " + ck + " --scheme fp16 --out \"\""), 2, {"--out is empty: give the file to write"});
  check_error(run_cli("export-gguf --model " + ck + " --scheme fp16 --out \"\""), 2, {"--out is empty"});

  // train: an output must be neither a config nor another output.
  const std::string model = write_test_file(dir, "model.json", kModelJson);
  const std::string train = write_test_file(dir, "train.json", valid_train_json());
  const std::string model_text = mq::read_file(model);
  check_error(run_cli("train --config " + model + " --train-config " + train + " --out " + model), 2, {"is the same file as --config"});
  check_error(run_cli("train --config " + model + " --train-config " + train + " --out " + dir + "/m.safetensors --log " + dir +
                      "/m.safetensors"),
              2, {"--log", "would replace another output"});
  CHECK(mq::read_file(model) == model_text);
  CHECK(!fs::exists(dir + "/m.safetensors"));

  // Folder outputs: a file the command writes there is one it reads.
  const std::string map = write_test_file(dir + "/sweep", "results.json", R"({"config_id": "m", "default": "int8-per-channel"})");
  const std::string map_text = mq::read_file(map);
  check_error(run_cli("sweep --quant-map " + map + " --no-plot --no-gpt2 --out " + dir + "/sweep"), 2,
              {"--out '" + dir + "/sweep/results.json' is the same file as --quant-map"});
  CHECK(mq::read_file(map) == map_text);
  const std::string coef = write_test_file(dir + "/energy", "energy_model.calibrated.json", "{}");
  check_error(run_cli("energy --coefficients " + coef + " --meter model --no-gpt2 --no-plot --out " + dir + "/energy"), 2,
              {"is the same file as --coefficients"});
  CHECK(mq::read_file(coef) == "{}");
}

TEST_CASE("class file-size limit: a write beyond ulimit -f is one line, exit 1, and leaves no temporary file") {
  const std::string dir = fresh_dir("file_size");
  // In-process, in a child whose limit is 64 KB (the parent's limit is not touched): SIGXFSZ ignored as
  // main() does, the write fails with EFBIG and write_file_atomic says so and removes its temp file.
  const std::string target = dir + "/big.bin";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{64 << 10, 64 << 10};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    try {
      mq::write_file_atomic(target, std::string(1 << 20, 'x'));
      ::_exit(10);  // written: the limit did not apply
    } catch (const mq::Error& e) {
      const std::string w = e.what();
      ::_exit(w.find("file too large") != std::string::npos && w.find("ulimit -f") != std::string::npos ? 0 : 11);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));  // killed by SIGXFSZ would not be an exit
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(!fs::exists(target));
  CHECK(!fs::exists(target + ".tmp"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find(".mq-") == std::string::npos);

  // Through the CLI, as the probe found it (quantize there; export-gguf writes the same way without
  // needing the corpus): the process is not killed, prints one line, exits 1, leaves nothing.
  const std::string ck = fp32_checkpoint(dir + "/fp32.safetensors", toy_tokenizer());
  const std::string gguf = dir + "/m.gguf";
  const mq::CommandOutput r = mq::run_command("bash -c 'ulimit -f 64; exec " + std::string(MQ_CLI_PATH) + " export-gguf --model " + ck +
                                              " --scheme fp32 --out " + gguf + "' 2>&1");
  check_error({r.code, r.out}, 1, {"cannot write '" + gguf + "'", "file too large"});
  CHECK(!fs::exists(gguf));
  CHECK(!fs::exists(gguf + ".tmp"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find(".mq-") == std::string::npos);
  // Without the limit the same command writes the file (the limit was the only reason).
  CHECK(run_cli("export-gguf --model " + ck + " --scheme fp32 --out " + gguf).code == 0);
  CHECK(fs::file_size(gguf) > (64 << 10));
}
