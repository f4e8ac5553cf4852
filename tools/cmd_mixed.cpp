// `miniquant mixed`: the mixed-precision study (experiments/27-mixed-epi): layer sensitivities, the
// hand-written quant maps, the automatically allocated ones, each measured once into its own file, and their
// energy in paired interleaved rounds, one file per round (resumable, shardable); then merged into
// results.json, manifest.json, the figures and the README block.
#include <omp.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>

#include <fmt/core.h>

#include "commands.h"
#include "vocabulary.h"
#include "experiments/experiment_io.h"
#include "experiments/mixed.h"
#include "experiments/mixed_energy.h"
#include "experiments/mixed_report.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/path_name.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "validators.h"
#include "verify_flag.h"

namespace mqcli {
namespace {

struct MixedCli {
  mqexp::MixedOptions o;
  std::string stage = "all";
  std::string shard = "0/1";
  bool plot = true;
  bool per_machine = false;    // merge: also one report per machine the units ran on, in by-machine/
};

void write_report(const std::string& dir, const nlohmann::json& results, const nlohmann::json& manifest, bool plot,
                  const std::string& title) {
  if (plot) {
    mqexp::run_plot("mixed_pareto_epi.py", {dir + "/results.json", dir + "/pareto_epi.png"});
    mqexp::run_plot("mixed_pareto_bytes.py", {dir + "/results.json", dir + "/pareto_bytes.png"});
    if (results.at("sensitivity").contains("linears"))
      mqexp::run_plot("mixed_sensitivity.py", {dir + "/results.json", dir + "/sensitivity.png"});
  }
  mqexp::update_generated_block(dir + "/README.md", mqexp::mixed_readme_block(results, manifest), title);
}

// A folder name for a machine of measured_on: its host (or its CPU) in letters, digits, '.', '_', '-', with
// -2, -3, ... when another machine already took the name (one host with two CPU descriptions, no host).
std::string machine_folder(const nlohmann::json& machine, std::set<std::string>& taken) {
  const auto text = [&](const char* key) { return machine.contains(key) && machine[key].is_string() ? machine[key].get<std::string>() : std::string(); };
  std::string name = text("host");
  if (name.empty()) name = text("cpu_model");
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '_';
  name = name.substr(0, 56);  // room for "-NN" within mq::kMaxPathName
  if (!mq::path_name_problem(name).empty()) name = "machine";  // empty, or a leading '.' or '-'
  std::string folder = name;
  for (int k = 2; !taken.insert(folder).second; ++k) folder = fmt::format("{}-{}", name, k);
  mq::check_path_name(folder, "machine folder");  // the host came from a unit file: the one check of a path name
  return folder;
}

// by-machine/<host>/: the units each machine measured, alone, so that speeds and joules compare within one
// machine; quality numbers are the same as in the whole study's table.
void write_per_machine(const MixedCli& cli, const nlohmann::json& results, const nlohmann::json& manifest) {
  const mqexp::MixedOptions& o = cli.o;
  std::set<std::string> taken;
  for (const auto& mo : results.at("measured_on")) {
    nlohmann::json sub = mqexp::merge_mixed(o, mo.at("machine"));
    mqexp::annotate_mixed(sub);
    const std::string dir = o.out + "/by-machine/" + machine_folder(mo.at("machine"), taken);
    std::filesystem::create_directories(dir);
    nlohmann::json m = manifest;
    m["only_machine"] = mo.at("machine");
    mqexp::write_json_atomic(dir + "/results.json", sub);
    mqexp::write_json_atomic(dir + "/manifest.json", m);
    write_report(dir, sub, m, cli.plot, "27-mixed-epi, the units measured on one machine");
    fmt::print(stderr, "per machine: {} configurations of {} -> {}\n", sub.at("configs").size(),
               mo.at("machine").value("host", "?"), dir);
  }
}

void merge(const MixedCli& cli, double seconds) {
  const mqexp::MixedOptions& o = cli.o;
  nlohmann::json results = mqexp::merge_mixed(o);
  // A partial set would silently draw frontiers and answers from whatever finished: refuse, naming the units.
  if (const std::string missing = mqexp::mixed_missing_line(results); !missing.empty()) {
    if (!o.allow_partial)
      throw mq::Error(fmt::format("merge: {}; rerun their shards (finished units are skipped), or pass --allow-partial to merge "
                                  "what is there",
                                  missing));
    fmt::print(stderr, "WARNING (--allow-partial): {}\n", missing);
  }
  if (const std::string w = mqexp::mixed_machines_warning(results); !w.empty()) fmt::print(stderr, "{}\n", w);
  mqexp::annotate_mixed(results);
  const nlohmann::json manifest = {
      {"command", command_line()},
      {"date", mq::utc_now_iso8601()},
      {"seed", o.seed},
      {"threads", omp_get_max_threads()},
      {"machine", mqexp::machine_json()},
      {"build", mqexp::build_json()},
      {"checkpoint", {{"path", o.model}, {"sha256", results.at("checkpoint_sha256")}}},
      {"configs_dir", o.configs_dir},
      {"extra_runs", o.extra_runs},
      {"options", results.at("options")},
      {"durations_s", {{"this_invocation", seconds}}},
  };
  mqexp::write_json_atomic(o.out + "/results.json", results);
  mqexp::write_json_atomic(o.out + "/manifest.json", manifest);
  write_report(o.out, results, manifest, cli.plot, "27-mixed-epi: per-layer mixed precision, judged by energy per intelligence");
  if (cli.per_machine) write_per_machine(cli, results, manifest);
  fmt::print("{}", mqexp::mixed_summary_text(results));
  fmt::print("wrote {}/{{results.json, manifest.json, README.md{}}}\n", o.out,
             cli.plot ? ", pareto_epi.png, pareto_bytes.png, sensitivity.png" : "");
}

void run(MixedCli& cli) {
  mqexp::MixedOptions& o = cli.o;
  std::tie(o.shard, o.shards) = parse_shard(cli.shard, "--shard");
  for (const auto& r : o.extra_runs) check_input_folder("--runs", r);
  mqexp::validate(o);
  // The folders read are inputs too: results written into --configs or a --runs folder spoil the next run.
  std::vector<mq::FlagPath> inputs = {{"--model", o.model}, {"--coefficients", o.roots.coefficients}, {"--configs", o.configs_dir}};
  for (const auto& r : o.extra_runs) inputs.push_back({"--runs", r});
  mq::check_folder_outputs("--out", o.out, {"results.json", "manifest.json", "README.md", "allocation.json", "pareto_epi.png",
                                            "pareto_bytes.png", "sensitivity.png"},
                           inputs);
  mq::check_writable_dir(o.out);  // before the long run, not after it
  const mq::Stopwatch clock;
  const auto say = [&](const std::string& line) { fmt::print(stderr, "[{:6.0f} s] {}\n", clock.seconds(), line); };
  const auto report = [&](const char* what, const mqexp::UnitsRun& r) {
    say(fmt::format("{}: {} measured, {} reused from earlier runs, {} left to other shards, {} failed", what, r.measured, r.reused,
                    r.other_shards, r.failed));
    return r.failed;
  };
  int failed = 0;
  const auto stage = [&](const char* name) { return cli.stage == "all" || cli.stage == name; };
  // Sensitivities first: they time nothing, so they tolerate a busy machine better than the configurations.
  if (stage("run") || cli.stage == "sensitivity")
    failed += report("sensitivity units", mqexp::run_mixed_units(o, mqexp::sensitivity_units(o, mqexp::mixed_model_config(o)), say));
  if (stage("run") || cli.stage == "configs")
    failed += report("configuration units", mqexp::run_mixed_units(o, mqexp::config_units(o), say));
  const auto energy = [&](bool with_auto) {
    const std::string set = with_auto ? "all" : "configs";
    const mqexp::EnergySetRun r = mqexp::run_mixed_energy(o, mqexp::energy_units(o, with_auto), set, say);
    say(fmt::format("energy rounds of set '{}': {} measured, {} reused, {} left to other shards{}", set, r.measured, r.reused, r.other_shards,
                    r.added > 0 ? fmt::format(", {} added for the control{}", r.added, r.answered ? "" : " (still not passing at the bound)")
                                : std::string()));
  };
  // The hand-written maps' rounds first: the allocation prices recipes from them.
  if (stage("run") || cli.stage == "energy") energy(false);
  if (stage("auto")) {
    const std::vector<mqexp::MixedUnit> units = mqexp::allocate_mixed(o);
    say(fmt::format("allocation: {} distinct maps from the measured sensitivities and energy rounds (configs_auto/)", units.size()));
    failed += report("allocated maps", mqexp::run_mixed_units(o, units, say));
  }
  if (cli.stage == "all" || cli.stage == "auto" || cli.stage == "energy-all") energy(true);
  if (stage("merge")) merge(cli, clock.seconds());
  if (failed > 0) throw mq::Error(fmt::format("{} units failed (their files record the error; rerun to retry them)", failed));
}

}  // namespace

void register_mixed(CLI::App& app) {
  auto cli = std::make_shared<MixedCli>();
  mqexp::MixedOptions& o = cli->o;
  o.model = mqexp::kDefaultModel;
  o.lexicon = mqexp::kDefaultLexicon;
  o.seed = kDefaultSeed;
  o.configs_dir = MQ_SOURCE_DIR "/experiments/27-mixed-epi/configs";
  o.out = MQ_SOURCE_DIR "/experiments/27-mixed-epi";
  o.roots.coefficients = MQ_SOURCE_DIR "/data/energy_model.json";
  CLI::App* cmd = app.add_subcommand("mixed", "Per-layer mixed precision by energy per intelligence (experiments/27-mixed-epi)");
  cmd->add_option("--stage", cli->stage,
                  "all | run (= sensitivity, configs, energy) | sensitivity | configs (quality) | energy (rounds of the "
                  "hand-written maps) | auto (allocate, measure the maps' quality, then rounds of every map) | energy-all | merge")
      ->check(CLI::IsMember({"all", "run", "sensitivity", "configs", "energy", "auto", "energy-all", "merge"}))
      ->capture_default_str();
  cmd->add_option("--shard", cli->shard, "measure only units i, i+n, i+2n, ... (i/n); merge joins the shards' runs/ folders")
      ->capture_default_str();
  cmd->add_option("--runs", o.extra_runs, "another shard's runs/ folder (repeatable): its finished units count as done (merge, auto, reruns)");
  cmd->add_flag("--allow-partial", cli->o.allow_partial,
                "merge: write the results although units are missing or invalid (each is named, with its reason)");
  cmd->add_flag("--per-machine", cli->per_machine, "merge: also report each machine's units alone, in by-machine/<host>/");
  cmd->add_option("--configs", o.configs_dir, "folder of quant maps (*.json)")->capture_default_str();
  cmd->add_option("--out", o.out, "the study's folder")->capture_default_str();
  add_model_option(cmd, o.model, "fp32 MiniGPT checkpoint");
  add_corpus_options(cmd, o.lexicon, o.seed);
  cmd->add_option("--rounds", o.rounds, "energy rounds: each runs every configuration once, interleaved")->capture_default_str();
  cmd->add_option("--max-rounds", o.max_rounds,
                  "adaptive (one shard): while the control does not pass (holds 1.00, inside +-3%) after --rounds, more rounds up to this many in all (0: 3 x --rounds)")
      ->capture_default_str();
  cmd->add_option("--add-rounds", o.add_rounds, "adaptive: rounds added at a time")->capture_default_str();
  cmd->add_option("--gens", o.gens, "generations per configuration per round (one measurement)")->capture_default_str();
  cmd->add_option("--ppl-tokens", o.ppl_tokens, "perplexity and KLD over the test split's first N tokens (0: all)")->capture_default_str();
  cmd->add_option("--max-slots", o.max_slots, "verb-tense slots to score (0: all)")->capture_default_str();
  cmd->add_option("--max-items", o.max_items, "generalization benchmark items to score, spread over the paradigms (0: all)")
      ->capture_default_str();
  cmd->add_option("--sensitivity-tokens", o.sensitivity_tokens, "KLD tokens of each sensitivity unit")->capture_default_str();
  cmd->add_option("--sensitivity-recipes", o.sensitivity_recipes, "recipes each Linear is tried in (and the allocation may choose)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--calibration", o.calibration, "GPTQ calibration windows for every map")->capture_default_str();
  cmd->add_option("--meter", o.meter, "auto | rapl | perf | model")->capture_default_str();
  cmd->add_option("--coefficients", o.roots.coefficients, "the energy model's coefficients file")->capture_default_str();
  cmd->add_option("--prompt-tokens", o.prompt_tokens, "energy run: prompt length")->capture_default_str();
  cmd->add_option("--gen-tokens", o.gen_tokens, "energy run: generated tokens")->capture_default_str();
  cmd->add_flag("--no-plot", [cli](int64_t) { cli->plot = false; }, "skip the PNG figures");
  add_no_verify_flag(cmd);
  cmd->callback([cli] { run(*cli); });
}

}  // namespace mqcli
