// `miniquant calibration-draws`: each calibrated scheme quantized on several disjoint calibration draws and
// measured as the sweep measures it (experiments/26-quant-curve/calibration-draws): results.json, manifest.json
// and the README's generated block.
#include <omp.h>

#include <filesystem>
#include <string>

#include <fmt/core.h>

#include "commands.h"
#include "experiments/calibration_draws.h"
#include "experiments/experiment_io.h"
#include "experiments/progress.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/quant_plan.h"
#include "run_manifest.h"
#include "validators.h"
#include "vocabulary.h"

namespace mqcli {
namespace {

struct DrawsCli {
  mqexp::DrawsOptions o;
  std::string out = MQ_SOURCE_DIR "/experiments/26-quant-curve/calibration-draws";
  bool report_only = false;
};

const char* kTitle = "26-quant-curve / calibration-draws: the method or the calibration text?";

void write_report(const std::string& out, const mqexp::DrawsResults& r, const nlohmann::json& manifest) {
  mqexp::update_generated_block(out + "/README.md", mqexp::draws_readme_block(r, manifest), kTitle);
}

void run(DrawsCli& cli) {
  if (!cli.report_only) mq::check_folder_outputs("--out", cli.out, {"results.json", "manifest.json", "README.md"}, {{"--model", cli.o.model}});
  mq::check_writable_dir(cli.out);  // before the long run, not after it
  if (cli.report_only) {
    const std::string file = cli.out + "/results.json", man = cli.out + "/manifest.json";
    const mqexp::DrawsResults r = mqexp::draws_results_from_json(mqexp::read_json(file), file);
    const nlohmann::json manifest = mqexp::read_json(man);
    mq::interpret_json(man, [&] { write_report(cli.out, r, manifest); });
    fmt::print("redrew the README of {} from its results.json\n", cli.out);
    return;
  }
  const mq::Stopwatch clock;
  const std::string date = mq::utc_now_iso8601();
  mqexp::Progress progress(1);
  const mqexp::DrawsResults r = mqexp::run_calibration_draws(cli.o, [&](int done, int total, const std::string& what) {
    progress.update(done, total, clock.seconds(), what);
  });
  nlohmann::json manifest = run_manifest(date, cli.o.seed, cli.o.model);
  manifest["options"] = {{"schemes", cli.o.schemes}, {"draws", cli.o.draws}, {"calibration_windows", cli.o.calibration},
                         {"max_slots", cli.o.max_slots}, {"max_items", cli.o.max_items}, {"ppl_tokens", cli.o.ppl_tokens}};
  manifest["durations_s"] = {{"total", clock.seconds()}};
  mqexp::write_json_atomic(cli.out + "/results.json", mqexp::to_json(r));
  mqexp::write_json_atomic(cli.out + "/manifest.json", manifest);
  write_report(cli.out, r, manifest);
  for (const auto& d : r.rows)
    fmt::print("{:<26} {:>5} KLD {:.4g}  accuracy {:.4f}\n", d.row.scheme, d.calibrated ? fmt::format("d{}", d.draw) : "-",
               d.row.quality->divergence->kl_mean, d.row.quality->generalization->overall.accuracy());
  fmt::print("wrote {}/{{results.json, manifest.json, README.md}} in {:.0f} s\n", cli.out, clock.seconds());
}

}  // namespace

void register_calibration_draws(CLI::App& app) {
  auto cli = std::make_shared<DrawsCli>();
  cli->o.model = mqexp::kDefaultModel;
  cli->o.lexicon = mqexp::kDefaultLexicon;
  cli->o.seed = kDefaultSeed;
  CLI::App* cmd = app.add_subcommand(
      "calibration-draws", "Each calibrated scheme on several disjoint calibration draws: KLD and benchmark accuracy per draw");
  add_model_option(cmd, cli->o.model);
  cmd->add_option("--out", cli->out, "output folder")->capture_default_str();
  cmd->add_option("--schemes", cli->o.schemes, "schemes, separated by commas or spaces (default: the sweep's 18 core schemes)")
      ->delimiter(',');
  add_corpus_options(cmd, cli->o.lexicon, cli->o.seed);
  cmd->add_option("--draws", cli->o.draws, "calibration draws per calibrated scheme (draw 0 is the sweep's)")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--calibration", cli->o.calibration, "windows per draw (val split, n_ctx tokens each)")->check(Positive)->capture_default_str();
  cmd->add_option("--max-slots", cli->o.max_slots, "verb-tense slots to score (0: all)")->check(NonNegative);
  cmd->add_option("--max-items", cli->o.max_items, "generalization benchmark items to score, spread over the paradigms (0: all)")
      ->check(NonNegative);
  cmd->add_option("--ppl-tokens", cli->o.ppl_tokens, "test tokens (0: all)")->check(NonNegative);
  cmd->add_flag("--report-only", cli->report_only, "only redraw the README of --out from its results.json");
  cmd->callback([cli, cmd] {
    if (cmd->count("--schemes")) cli->o.schemes = split_names_given(cli->o.schemes, "--schemes");
    for (const std::string& s : cli->o.schemes) (void)minigpt::QuantPlan::uniform(s);  // an unknown name fails here
    run(*cli);
  });
}

}  // namespace mqcli
