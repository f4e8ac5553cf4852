// The manifest fields every command that measures a checkpoint writes the same way (kquants, calibration-draws):
// the command line, date, seed, threads, machine, build and the checkpoint's file name and SHA-256. The caller adds
// its options and durations.
#pragma once
#include <omp.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "experiments/experiment_io.h"
#include "miniquant/util/io.h"

namespace mqcli {

inline nlohmann::json run_manifest(const std::string& date, uint64_t seed, const std::string& model) {
  return {{"command", command_line()},
          {"date", date},
          {"seed", seed},
          {"threads", omp_get_max_threads()},
          {"machine", mqexp::machine_json()},
          {"build", mqexp::build_json()},
          {"checkpoint", {{"path", std::filesystem::path(model).filename().string()}, {"sha256", mq::sha256_file(model)}}}};
}

}  // namespace mqcli
