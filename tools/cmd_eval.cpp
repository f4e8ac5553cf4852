// `miniquant eval`: test perplexity next to the corpus floor, verb-tense accuracy and margins, and with
// --reference the divergence measures against that (fp32) checkpoint; with --quant-map the fp32
// checkpoint is quantized by the map first, as `miniquant quantize --quant-map` would store it.
#include <optional>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "vocabulary.h"
#include "experiments/evaluate.h"
#include "experiments/intervals.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/timer.h"
#include "minigpt/quantize_model.h"
#include "quant_map.h"
#include "verify_flag.h"
#include "validators.h"

namespace mqcli {
namespace {

struct EvalOptions {
  std::string model = mqexp::kDefaultModel;
  std::string lexicon = mqexp::kDefaultLexicon;
  uint64_t seed = kDefaultSeed;
  std::string reference;  // fp32 checkpoint to measure KL divergence, top-1 agreement, ΔPPL, margin change against
  std::string quant_map;  // quantize the fp32 --model with this map before evaluating
  mqexp::EvalLimits limits;
  std::string benchmark = "test";
  bool json = false;
};

void run(const EvalOptions& o) {
  // --json prints these paths as JSON text: a name JSON cannot hold fails now, not after the evaluation.
  if (o.json)
    for (const mq::FlagPath& p : {mq::FlagPath{"--model", o.model}, mq::FlagPath{"--quant-map", o.quant_map}, mq::FlagPath{"--reference-model", o.reference}})
      mq::check_utf8_path(p);
  const mq::Stopwatch clock;
  // The map is read (and its errors reported) before the corpus and the model are.
  const std::optional<minigpt::QuantPlan> map =
      o.quant_map.empty() ? std::nullopt : std::optional<minigpt::QuantPlan>(read_quant_map(o.quant_map));
  const mqexp::CorpusBundle c = mqexp::load_corpus(o.lexicon, o.seed);
  mqexp::LoadedModel lm = mqexp::load_checkpoint(o.model, &c.tok);
  const double load_s = clock.seconds();
  double quantize_s = 0;
  if (map) {
    // Quantizing codes again would stack two roundings: a map starts from fp32 weights.
    if (!lm.plan.is_identity())
      throw mq::UsageError(fmt::format("eval --quant-map: {} is already quantized (plan {}); give the fp32 checkpoint",
                                       o.model, mq::clip_text(lm.plan.id)));
    const mq::Stopwatch tq;
    const auto calib = mqexp::calibration_for(*map, c, lm.model.config().n_ctx);
    (void)minigpt::quantize_model(lm.model, *map, calib);
    lm.plan = *map;
    quantize_s = tq.seconds();
  }
  // The very measurement the sweep makes of each of its rows.
  mqexp::EvalLimits limits = o.limits;
  limits.benchmark = o.benchmark != "none";
  limits.benchmark_dev = o.benchmark == "dev";
  limits.perplexity = o.reference.empty();  // with a reference, the divergence pass yields the same perplexity
  mqexp::ItemScores margins;
  mqexp::Quality q = mqexp::evaluate_quality(lm.model, lm.tok, c, limits, &margins);
  if (!o.reference.empty()) {
    const mqexp::LoadedModel ref = mqexp::load_checkpoint(o.reference, &c.tok);
    mqexp::ItemScores ref_margins;
    (void)mqexp::evaluate_quality(ref.model, ref.tok, c, limits, &ref_margins);
    mqexp::evaluate_divergence(ref.model, o.reference, &ref_margins, {{&lm.model, &q, &margins}}, c.tok, c, limits);
  }

  // What the slots cost without a model: the rule baselines on the same slots (no model involved).
  const std::vector<mqexp::BaselineRow> baselines =
      mqexp::baseline_rows(minigpt::rule_baselines(c.lex, c.corpus.train, c.corpus.test, o.limits.max_slots));

  mqexp::SchemeRow row;
  row.scheme = lm.plan.id;
  row.ok = true;
  row.quality = q;
  nlohmann::json out = mqexp::to_json(row);
  // Only the quality fields: the row's footprint and speed are the sweep's to measure.
  for (const char* k : {"bytes", "bytes_linear", "bytes_embedding", "bytes_other", "linear_weights", "bits_per_weight",
                        "embedding_format", "decode_traffic", "on_pareto_frontier", "status", "quantize_seconds"})
    out.erase(k);
  out["model"] = o.model;
  out["seed"] = o.seed;
  out["plan"] = lm.plan.to_json();
  if (map) out["quant_map"] = o.quant_map;
  out["ppl_over_floor"] = q.ppl / q.ppl_floor;
  out["timing_s"] = {{"corpus_and_load", load_s}, {"perplexity", q.perplexity_seconds}, {"verb_tense", q.verb_tense_seconds}};
  if (q.generalization) out["timing_s"]["generalization"] = q.generalization->seconds;
  if (map) out["timing_s"]["quantize"] = quantize_s;
  if (q.divergence) out["timing_s"]["divergence"] = q.divergence->seconds;
  out["baselines"] = nlohmann::json::array();
  for (const auto& b : baselines) out["baselines"].push_back(mqexp::to_json(b));
  if (o.json) {
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("model {} (plan {}{}, seed {})\n", o.model, lm.plan.id, map ? ", quantized now from --quant-map " + o.quant_map : "",
             o.seed);
  fmt::print("test perplexity {:.3f}  (floor {:.3f}, ratio {:.3f}) over {} tokens, window {}, stride {}  [{:.1f} s]\n", q.ppl,
             q.ppl_floor, q.ppl / q.ppl_floor, q.test_tokens, q.window, q.stride, q.perplexity_seconds);
  fmt::print("verb-tense accuracy {:.4f} ({}/{})  [{:.1f} s]\n", q.verb_tense.accuracy(), q.verb_tense.correct,
             q.verb_tense.total, q.verb_tense_seconds);
  const auto wil = [](const mqexp::Score& s) { return mqexp::wilson(s.correct, s.total); };
  fmt::print("  Wilson 95% [{:.4f}, {:.4f}]; slot margin median {:.2f}, 1st percentile {:.2f} nats\n", wil(q.verb_tense).low,
             wil(q.verb_tense).high, q.margin.median, q.margin.p1);
  for (const auto& [name, sc] : q.by_construction) {
    const mqexp::MarginStats& m = q.margin_by_construction.at(name);
    fmt::print("  {:<15} {:.4f} ({}/{}) [{:.4f}, {:.4f}]  margin median {:.2f} p1 {:.2f}\n", name, sc.accuracy(), sc.correct,
               sc.total, wil(sc).low, wil(sc).high, m.median, m.p1);
  }
  for (const auto& b : baselines) {
    std::string line = fmt::format("  rule {:<14} {:.4f} (no model):", b.name, b.overall.accuracy());
    for (const auto& [name, sc] : b.by_construction) line += fmt::format(" {} {:.3f}", name, sc.accuracy());
    fmt::print("{}\n", line);
  }
  if (const auto& d = q.divergence) {
    fmt::print("against {} over {} tokens ({} windows)  [{:.1f} s]\n", d->reference, d->tokens, d->windows, d->seconds);
    fmt::print("  KL(ref || model) mean {:.3g} [{:.3g}, {:.3g}], median {:.3g}, p99 {:.3g}, max {:.3g} nats\n", d->kl_mean,
               d->kl_low, d->kl_high, d->kl_median, d->kl_p99, d->kl_max);
    fmt::print("  top-1 agreement {:.4f}\n", d->top1);
    fmt::print("  PPL {:.3f} vs reference {:.3f}: delta {:+.4f} [{:+.4f}, {:+.4f}] (paired per token, clustered by window)\n",
               q.ppl, d->ppl_reference, d->dppl, d->dppl_low, d->dppl_high);
    fmt::print("  slot margin change {:+.4f} [{:+.4f}, {:+.4f}] nats over {} slots; flipped {} to wrong, {} to right\n",
               d->dmargin_mean, d->dmargin_low, d->dmargin_high, d->margin_slots, d->flipped_to_wrong, d->flipped_to_right);
  }
  if (q.skipped_unknown_form + q.skipped_too_long > 0)
    fmt::print("  skipped: {} with a form outside the vocabulary, {} too long for the context\n", q.skipped_unknown_form,
               q.skipped_too_long);
  if (const auto& g = q.generalization) {
    const auto* d = q.divergence ? &*q.divergence : nullptr;
    fmt::print("generalization benchmark ({} half) {:.4f} ({}/{}) [{:.4f}, {:.4f}]  margin median {:.2f}  [{:.1f} s]\n", g->split,
               g->overall.accuracy(), g->overall.correct, g->overall.total, wil(g->overall).low, wil(g->overall).high,
               g->margin.median, g->seconds);
    const auto change = [](const mqexp::PairedDifference& p) {
      return fmt::format("  vs reference {:+.4f} [{:+.4f}, {:+.4f}] McNemar p {:.2g}", p.diff, p.low, p.high, p.p_value);
    };
    if (d && d->generalization_change) fmt::print("  {}\n", change(*d->generalization_change));
    fmt::print("  (the scored paradigms; the diagnostics together {:.4f} ({}/{}), never averaged in)\n", g->diagnostic.accuracy(),
               g->diagnostic.correct, g->diagnostic.total);
    for (const auto& [name, sc] : g->by_paradigm) {
      std::string line = fmt::format("  {:<16} {:.4f} ({}/{}) [{:.4f}, {:.4f}]", name, sc.accuracy(), sc.correct, sc.total,
                                     wil(sc).low, wil(sc).high);
      if (d && d->generalization_change_by_paradigm.contains(name)) line += change(d->generalization_change_by_paradigm.at(name));
      fmt::print("{}\n", line);
    }
    if (g->skipped_unknown_form + g->skipped_too_long > 0)
      fmt::print("  skipped: {} with a form outside the vocabulary, {} too long for the context\n", g->skipped_unknown_form,
                 g->skipped_too_long);
  }
}

}  // namespace

void register_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Test perplexity (with the corpus floor) and verb-tense accuracy of a model");
  add_model_option(cmd, o->model, "checkpoint (safetensors)");
  add_old_spelling(cmd, "--reference",
                   cmd->add_option("--reference-model", o->reference,
                                   "fp32 checkpoint to compare with: KL divergence, top-1 agreement, delta PPL, slot margin change")
                       ->check(CLI::ExistingFile),
                   o->reference)
      ->check(CLI::ExistingFile);
  cmd->add_option("--quant-map", o->quant_map,
                  "quantize the fp32 --model with this quant map first (GPTQ calibration windows from the map, val split)")
      ->check(CLI::ExistingFile);
  add_corpus_options(cmd, o->lexicon, o->seed);
  cmd->add_option("--window", o->limits.window, "perplexity context window (default: n_ctx)")->check(Positive);
  cmd->add_option("--stride", o->limits.stride, "distance between windows (default: window / 2)")->check(Positive);
  cmd->add_option("--max-slots", o->limits.max_slots, "use at most this many verb slots (default: all)")->check(NonNegative);
  cmd->add_option("--ppl-tokens", o->limits.ppl_tokens, "perplexity over the test split's first N tokens (default: all)")
      ->check(NonNegative);
  cmd->add_option("--benchmark", o->benchmark, "generalization benchmark half: test (every report), dev (for building it), none")
      ->check(CLI::IsMember({"test", "dev", "none"}))
      ->capture_default_str();
  cmd->add_option("--max-items", o->limits.max_items, "use at most this many benchmark items, spread over the paradigms (default: all)")
      ->check(NonNegative);
  cmd->add_flag("--json", o->json, "print JSON");
  add_no_verify_flag(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace mqcli
