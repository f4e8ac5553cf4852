// `miniquant sweep`: the quantization curve of a MiniGPT (experiments/26-quant-curve):
// results.json, manifest.json, the figures and the README's generated block.
#include <omp.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/core.h>

#include "ceilings.h"
#include "commands.h"
#include "validators.h"
#include "experiment_io.h"
#include "miniquant/error.h"
#include "miniquant/io.h"
#include "miniquant/sysinfo.h"
#include "minigpt/quantize_model.h"
#include "progress.h"
#include "sweep.h"
#include "sweep_report.h"
#include "workspace.h"

namespace mqcli {
namespace {

struct SweepCli {
  SweepOptions o;
  std::string out = MQ_SOURCE_DIR "/experiments/26-quant-curve";
  std::string ceilings = MQ_SOURCE_DIR "/experiments/01-roofline/ceilings.json";
  std::vector<std::string> extra;
  bool plot = true;
  bool report_only = false;
};

// Figures and the README block from results.json and manifest.json alone.
void write_report(const std::string& out, const nlohmann::json& results, const nlohmann::json& manifest,
                  const std::string& ceilings_path, bool plot) {
  if (plot) {
    run_plot("pareto.py", {out + "/results.json", out + "/pareto.png"});
    run_plot("verb_tense_accuracy.py", {out + "/results.json", out + "/verb_tense_accuracy.png"});
    run_plot("roofline_overlay.py", {out + "/results.json", ceilings_path, out + "/roofline_overlay.png"});
  }
  update_generated_block(out + "/README.md", sweep_readme_block(results, manifest),
                         "26-quant-curve: what each quantization scheme costs and buys");
}

void run(SweepCli& cli) {
  mq::check_writable_dir(cli.out);  // before the long run, not after it
  if (cli.report_only) {
    const nlohmann::json results = read_json(cli.out + "/results.json");
    const std::string ceil = cli.out + "/" + results.value("ceilings_file", std::string("ceilings.json"));
    write_report(cli.out, results, read_json(cli.out + "/manifest.json"), ceil, cli.plot);
    fmt::print("redrew the figures and README of {} from its results.json\n", cli.out);
    return;
  }
  SweepOptions& o = cli.o;
  if (o.schemes.empty()) o.schemes = default_sweep_schemes();
  o.schemes.insert(o.schemes.end(), cli.extra.begin(), cli.extra.end());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string date = mq::utc_now_iso8601();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  fmt::print(stderr, "sweep: seed {}, {} schemes, {} threads -> {}\n", o.seed, o.schemes.size(), omp_get_max_threads(), cli.out);

  // Ceilings for the roofline bound of each decode dot: 01-roofline's, or measured now.
  std::string ceilings_path = cli.ceilings;
  if (std::filesystem::exists(cli.ceilings)) {
    o.ceilings = read_json(cli.ceilings);
  } else {
    fmt::print(stderr, "sweep: {} not found; measuring the ceilings now\n", cli.ceilings);
    o.ceilings = measure_ceilings(default_ceiling_threads(), [](int, int, const std::string&) {});
    o.ceilings["machine"] = machine_json();
    o.ceilings["date"] = date;
    ceilings_path = cli.out + "/ceilings.json";
    write_json_atomic(ceilings_path, o.ceilings);
  }

  Progress progress(1);
  SweepRun run = run_sweep(o, [&](int done, int total, const std::string& what) {
    progress.update(done, total, elapsed(), what);
  });
  nlohmann::json& results = run.results;
  results["ceilings_file"] = std::filesystem::relative(ceilings_path, cli.out).string();

  nlohmann::json durations = {{"total", elapsed()}};
  for (const auto& r : results["schemes"])
    durations[r["scheme"].get<std::string>()] = {{"quantize", r.value("quantize_seconds", 0.0)},
                                                 {"perplexity", r.value("perplexity_seconds", 0.0)},
                                                 {"verb_tense", r.value("verb_tense_seconds", 0.0)}};
  nlohmann::json manifest = {
      {"command", command_line()},
      {"date", date},
      {"seed", o.seed},
      {"threads", omp_get_max_threads()},
      {"machine", machine_json()},
      {"build", build_json()},
      {"checkpoint", {{"path", o.model}, {"sha256", mq::sha256_file(o.model)}}},
      {"corpus", {{"lexicon", o.lexicon}, {"seed", o.seed}, {"sha256", run.corpus_sha256},
                  {"vocab_hash", run.vocab_hash}}},
      {"schemes", o.schemes},
      {"options", {{"calibration_windows", o.calibration}, {"max_slots", o.max_slots}, {"ppl_tokens", o.ppl_tokens}, {"speed_reps", o.speed_reps},
                   {"gpt2_shaped", o.gpt2_shaped}}},
      {"ceilings_file", results["ceilings_file"]},
      {"durations_s", durations},
  };
  write_json_atomic(cli.out + "/results.json", results);
  write_json_atomic(cli.out + "/manifest.json", manifest);
  write_report(cli.out, results, manifest, ceilings_path, cli.plot);

  fmt::print("{:<18} {:>8} {:>8} {:>12} {:>8} {:>10} {:>10}  {}\n", "scheme", "PPL", "verb acc", "bytes", "bits/w",
             "decode t/s", "prefill", "status");
  int failed = 0;
  for (const auto& r : results["schemes"]) {
    if (r["status"] != "ok") {
      ++failed;
      fmt::print("{:<18} failed: {}\n", r["scheme"].get<std::string>(), r["error"].get<std::string>());
      continue;
    }
    fmt::print("{:<18} {:8.3f} {:8.4f} {:12} {:8.3f} {:10.1f} {:10.1f}  {}\n", r["scheme"].get<std::string>(),
               r["ppl"].get<double>(), r["verb_tense_accuracy"].get<double>(), r["bytes"].get<long long>(),
               r["bits_per_weight"].get<double>(), r["decode_tokens_per_s"]["median"].get<double>(),
               r["prefill_tokens_per_s"]["median"].get<double>(), r["on_pareto_frontier"].get<bool>() ? "pareto" : "");
  }
  fmt::print("wrote {}/{{results.json, manifest.json, README.md{}}} in {:.0f} s\n", cli.out,
             cli.plot ? ", pareto.png, verb_tense_accuracy.png, roofline_overlay.png" : "", elapsed());
  if (failed > 0) throw mq::Error(fmt::format("{} of {} schemes failed (recorded in results.json)", failed, o.schemes.size()));
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto cli = std::make_shared<SweepCli>();
  cli->o.model = kDefaultModel;
  cli->o.lexicon = kDefaultLexicon;
  cli->o.seed = kDefaultSeed;
  CLI::App* cmd = app.add_subcommand("sweep", "The quantization curve: every scheme's PPL, verb-tense accuracy, bytes and speed");
  cmd->add_option("--model", cli->o.model, "fp32 checkpoint")->check(CLI::ExistingFile)->capture_default_str();
  cmd->add_option("--out", cli->out, "output folder")->capture_default_str();
  cmd->add_option("--schemes", cli->o.schemes, "schemes to run instead of the seven, separated by commas or spaces (format table names, -gptq for GPTQ)");
  cmd->add_option("--add-scheme", cli->extra, "run this scheme too (repeatable), e.g. int4-g64-asym, int3-g128-gptq");
  cmd->add_option("--lexicon", cli->o.lexicon, "lexicon folder of the corpus")->capture_default_str();
  cmd->add_option("--seed", cli->o.seed, "corpus seed")->capture_default_str();
  cmd->add_option("--calibration", cli->o.calibration, "GPTQ calibration windows from the val split")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--max-slots", cli->o.max_slots, "verb-tense slots to score (0: all)")->check(NonNegative);
  cmd->add_option("--ppl-tokens", cli->o.ppl_tokens, "perplexity over the test split's first N tokens (0: all)")
      ->check(NonNegative);
  cmd->add_option("--speed-reps", cli->o.speed_reps, "interleaved timing rounds (each: one timed run of every model; the first adds a warm-up)")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--ceilings", cli->ceilings, "01-roofline's ceilings.json (measured now when missing)")->capture_default_str();
  cmd->add_flag("--no-gpt2", [cli](int64_t) { cli->o.gpt2_shaped = false; }, "skip the GPT-2-small-shaped speed runs");
  cmd->add_flag("--no-plot", [cli](int64_t) { cli->plot = false; }, "skip the PNG figures");
  cmd->add_flag("--report-only", cli->report_only, "only redraw the figures and README of --out from its results.json");
  cmd->callback([cli] {
    cli->o.schemes = split_names(cli->o.schemes);
    cli->extra = split_names(cli->extra);
    // Unknown names fail here, before anything runs.
    for (const auto& list : {cli->o.schemes, cli->extra})
      for (const auto& n : list) (void)minigpt::quantize_options_for(n);
    run(*cli);
  });
}

}  // namespace mqcli
