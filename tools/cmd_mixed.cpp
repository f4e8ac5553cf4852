// `miniquant mixed`: the mixed-precision study (experiments/27-mixed-epi): layer sensitivities, the
// hand-written quant maps, the automatically allocated ones, each measured once into its own file
// (resumable, shardable), then merged into results.json, manifest.json, the figures and the README block.
#include <omp.h>

#include <string>

#include <fmt/core.h>

#include "commands.h"
#include "experiments/experiment_io.h"
#include "experiments/mixed.h"
#include "experiments/mixed_report.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
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
};

void write_report(const mqexp::MixedOptions& o, const nlohmann::json& results, const nlohmann::json& manifest, bool plot) {
  if (plot) {
    mqexp::run_plot("mixed_pareto_epi.py", {o.out + "/results.json", o.out + "/pareto_epi.png"});
    mqexp::run_plot("mixed_pareto_bytes.py", {o.out + "/results.json", o.out + "/pareto_bytes.png"});
    if (results.at("sensitivity").contains("linears"))
      mqexp::run_plot("mixed_sensitivity.py", {o.out + "/results.json", o.out + "/sensitivity.png"});
  }
  mqexp::update_generated_block(o.out + "/README.md", mqexp::mixed_readme_block(results, manifest),
                                "27-mixed-epi: per-layer mixed precision, judged by energy per intelligence");
}

void merge(const MixedCli& cli, double seconds) {
  const mqexp::MixedOptions& o = cli.o;
  nlohmann::json results = mqexp::merge_mixed(o);
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
  write_report(o, results, manifest, cli.plot);
  fmt::print("{}", mqexp::mixed_summary_text(results));
  fmt::print("wrote {}/{{results.json, manifest.json, README.md{}}}\n", o.out,
             cli.plot ? ", pareto_epi.png, pareto_bytes.png, sensitivity.png" : "");
}

void run(MixedCli& cli) {
  mqexp::MixedOptions& o = cli.o;
  const auto slash = cli.shard.find('/');
  if (slash == std::string::npos) throw mq::UsageError(fmt::format("--shard {}: expected i/n, e.g. 0/2", cli.shard));
  try {
    o.shard = std::stoi(cli.shard.substr(0, slash));
    o.shards = std::stoi(cli.shard.substr(slash + 1));
  } catch (const std::exception&) {
    throw mq::UsageError(fmt::format("--shard {}: expected i/n, e.g. 0/2", cli.shard));
  }
  mqexp::validate(o);
  mq::check_folder_outputs("--out", o.out, {"results.json", "manifest.json", "README.md", "allocation.json", "pareto_epi.png",
                                            "pareto_bytes.png", "sensitivity.png"},
                           {{"--model", o.model}, {"--coefficients", o.roots.coefficients}});
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
  if (stage("auto")) {
    const std::vector<mqexp::MixedUnit> units = mqexp::allocate_mixed(o);
    say(fmt::format("allocation: {} distinct maps from the measured sensitivities (configs_auto/)", units.size()));
    failed += report("allocated maps", mqexp::run_mixed_units(o, units, say));
  }
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
                  "all | run (= sensitivity, then configs) | sensitivity | configs | auto (allocate from the sensitivities, "
                  "measure the maps) | merge (results, figures, README)")
      ->check(CLI::IsMember({"all", "run", "sensitivity", "configs", "auto", "merge"}))
      ->capture_default_str();
  cmd->add_option("--shard", cli->shard, "measure only units i, i+n, i+2n, ... (i/n); merge joins the shards' runs/ folders")
      ->capture_default_str();
  cmd->add_option("--runs", o.extra_runs, "merge: another shard's runs/ folder (repeatable)");
  cmd->add_option("--configs", o.configs_dir, "folder of quant maps (*.json)")->capture_default_str();
  cmd->add_option("--out", o.out, "the study's folder")->capture_default_str();
  cmd->add_option("--model", o.model, "fp32 MiniGPT checkpoint")->check(CLI::ExistingFile)->capture_default_str();
  cmd->add_option("--lexicon", o.lexicon, "lexicon folder of the corpus")->capture_default_str();
  cmd->add_option("--seed", o.seed, "corpus seed")->capture_default_str();
  cmd->add_option("--reps", o.reps, "speed and energy repetitions per configuration (median)")->capture_default_str();
  cmd->add_option("--ppl-tokens", o.ppl_tokens, "perplexity and KLD over the test split's first N tokens (0: all)")->capture_default_str();
  cmd->add_option("--max-slots", o.max_slots, "verb-tense slots to score (0: all)")->capture_default_str();
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
