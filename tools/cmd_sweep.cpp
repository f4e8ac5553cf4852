// `miniquant sweep`: the quantization curve of a MiniGPT (experiments/26-quant-curve):
// results.json, manifest.json, the figures and the README's generated block.
#include <omp.h>

#include <filesystem>
#include <algorithm>
#include <string>

#include <fmt/core.h>

#include "experiments/ceilings.h"
#include "miniquant/util/timer.h"
#include "commands.h"
#include "vocabulary.h"
#include "experiments/experiment_io.h"
#include "experiments/progress.h"
#include "experiments/sweep.h"
#include "experiments/sweep_report.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/quant_plan.h"
#include "quant_map.h"
#include "validators.h"
#include "verify_flag.h"

namespace mqcli {
namespace {

struct SweepCli {
  mqexp::SweepOptions o;
  std::string out = MQ_SOURCE_DIR "/experiments/26-quant-curve";
  std::string ceilings = MQ_SOURCE_DIR "/experiments/01-roofline/ceilings.json";
  std::vector<std::string> extra;
  std::vector<std::string> quant_maps;  // --quant-map files, in order
  bool plot = true;
  bool report_only = false;
};

// Each --quant-map as the manifest records it: the file and the plan read from it.
nlohmann::json quant_maps_json(const SweepCli& cli) {
  nlohmann::json maps = nlohmann::json::array();
  for (size_t i = 0; i < cli.quant_maps.size(); ++i)
    maps.push_back({{"path", cli.quant_maps[i]},
                    {"sha256", mq::sha256_file(cli.quant_maps[i])},
                    {"plan", cli.o.quant_maps[i].to_json()}});
  return maps;
}

// Figures and the README block from results.json and manifest.json alone.
void write_report(const std::string& out, const mqexp::SweepResults& results, const nlohmann::json& manifest,
                  const std::string& ceilings_path, bool plot) {
  if (plot) {
    mqexp::run_plot("pareto.py", {out + "/results.json", out + "/pareto.png"});
    mqexp::run_plot("verb_tense_accuracy.py", {out + "/results.json", out + "/verb_tense_accuracy.png"});
    if (std::any_of(results.schemes.begin(), results.schemes.end(),
                    [](const mqexp::SchemeRow& r) { return r.ok && r.quality && r.quality->generalization; }))
      mqexp::run_plot("generalization_accuracy.py", {out + "/results.json", out + "/generalization_accuracy.png"});
    mqexp::run_plot("roofline_overlay.py", {out + "/results.json", ceilings_path, out + "/roofline_overlay.png"});
  }
  mqexp::update_generated_block(out + "/README.md", mqexp::sweep_readme_block(results, manifest),
                         "26-quant-curve: what each quantization scheme costs and buys");
}

void run(SweepCli& cli) {
  // What the sweep writes into --out must not be what it reads (a map or the ceilings kept there).
  std::vector<mq::FlagPath> inputs = {{"--model", cli.o.model}, {"--ceilings", cli.ceilings}};
  for (const auto& m : cli.quant_maps) inputs.push_back({"--quant-map", m});
  if (!cli.report_only)
    mq::check_folder_outputs("--out", cli.out, {"results.json", "manifest.json", "README.md", "pareto.png", "verb_tense_accuracy.png",
                                                "generalization_accuracy.png", "roofline_overlay.png"},  // ceilings.json: written only when --ceilings is missing
                             inputs);
  mq::check_writable_dir(cli.out);  // before the long run, not after it
  if (cli.report_only) {
    const std::string file = cli.out + "/results.json", man = cli.out + "/manifest.json";
    const mqexp::SweepResults results = mqexp::sweep_results_from_json(mqexp::read_json(file), file);
    const std::string ceil = cli.out + "/" + (results.ceilings_file.empty() ? std::string("ceilings.json") : results.ceilings_file);
    const nlohmann::json manifest = mqexp::read_json(man);
    mq::interpret_json(man, [&] { write_report(cli.out, results, manifest, ceil, cli.plot); });
    fmt::print("redrew the figures and README of {} from its results.json\n", cli.out);
    return;
  }
  mqexp::SweepOptions& o = cli.o;
  const mq::Stopwatch clock;
  const std::string date = mq::utc_now_iso8601();
  const auto elapsed = [&] { return clock.seconds(); };
  // Ceilings for the roofline bound of each decode dot: 01-roofline's, or measured now. Read first: a
  // file of the wrong shape fails here, in one line naming the key.
  std::string ceilings_path = cli.ceilings;
  const bool have_ceilings = std::filesystem::exists(cli.ceilings);
  if (have_ceilings) {
    o.ceilings = mqexp::read_json(cli.ceilings);
    mqexp::check_ceilings(o.ceilings, cli.ceilings);
  }
  fmt::print(stderr, "sweep: seed {}, {} schemes, {} quant maps, {} threads -> {}\n", o.seed, o.schemes.size(), o.quant_maps.size(),
             omp_get_max_threads(), cli.out);
  if (!have_ceilings) {
    fmt::print(stderr, "sweep: {} not found; measuring the ceilings now\n", cli.ceilings);
    o.ceilings = mqexp::measure_ceilings(mqexp::default_ceiling_threads(), [](int, int, const std::string&) {});
    o.ceilings["machine"] = mqexp::machine_json();
    o.ceilings["date"] = date;
    ceilings_path = cli.out + "/ceilings.json";
    mqexp::write_json_atomic(ceilings_path, o.ceilings);
  }

  mqexp::Progress progress(1);
  mqexp::SweepRun run = mqexp::run_sweep(o, [&](int done, int total, const std::string& what) {
    progress.update(done, total, elapsed(), what);
  });
  mqexp::SweepResults& results = run.results;
  results.ceilings_file = std::filesystem::relative(ceilings_path, cli.out).string();

  nlohmann::json durations = {{"total", elapsed()}};
  for (const auto& r : results.schemes)
    if (r.ok)
      durations[r.scheme] = {{"quantize", r.quantize_seconds},
                             {"perplexity", r.quality->perplexity_seconds},
                             {"verb_tense", r.quality->verb_tense_seconds}};
  nlohmann::json manifest = {
      {"command", command_line()},
      {"date", date},
      {"seed", o.seed},
      {"threads", omp_get_max_threads()},
      {"machine", mqexp::machine_json()},
      {"build", mqexp::build_json()},
      {"checkpoint", {{"path", o.model}, {"sha256", mq::sha256_file(o.model)}}},
      {"corpus", {{"lexicon", o.lexicon}, {"seed", o.seed}, {"sha256", run.corpus_sha256},
                  {"vocab_hash", run.vocab_hash}}},
      {"schemes", o.schemes},
      {"quant_maps", quant_maps_json(cli)},
      {"options", {{"calibration_windows", o.calibration}, {"max_slots", o.max_slots}, {"max_items", o.max_items}, {"ppl_tokens", o.ppl_tokens}, {"speed_reps", o.speed_reps},
                   {"gpt2_shaped", o.gpt2_shaped}}},
      {"ceilings_file", results.ceilings_file},
      {"ceilings_compared", o.ceilings.value("compared_with_previous", nlohmann::json())},
      {"durations_s", durations},
  };
  mqexp::write_json_atomic(cli.out + "/results.json", mqexp::to_json(results));
  mqexp::write_json_atomic(cli.out + "/manifest.json", manifest);
  write_report(cli.out, results, manifest, ceilings_path, cli.plot);

  fmt::print("{:<18} {:>8} {:>8} {:>12} {:>8} {:>10} {:>10}  {}\n", "scheme", "PPL", "verb acc", "bytes", "bits/w",
             "decode t/s", "prefill", "status");
  int failed = 0;
  int busy = 0;
  for (const auto& r : results.schemes) {
    if (!r.ok) {
      ++failed;
      fmt::print("{:<18} failed: {}\n", r.scheme, r.error);
      continue;
    }
    busy += r.speed->busy;
    fmt::print("{:<18} {:8.3f} {:8.4f} {:12} {:8.3f} {:10.1f} {:10.1f}  {}{}\n", r.scheme, r.quality->ppl,
               r.quality->verb_tense.accuracy(), r.footprint.bytes, r.footprint.bits_per_weight,
               r.speed->decode_tokens_per_s.median, r.speed->prefill_tokens_per_s.median,
               r.on_pareto_frontier ? "pareto" : "", r.speed->busy ? " busy" : "");
  }
  const std::string ceil_warning = mqexp::ceilings_warning(manifest.at("ceilings_compared"));
  if (!ceil_warning.empty()) fmt::print(stderr, "sweep: warning: {}\n", ceil_warning);
  if (busy > 0)
    fmt::print(stderr, "sweep: warning: the machine was busy (load average above its cores) while {} rows were timed; "
                       "their speeds are not results\n", busy);
  fmt::print("wrote {}/{{results.json, manifest.json, README.md{}}} in {:.0f} s\n", cli.out,
             cli.plot ? ", pareto.png, verb_tense_accuracy.png, generalization_accuracy.png, roofline_overlay.png" : "", elapsed());
  if (failed > 0)
    throw mq::Error(fmt::format("{} of {} schemes failed (recorded in results.json)", failed, results.schemes.size()));
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto cli = std::make_shared<SweepCli>();
  cli->o.model = mqexp::kDefaultModel;
  cli->o.lexicon = mqexp::kDefaultLexicon;
  cli->o.seed = kDefaultSeed;
  CLI::App* cmd = app.add_subcommand("sweep", "The quantization curve: every scheme's PPL, verb-tense accuracy, bytes and speed");
  add_model_option(cmd, cli->o.model);
  cmd->add_option("--out", cli->out, "output folder")->capture_default_str();
  cmd->add_option("--schemes", cli->o.schemes, "schemes to run instead of the default thirty-one, separated by commas or spaces (format table names, -gptq for GPTQ; "
                  "sets: lab02 = the seven of lab 02's table, default)");
  cmd->add_option("--add-scheme", cli->extra, "run this scheme too (repeatable), e.g. int4-g64-asym, int3-g128-gptq");
  cmd->add_option("--quant-map", cli->quant_maps, "run this quant map too (repeatable): one row named by its config_id")
      ->check(CLI::ExistingFile);
  add_corpus_options(cmd, cli->o.lexicon, cli->o.seed);
  cmd->add_option("--calibration", cli->o.calibration, "GPTQ calibration windows from the val split")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--max-slots", cli->o.max_slots, "verb-tense slots to score (0: all)")->check(NonNegative);
  cmd->add_option("--max-items", cli->o.max_items, "generalization benchmark items to score, spread over the paradigms (0: all)")
      ->check(NonNegative);
  cmd->add_option("--ppl-tokens", cli->o.ppl_tokens, "perplexity over the test split's first N tokens (0: all)")
      ->check(NonNegative);
  add_old_spelling(cmd, "--speed-reps",
                   cmd->add_option("--rounds", cli->o.speed_reps, "interleaved timing rounds (each: one timed run of every model; the first adds a warm-up)")
                       ->check(Positive)->capture_default_str(),
                   cli->o.speed_reps)
      ->check(Positive);
  cmd->add_option("--ceilings", cli->ceilings, "01-roofline's ceilings.json (measured now when missing)")->capture_default_str();
  cmd->add_flag("--no-gpt2", [cli](int64_t) { cli->o.gpt2_shaped = false; }, "skip the GPT-2-small-shaped speed runs");
  cmd->add_flag("--no-plot", [cli](int64_t) { cli->plot = false; }, "skip the PNG figures");
  cmd->add_flag("--report-only", cli->report_only, "only redraw the figures and README of --out from its results.json");
  add_no_verify_flag(cmd);
  cmd->callback([cli, cmd] {
    mqexp::SweepOptions& o = cli->o;
    o.schemes = cmd->count("--schemes") ? mqexp::expand_scheme_sets(split_names_given(o.schemes, "--schemes"))
                                        : mqexp::default_sweep_schemes();
    if (cmd->count("--add-scheme"))
      for (const auto& n : split_names_given(cli->extra, "--add-scheme")) o.schemes.push_back(n);
    for (const auto& f : cli->quant_maps) o.quant_maps.push_back(read_quant_map(f));
    // Unknown names, bad maps and two rows of one name fail here, before anything runs.
    if (!cli->report_only) (void)mqexp::sweep_plans(o);
    run(*cli);
  });
}

}  // namespace mqcli
