// Each `miniquant` subcommand lives in its own tools/cmd_<name>.cpp and registers itself here.
#pragma once
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

namespace mqcli {

void register_corpus(CLI::App& app);  // miniquant corpus: the verb corpus and its statistics

void register_quant_report(CLI::App& app);
void register_train(CLI::App& app);
void register_eval(CLI::App& app);
void register_generate(CLI::App& app);
void register_quantize(CLI::App& app);
void register_export_gguf(CLI::App& app);  // GGUF for llama.cpp (gpt2 architecture)
void register_roofline(CLI::App& app);  // experiments/01-roofline
void register_sweep(CLI::App& app);     // experiments/26-quant-curve
void register_calibration_draws(CLI::App& app);  // experiments/26-quant-curve/calibration-draws
void register_energy(CLI::App& app);    // experiments/28-energy
void register_mixed(CLI::App& app);     // experiments/27-mixed-epi
void register_kquants(CLI::App& app);   // experiments/29-kquants: llama.cpp's K quantizer beside ours
void register_vs_llama(CLI::App& app);  // bench/vs_llama: tokens/s beside llama.cpp
void register_lab(CLI::App& app);       // the lab course: labs/, solutions/
void register_kernels(CLI::App& app);   // the kernel map from the registry
// All of the above, in help order (tools/register_all.cpp).
void register_all(CLI::App& app);

// The command line as typed, for manifests (set by main).
inline std::string& command_line() {
  static std::string line;
  return line;
}

// The folder of the running miniquant binary (/proc/self/exe), where the build puts the programs it starts: the
// lab graders (bin/labs/) and llama_speed. mq::Error where it cannot be read.
std::filesystem::path self_dir();

// Seed printed and used by every entry point unless --seed says otherwise.
inline constexpr unsigned kDefaultSeed = 42;

}  // namespace mqcli
