// `miniquant quantize`: quantize every Linear of a MiniGPT checkpoint (round-to-nearest or GPTQ)
// and write a quantized checkpoint that `miniquant eval` loads.
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "vocabulary.h"
#include "validators.h"
#include "verify_flag.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "minigpt/calibrate.h"
#include "minigpt/quant_plan.h"
#include "quant_map.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "experiments/workspace.h"

namespace mqcli {
namespace {

struct QuantizeOptions {
  std::string model = mqexp::kDefaultModel;
  std::string scheme = "int4-g64-gptq";
  std::string out;
  std::string lexicon = mqexp::kDefaultLexicon;
  uint64_t seed = kDefaultSeed;
  int calib = 128;
  double percdamp = 0.01;
  int block = 128;
  bool act_order = false;
  bool no_sequential = false;
  bool json = false;
  std::string quant_map;  // a quant map instead of --scheme
  bool out_given = false;  // --out on the command line (without it: report only, nothing saved)
};

void run(const QuantizeOptions& o, bool gptq_flags_given) {
  // The same plan the sweep builds for a scheme name ("<scheme>[-gptq[-act-order]]", embedding fp16), or a
  // quant map. --act-order is the name's "-act-order": one plan and one id whichever way it is asked for.
  std::string scheme = o.scheme;
  if (o.quant_map.empty() && o.act_order && !scheme.ends_with("-act-order")) {
    if (!minigpt::QuantPlan::uniform(scheme).base.gptq)
      throw mq::UsageError(fmt::format("quantize --act-order: scheme {} is round-to-nearest; act-order is a GPTQ setting "
                                       "(e.g. --scheme {}-gptq)", scheme, scheme));
    scheme += "-act-order";
  }
  minigpt::QuantPlan plan = plan_from_options(o.quant_map.empty() ? scheme : "", o.quant_map, "quantize");
  require_weight_only(plan, "quantize");
  if (o.quant_map.empty()) {
    plan.gptq.sequential = !o.no_sequential;
    plan.gptq.calibration_windows = o.calib;
    plan.gptq.options.percdamp = o.percdamp;
    plan.gptq.options.block = o.block;
  } else if (gptq_flags_given) {
    throw mq::UsageError(fmt::format("quantize --quant-map {}: the GPTQ settings come from the map's \"gptq\" object; drop "
                                     "--calibration / --percdamp / --block / --act-order / --no-sequential",
                                     o.quant_map));
  }
  const bool gptq = plan.any_gptq();
  const std::string& label = plan.id;

  // Before GPTQ, not after it; never an input (`--out` equal to `--model` would replace the fp32 model).
  if (o.out_given) mq::check_output_file({"--out", o.out}, {{"--model", o.model}, {"--quant-map", o.quant_map}});
  const mqexp::CorpusBundle c = mqexp::load_corpus(o.lexicon, o.seed);
  mqexp::LoadedModel lm = mqexp::load_checkpoint(o.model, &c.tok);
  const auto calib = mqexp::calibration_for(plan, c, lm.model.config().n_ctx);
  plan.validate(lm.model.config());
  const minigpt::ModelQuantReport rep = minigpt::quantize_model(lm.model, plan, calib);

  nlohmann::json per_layer = nlohmann::json::array();
  long long bytes = 0;
  for (const auto& l : rep.layers) {
    bytes += l.storage.total();
    nlohmann::json j = {{"name", l.name}, {"in", l.in}, {"out", l.out}, {"bytes", l.storage.total()}, {"seconds", l.seconds}};
    if (l.has_hessian) {
      j["hessian"] = {{"samples", l.hessian.samples},
                      {"trace", l.hessian.trace},
                      {"condition", std::isfinite(l.hessian.condition) ? nlohmann::json(l.hessian.condition) : nlohmann::json(nullptr)},
                      {"offdiag_fraction", l.hessian.offdiag_fraction},
                      {"dead_columns", l.hessian.dead_columns}};
      j["output_error_rtn"] = l.output_error_rtn;
      j["output_error_gptq"] = l.output_error;
    }
    if (!l.notes.empty()) j["notes"] = l.notes;  // solver notes; a transform's choice (AWQ's alpha, SmoothQuant's outliers)
    per_layer.push_back(j);
  }
  nlohmann::json info = {{"scheme", label},
                         {"storage_scheme", plan.rules.empty() ? plan.base.scheme.name() : std::string("mixed (see plan)")},
                         {"method", std::string(gptq ? "gptq" : "rtn") + (plan.base.transform.empty() ? "" : "+" + plan.base.transform)},
                         {"seed", o.seed}};
  if (!o.out.empty()) minigpt::save_quantized_model(o.out, lm.model, plan, lm.meta, info);
  info["plan"] = plan.to_json();
  info["linear_bytes"] = bytes;
  info["calibration_seconds"] = rep.calibration_seconds;
  info["total_seconds"] = rep.total_seconds;
  info["layers"] = per_layer;
  if (o.json) {
    fmt::print("{}\n", info.dump(2));
    return;
  }
  fmt::print("{} -> {} ({}), Linear bytes {}, {:.2f} s (calibration {:.2f} s)\n", o.model, o.out.empty() ? "(not saved)" : o.out,
             label, bytes, rep.total_seconds, rep.calibration_seconds);
  for (const auto& l : per_layer) {
    fmt::print("  {:<20} {:>5}x{:<5} {:>9} B {:6.2f} s", l["name"].get<std::string>(), l["out"].get<int>(), l["in"].get<int>(),
               l["bytes"].get<long long>(), l["seconds"].get<double>());
    if (l.contains("output_error_gptq"))
      fmt::print("  ||WX-QX||^2/n: RTN {:.4g}, GPTQ {:.4g} (x{:.3f})", l["output_error_rtn"].get<double>(),
                 l["output_error_gptq"].get<double>(),
                 l["output_error_gptq"].get<double>() / l["output_error_rtn"].get<double>());
    fmt::print("\n");
    if (l.contains("notes"))
      for (const auto& n : l["notes"]) fmt::print("      {}\n", n.get<std::string>());
  }
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand("quantize", "Quantize every Linear of a MiniGPT checkpoint (RTN or GPTQ)");
  add_model_option(cmd, o->model);
  cmd->add_option("--scheme", o->scheme,
                  "a scheme of the format table, with -gptq for GPTQ and -gptq-act-order for GPTQ with act-order (e.g. int4-g64-gptq)")
      ->capture_default_str();
  cmd->add_option("--quant-map", o->quant_map, "a quant map (JSON: default, layer_groups, tensors, gptq) instead of --scheme")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "where to write the quantized checkpoint");
  add_corpus_options(cmd, o->lexicon, o->seed);
  cmd->add_option("--calibration", o->calib, "GPTQ: calibration windows of n_ctx tokens from the val split")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--percdamp", o->percdamp, "GPTQ: damping as a fraction of mean diag(H)")
      ->check(Positive)->capture_default_str();
  cmd->add_option("--block", o->block, "GPTQ: lazy-update block size")->check(Positive)->capture_default_str();
  cmd->add_flag("--act-order", o->act_order, "GPTQ: columns by decreasing diag(H), static groups (the scheme's -act-order)");
  cmd->add_flag("--no-sequential", o->no_sequential, "GPTQ: calibrate every Linear on the fp32 model");
  cmd->add_flag("--json", o->json, "print the report as JSON");
  add_no_verify_flag(cmd);
  cmd->callback([o, cmd] {
    o->out_given = cmd->count("--out") > 0;
    const bool gptq_flags = cmd->count("--calibration") + cmd->count("--percdamp") + cmd->count("--block") +
                                cmd->count("--act-order") + cmd->count("--no-sequential") > 0;
    if (!o->quant_map.empty() && cmd->count("--scheme") > 0)
      throw mq::UsageError("quantize: give --scheme or --quant-map, not both");
    run(*o, gptq_flags);
  });
}

}  // namespace mqcli
