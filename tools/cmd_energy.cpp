// `miniquant energy`: energy per token of each quantization method, by inference phase
// (experiments/28-energy): summary.json, rounds.csv (every measurement of every round), manifest.json,
// report.txt, four figures and the README's generated block. `--calibrate` fits the model's coefficients instead
// of trusting the published ones (needs a real meter).
#include <omp.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/core.h>

#include "commands.h"
#include "vocabulary.h"
#include "experiments/energy_report.h"
#include "experiments/energy_run.h"
#include "experiments/experiment_io.h"
#include "miniquant/energy/model.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/wait_policy.h"
#include "experiments/workspace.h"
#include "miniquant/util/path_name.h"
#include "quant_map.h"
#include "verify_flag.h"

namespace mqcli {
namespace {

struct EnergyCli {
  mqexp::EnergyOptions o;
  std::string out = MQ_SOURCE_DIR "/experiments/28-energy";
  std::vector<std::string> quant_maps;  // --quant-map files, in order
  bool plot = true;
  bool report_only = false;
};

void write_figures_and_text(const std::string& out, const nlohmann::json& summary, bool plot) {
  mqexp::write_text_atomic(out + "/report.txt", mqexp::energy_report_text(summary));
  if (plot) {
    mqexp::run_plot("energy_phases.py", {out + "/summary.json", out + "/energy_phases.png"});
    mqexp::run_plot("energy_accuracy.py", {out + "/summary.json", out + "/energy_accuracy.png"});
    mqexp::run_plot("energy_batch.py", {out + "/summary.json", out + "/energy_batch.png"});
    mqexp::run_plot("energy_prompt_curve.py", {out + "/summary.json", out + "/energy_prompt_curve.png"});
  }
  mqexp::update_generated_block(out + "/README.md", mqexp::energy_readme_block(summary), "28-energy: energy per token, by inference phase");
}

// The output folder must be writable before minutes of work: make it and try a file.
void check_out(const std::string& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw mq::Error(fmt::format("--out {}: cannot create it ({})", out, ec.message()));
  mq::write_file_atomic(out + "/.write_test", "");
  std::filesystem::remove(out + "/.write_test", ec);
}

void run(EnergyCli& cli) {
  if (cli.report_only) {
    const std::string file = cli.out + "/summary.json";
    const nlohmann::json summary = mqexp::read_json(file);
    mqexp::check_energy_summary(summary, file);
    mq::interpret_json(file, [&] { write_figures_and_text(cli.out, summary, cli.plot); });
    fmt::print("redrew report.txt, the figures and README of {} from its summary.json\n", cli.out);
    return;
  }
  mqexp::EnergyOptions& o = cli.o;
  // Method names key the rounds, summary.json and rounds.csv, like a quant map's config_id (checked when
  // the map is read): one path-safe name each, so no later output that files by it can leave --out.
  for (const auto* list : {&o.methods, &o.gpt2_methods})
    for (const auto& m : *list) mq::check_path_name(m, list == &o.methods ? "--schemes: method" : "--gpt2-schemes: method");
  for (const auto& f : cli.quant_maps) o.quant_maps.push_back(read_quant_map(f));
  // The source documents' names (float32, int8_dynamic, ...) are read as the schemes they name, with a note once the
  // options hold (bad input still gets its one line).
  const std::vector<std::string> notes = mqexp::use_scheme_names(o);
  mqexp::validate(o);
  for (const std::string& note : notes) std::cerr << note << "\n";
  std::vector<mq::FlagPath> inputs = {{"--model", o.model}, {"--coefficients", o.roots.coefficients}};
  for (const auto& f : cli.quant_maps) inputs.push_back({"--quant-map", f});
  mq::check_folder_outputs("--out", cli.out, {"summary.json", "manifest.json", "report.txt", "README.md", "energy_phases.png",
                                              "energy_accuracy.png", "energy_batch.png", "energy_prompt_curve.png", "rounds.csv",
                                              "energy_model.calibrated.json"},
                           inputs);
  // Read now, whichever meter runs (the manifest records it): a bad file is one line before any work.
  (void)mq::energy::load_coefficients(o.roots.coefficients);
  check_out(cli.out);
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::string date = mq::utc_now_iso8601();
  const mq::WaitPolicy wait = mq::wait_policy();
  // The banner once the run's own checks (meter, corpus, model, context lengths) have passed: before them, a refused
  // option would follow a line that announced a run.
  mqexp::EnergyRun run = mqexp::run_energy(
      o, [&](const std::string& line) { fmt::print(stderr, "[{:6.1f} s] {}\n", elapsed(), line); },
      [&] {
        fmt::print(stderr, "energy: seed {}, {} threads waiting {} ({}), meter {} -> {}\n", o.seed, omp_get_max_threads(), wait.policy,
                   wait.chosen_by, o.meter, cli.out);
      });
  nlohmann::json& summary = run.summary;
  summary["options"] = {{"rounds", o.rounds},         {"max_rounds", o.round_bound()}, {"add_rounds", o.add_rounds}, {"warmup", o.warmup},           {"prompt_tokens", o.prompt_tokens},
                        {"gen_tokens", o.gen_tokens}, {"batch", o.batch},           {"batch_prompt", o.batch_prompt},
                        {"batch_steps", o.batch_steps}, {"batch_rounds", o.batch_rounds}, {"meter", o.meter},         {"ppl_tokens", o.ppl_tokens},
                        {"max_slots", o.max_slots}, {"max_items", o.max_items},   {"calibration_windows", o.calibration}, {"gpt2", o.gpt2},
                        {"control", o.control},       {"curve_lengths", o.curve_lengths}, {"curve_gen", o.curve_gen},
                        {"curve_rounds", o.curve_rounds}, {"quant_maps", cli.quant_maps}};
  summary["date"] = date;
  const nlohmann::json manifest = {
      {"command", command_line()},
      {"date", date},
      {"seed", o.seed},
      {"threads", omp_get_max_threads()},
      {"machine", mqexp::machine_json()},
      {"hardware", summary["hardware"]},
      {"energy_source", summary["energy_source"]},
      {"build", mqexp::build_json()},
      {"checkpoint", {{"path", o.model}, {"sha256", mq::sha256_file(o.model)}}},
      {"coefficients", {{"path", o.roots.coefficients}, {"sha256", mq::sha256_file(o.roots.coefficients)}}},
      {"options", summary["options"]},
      {"durations_s", {{"total", elapsed()}}},
  };
  // The machine and the run's length travel with the numbers, so the README can say where they came from.
  summary["machine"] = manifest.at("machine");
  summary["seconds"] = elapsed();
  mqexp::write_json_atomic(cli.out + "/summary.json", summary);
  mqexp::write_text_atomic(cli.out + "/rounds.csv", run.rounds_csv);
  mqexp::write_json_atomic(cli.out + "/manifest.json", manifest);
  if (o.calibrate) {
    mqexp::write_json_atomic(cli.out + "/energy_model.calibrated.json", run.calibration);
    fmt::print("calibrated coefficients -> {}/energy_model.calibrated.json (rms relative error {:.3f})\n", cli.out,
               run.calibration["fit"]["rms_relative_error"].get<double>());
  }
  write_figures_and_text(cli.out, summary, cli.plot);
  fmt::print("{}", mqexp::energy_report_text(summary));
  fmt::print("wrote {}/{{summary.json, rounds.csv, manifest.json, report.txt, README.md{}}} in {:.0f} s\n", cli.out,
             cli.plot ? ", energy_phases.png, energy_accuracy.png, energy_batch.png, energy_prompt_curve.png" : "", elapsed());
  if (run.failed > 0) throw mq::Error(fmt::format("{} of {} methods failed (recorded in summary.json)", run.failed, run.methods));
}

}  // namespace

void register_energy(CLI::App& app) {
  auto cli = std::make_shared<EnergyCli>();
  mqexp::EnergyOptions& o = cli->o;
  o.model = mqexp::kDefaultModel;
  o.lexicon = mqexp::kDefaultLexicon;
  o.seed = kDefaultSeed;
  o.roots.coefficients = MQ_SOURCE_DIR "/data/energy_model.json";
  CLI::App* cmd = app.add_subcommand("energy", "Energy per token of each quantization method, by inference phase (experiments/28-energy)");
  add_old_spelling(cmd, "--methods",
                   cmd->add_option("--schemes", o.methods, "schemes (fp32 int8-per-channel+a8 int4-g64+a8 ...; the documents' float32 float16 bfloat16 int8 int8_dynamic are read as fp32 fp16 bf16 int8-per-channel int8-per-channel+a8)"),
                   o.methods);
  cmd->add_option("--quant-map", cli->quant_maps, "a MiniGPT method from a quant map (repeatable), named by its config_id")
      ->check(CLI::ExistingFile);
  add_old_spelling(cmd, "--gpt2-methods",
                   cmd->add_option("--gpt2-schemes", o.gpt2_methods, "schemes on the GPT-2-small-shaped body (default fp32 int8-per-channel int8-per-channel+a8 int4-g64 int4-g64+a8)"),
                   o.gpt2_methods);
  cmd->add_flag("--no-gpt2", [cli](int64_t) { cli->o.gpt2 = false; }, "skip the GPT-2-small-shaped body");
  cmd->add_option("--rounds", o.rounds, "measured rounds: each runs every configuration once, in an order drawn at random per round (seed 42)")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "warm-up rounds before them (not reported)")->capture_default_str();
  cmd->add_option("--max-rounds", o.max_rounds,
                  "adaptive: while the control does not pass (holds 1.00, inside +-3%), add rounds up to this many in all (0: 3 x --rounds; = --rounds: none)")
      ->capture_default_str();
  cmd->add_option("--add-rounds", o.add_rounds, "adaptive: rounds added at a time")->capture_default_str();
  cmd->add_flag("--no-control", [cli](int64_t) { cli->o.control = false; }, "do not measure the fp32 baseline a second time (the control)");
  cmd->add_option("--splits", o.splits, "phase splits on MiniGPT, e.g. int4-g64[prefill=+a8,decode=+bf16]; none: no splits");
  cmd->add_option("--gpt2-splits", o.gpt2_splits, "phase splits on the GPT-2-small-shaped body; none: no splits");
  cmd->add_option("--curve-lengths", o.curve_lengths, "prompt lengths of the prompt-length curve (plus each model's longest)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--curve-gen", o.curve_gen, "tokens generated after each curve prompt")->capture_default_str();
  cmd->add_option("--curve-rounds", o.curve_rounds, "rounds of the prompt-length curve (0: no curve)")->capture_default_str();
  add_old_spelling(cmd, "--curve-methods",
                   cmd->add_option("--curve-schemes", o.curve_methods, "schemes of the prompt-length curve (default fp32 int8-per-channel int4-g64 int4-g64+a8)"),
                   o.curve_methods);
  cmd->add_flag("--no-fp32-check", [cli](int64_t) { cli->o.fp32_check = false; }, "skip timing the fp32 kernels against Eigen");
  cmd->add_option("--prompt-tokens", o.prompt_tokens, "prompt length (prefill)")->capture_default_str();
  cmd->add_option("--gen-tokens", o.gen_tokens, "generated tokens per run")->capture_default_str();
  cmd->add_option("--batch", o.batch, "batch sizes of the decode curve")->delimiter(',')->capture_default_str();
  cmd->add_option("--batch-prompt", o.batch_prompt, "prompt length of each batch-curve sequence")->capture_default_str();
  cmd->add_option("--batch-steps", o.batch_steps, "decode steps per batch-curve run")->capture_default_str();
  cmd->add_option("--batch-rounds", o.batch_rounds, "rounds of the batch curve (its own, after the generation rounds)")->capture_default_str();
  cmd->add_option("--meter", o.meter, "auto | rapl | perf | model")->capture_default_str();
  cmd->add_option("--coefficients", o.roots.coefficients, "the energy model's coefficients file")->capture_default_str();
  cmd->add_option("--powercap-root", o.roots.powercap, "powercap sysfs root (RAPL)")->capture_default_str();
  cmd->add_option("--perf-root", o.roots.perf_power, "perf power PMU sysfs root")->capture_default_str();
  add_model_option(cmd, o.model, "fp32 MiniGPT checkpoint");
  add_corpus_options(cmd, o.lexicon, o.seed);
  cmd->add_option("--ppl-tokens", o.ppl_tokens, "perplexity over the test split's first N tokens (0: all)")->capture_default_str();
  cmd->add_option("--max-slots", o.max_slots, "verb-tense slots to score (0: all)")->capture_default_str();
  cmd->add_option("--max-items", o.max_items, "generalization benchmark items to score, spread over the paradigms (0: all)")
      ->check(NonNegative)
      ->capture_default_str();
  cmd->add_option("--calibration", o.calibration, "GPTQ calibration windows")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--out", cli->out, "output folder")->capture_default_str();
  cmd->add_flag("--calibrate", o.calibrate, "fit the model's coefficients from a real meter (writes energy_model.calibrated.json)");
  cmd->add_flag("--no-plot", [cli](int64_t) { cli->plot = false; }, "skip the PNG figures");
  cmd->add_flag("--report-only", cli->report_only, "only redraw report.txt, figures and README of --out from summary.json");
  add_no_verify_flag(cmd);
  cmd->callback([cli] { run(*cli); });
}

}  // namespace mqcli
