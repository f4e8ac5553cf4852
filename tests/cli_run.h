// Runs the built `miniquant` binary and captures what it prints and its exit code.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"

struct CliResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

inline CliResult run_cli(const std::string& args) {
  mq::CommandOutput r = mq::run_command(std::string(MQ_CLI_PATH) + " " + args + " 2>&1");
  return {r.code, std::move(r.out)};
}

// Writes `text` to dir/name (creating dir) and returns the path.
inline std::string write_test_file(const std::string& dir, const std::string& name, const std::string& text) {
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/" + name;
  mq::write_file_atomic(p, text);
  return p;
}

// Trains a tiny MiniGPT of config `model_json` for `steps` steps with `miniquant train` (seed 42) into
// dir/tiny.safetensors (log in dir/train.log) and returns the checkpoint path; a failed training
// fails the calling test with the CLI's output.
inline std::string train_tiny(const std::string& dir, const std::string& model_json, int steps) {
  const std::string model = write_test_file(dir, "model.json", model_json);
  const std::string train = write_test_file(dir, "train.json", "{\"steps\": " + std::to_string(steps) + R"(, "batch": 2, "lr": 0.001, "warmup": 1, "min_lr": 0.0001,
      "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "clip": 1.0, "seed": 42, "eval_interval": 2,
      "eval_batches": 1, "checkpoint_interval": 0, "checkpoint_path": "", "resume_from": ""})");
  const std::string out = dir + "/tiny.safetensors";
  const CliResult r = run_cli("train --config " + model + " --train-config " + train + " --out " + out + " --log " + dir + "/train.log");
  INFO(r.out);
  REQUIRE(r.code == 0);
  return out;
}
