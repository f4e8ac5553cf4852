// `miniquant kquants`: llama.cpp's K quantizer beside ours on the shipped MiniGPT (experiments/29-kquants):
// results.json, manifest.json, the figure and the README's generated block. Skips with one line (exit 0) when
// the npm package that ships llama.cpp's libggml-base.so is not installed.
#include <omp.h>

#include <filesystem>
#include <string>

#include <fmt/core.h>

#include "commands.h"
#include "vocabulary.h"
#include "experiments/experiment_io.h"
#include "experiments/ggml_quant.h"
#include "experiments/kquants.h"
#include "experiments/progress.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/quant_plan.h"
#include "run_manifest.h"
#include "validators.h"

namespace mqcli {
namespace {

struct KquantsCli {
  mqexp::KquantsOptions o;
  std::string out = MQ_SOURCE_DIR "/experiments/29-kquants";
  bool plot = true;
  bool report_only = false;
  bool ggml_given = false;  // --ggml named: its absence is an error, not a skip
};

void write_report(const std::string& out, const nlohmann::json& results, const nlohmann::json& manifest, bool plot) {
  if (plot) mqexp::run_plot("kquants.py", {out + "/results.json", out + "/kld_vs_bits.png"});
  mqexp::update_generated_block(out + "/README.md", mqexp::kquants_readme_block(results, manifest),
                                "29-kquants: llama.cpp's K quantizer beside ours");
}

void run(KquantsCli& cli) {
  // A library the user named must be there (exit 2); only the default one may be absent (skipped, exit 0).
  if (cli.ggml_given) {
    try {
      mq::check_input_file(cli.o.ggml_library);
    } catch (const mq::Error& e) {
      throw mq::UsageError(fmt::format("--ggml: {}", e.what()));
    }
  }
  if (!cli.report_only)
    mq::check_folder_outputs("--out", cli.out, {"results.json", "manifest.json", "README.md", "kld_vs_bits.png"},
                             {{"--model", cli.o.model}});
  mq::check_writable_dir(cli.out);
  if (cli.report_only) {
    write_report(cli.out, mqexp::read_json(cli.out + "/results.json"), mqexp::read_json(cli.out + "/manifest.json"), cli.plot);
    fmt::print("redrew the figure and README of {} from its results.json\n", cli.out);
    return;
  }
  std::string why;
  if (!std::filesystem::exists(cli.o.ggml_library)) {
    fmt::print("kquants: skipped: {} is absent (bash scripts/setup_node.sh installs node-llama-cpp, which ships it)\n",
               cli.o.ggml_library);
    return;
  }
  const mq::Stopwatch clock;
  const std::string date = mq::utc_now_iso8601();
  mqexp::Progress progress(1);
  const mqexp::KquantsResults res = mqexp::run_kquants(cli.o, [&](int done, int total, const std::string& what) {
    progress.update(done, total, clock.seconds(), what);
  });
  const nlohmann::json results = mqexp::to_json(res);
  nlohmann::json manifest = run_manifest(date, cli.o.seed, cli.o.model);
  manifest["options"] = {{"types", cli.o.types}, {"calibration_windows", cli.o.calibration}, {"max_slots", cli.o.max_slots}, {"max_items", cli.o.max_items},
                         {"ppl_tokens", cli.o.ppl_tokens}};
  manifest["durations_s"] = {{"total", clock.seconds()}};
  mqexp::write_json_atomic(cli.out + "/results.json", results);
  mqexp::write_json_atomic(cli.out + "/manifest.json", manifest);
  write_report(cli.out, results, manifest, cli.plot);
  int failed = 0;
  for (const auto& r : res.rows) {
    if (!r.ok) {
      ++failed;
      fmt::print("{:<8} {:<18} failed: {}\n", r.type, r.quantizer, r.error);
      continue;
    }
    fmt::print("{:<8} {:<18} {:7.4f} bits/w  KLD {:.4g}  top-1 {:.4f}  PPL {:.3f}\n", r.type, r.quantizer, r.bits_per_weight,
               r.quality->divergence->kl_mean, r.quality->divergence->top1, r.quality->ppl);
  }
  fmt::print("wrote {}/{{results.json, manifest.json, README.md{}}} in {:.0f} s; dequantizer mismatches against ggml: {} of {} tensors\n",
             cli.out, cli.plot ? ", kld_vs_bits.png" : "", clock.seconds(), res.dequant_mismatches, res.dequant_tensors_checked);
  if (res.dequant_mismatches > 0) throw mq::Error("our dequantizer disagrees with ggml's on llama.cpp's blocks (see above)");
  if (failed > 0) throw mq::Error(fmt::format("{} of {} rows failed (recorded in results.json)", failed, res.rows.size()));
}

}  // namespace

void register_kquants(CLI::App& app) {
  auto cli = std::make_shared<KquantsCli>();
  cli->o.model = mqexp::kDefaultModel;
  cli->o.lexicon = mqexp::kDefaultLexicon;
  cli->o.seed = kDefaultSeed;
  cli->o.ggml_library = mqexp::default_ggml_library();
  CLI::App* cmd = app.add_subcommand("kquants", "llama.cpp's K quantizer beside ours: KLD, top-1, ΔPPL per K type and mix");
  add_model_option(cmd, cli->o.model);
  cmd->add_option("--out", cli->out, "output folder")->capture_default_str();
  add_old_spelling(cmd, "--types",
                   cmd->add_option("--schemes", cli->o.types, "K types and mixes, separated by commas or spaces")->delimiter(','),
                   cli->o.types);
  add_corpus_options(cmd, cli->o.lexicon, cli->o.seed);
  cmd->add_option("--calibration", cli->o.calibration, "importance / GPTQ calibration windows from the val split")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--max-slots", cli->o.max_slots, "verb-tense slots to score (0: all)")->check(NonNegative);
  cmd->add_option("--max-items", cli->o.max_items, "generalization benchmark items to score, spread over the paradigms (0: all)")
      ->check(NonNegative);
  cmd->add_option("--ppl-tokens", cli->o.ppl_tokens, "test tokens (0: all)")->check(NonNegative);
  cmd->add_option("--ggml", cli->o.ggml_library, "llama.cpp's libggml-base.so")->capture_default_str();
  cmd->add_flag("--no-plot", [cli](int64_t) { cli->plot = false; }, "skip the PNG figure");
  cmd->add_flag("--report-only", cli->report_only, "only redraw the figure and README of --out from its results.json");
  cmd->callback([cli, cmd] {
    cli->ggml_given = cmd->count("--ggml") > 0;
    if (cmd->count("--schemes") || cmd->count("--types")) cli->o.types = split_names_given(cli->o.types, "--schemes");
    for (const std::string& t : cli->o.types) {
      const minigpt::QuantPlan p = minigpt::QuantPlan::uniform(t);  // an unknown name fails here, before anything runs
      if (!p.base.scheme.is_kquant())
        throw mq::UsageError(fmt::format("kquants --schemes: {} is not a K type or K mix (q2_k .. q6_k, q3_k_s, q4_k_m, q5_k_m)", t));
    }
    run(*cli);
  });
}

}  // namespace mqcli
