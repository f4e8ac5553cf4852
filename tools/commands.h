// Each `miniquant` subcommand lives in its own tools/cmd_<name>.cpp and registers itself here.
#pragma once
#include <CLI/CLI.hpp>

namespace mqcli {

void register_corpus(CLI::App& app);  // miniquant corpus: the verb corpus and its statistics

void register_quant_report(CLI::App& app);
void register_train(CLI::App& app);
void register_eval(CLI::App& app);
void register_generate(CLI::App& app);
void register_quantize(CLI::App& app);

// Seed printed and used by every entry point unless --seed says otherwise.
inline constexpr unsigned kDefaultSeed = 42;

}  // namespace mqcli
