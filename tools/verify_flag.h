// `--no-verify`, shared by every subcommand that loads a checkpoint or a GGUF file: skip the SHA-256
// check of each tensor against the checksums our files record (util/integrity.h). Verification is on
// by default and costs a hash of the file's tensor bytes (~10 ms for the shipped 15 MB model).
#pragma once
#include <CLI/CLI.hpp>

#include "miniquant/util/integrity.h"

namespace mqcli {

inline void add_no_verify_flag(CLI::App* cmd) {
  cmd->add_flag(
      "--no-verify", [](int64_t) { mq::set_verify_checksums(false); },
      "load checkpoints without checking their tensors' SHA-256 checksums (faster; a corrupt file then loads as a different model)");
}

}  // namespace mqcli
