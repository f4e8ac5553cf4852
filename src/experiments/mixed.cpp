// The mixed-precision study's units: what each measures, where its file lives, when it can be reused,
// and how the sensitivities become allocated maps.
#include "experiments/mixed.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <Eigen/Dense>
#include <fmt/core.h>

#include "experiments/allocate.h"
#include "experiments/energy_phases.h"
#include "experiments/evaluate.h"
#include "experiments/experiment_io.h"
#include "experiments/mixed_answers.h"
#include "experiments/mixed_detail.h"
#include "experiments/mixed_energy.h"
#include "experiments/sweep.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/path_name.h"
#include "minigpt/safetensors.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/calibrate.h"
#include "minigpt/checkpoint.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/throughput.h"

namespace mqexp {
namespace {

using namespace mixed_detail;

using json = nlohmann::json;
namespace fs = std::filesystem;




// Everything a run shares across units, built when the first unit of the shard needs measuring.
struct Context {
  explicit Context(CorpusBundle c) : corpus(std::move(c)) {}
  CorpusBundle corpus;
  std::unique_ptr<LoadedModel> reference;  // the fp32 checkpoint
  std::optional<ItemScores> reference_margins;  // slot margins and benchmark answers, computed for the first config unit
  std::vector<std::vector<int32_t>> calibration;
};

std::unique_ptr<Context> make_context(const MixedOptions& o, const MixedProgress& progress) {
  auto ctx = std::make_unique<Context>(load_corpus(o.lexicon, o.seed));
  ctx->reference = std::make_unique<LoadedModel>(load_checkpoint(o.model, &ctx->corpus.tok));
  const int n_ctx = ctx->reference->model.config().n_ctx;
  if (o.prompt_tokens + o.gen_tokens - 1 > n_ctx)
    throw mq::UsageError(fmt::format("--prompt-tokens {} + --gen-tokens {} - 1 exceed the model's context of {} tokens",
                                     o.prompt_tokens, o.gen_tokens, n_ctx));
  ctx->calibration = minigpt::calibration_windows(minigpt::encode_split(ctx->corpus.tok, ctx->corpus.corpus.val), o.calibration, n_ctx);
  (void)progress;
  return ctx;
}

const ItemScores& reference_margins(Context& ctx, const EvalLimits& limits) {
  if (!ctx.reference_margins) {
    ItemScores m;
    (void)evaluate_quality(ctx.reference->model, ctx.corpus.tok, ctx.corpus, limits, &m);
    ctx.reference_margins = std::move(m);
  }
  return *ctx.reference_margins;
}

std::unique_ptr<LoadedModel> quantized(const MixedOptions& o, Context& ctx, const minigpt::QuantPlan& plan, double& seconds) {
  auto lm = std::make_unique<LoadedModel>(load_checkpoint(o.model, &ctx.corpus.tok));
  const mq::Stopwatch t;
  static const std::vector<std::vector<int32_t>> none;
  minigpt::quantize_model(lm->model, plan, plan.needs_calibration() ? ctx.calibration : none);
  seconds = t.seconds();
  return lm;
}

std::string method_of(const minigpt::QuantPlan& p) {
  if (p.is_identity()) return "none";
  if (!p.rules.empty()) return "mixed";
  return p.base.gptq ? "gptq" : "rtn";
}

// EPI's "intelligence": the generalization benchmark's accuracy (its test half, the scored paradigms; the
// row's generalization.answers pair it with any other configuration's item by item), the in-distribution
// verb-tense accuracy and next-token top-1 beside it.
json accuracy_of(const Quality& q) {
  if (!q.generalization) throw mq::Error("mixed: the configuration was evaluated without the generalization benchmark");
  const Score& s = q.generalization->overall;
  const Interval w = wilson(s.correct, s.total);
  return {{"accuracy", s.accuracy()}, {"ci95", {w.low, w.high}}, {"items", s.total},
          {"verb_tense", q.verb_tense.accuracy()}, {"next_token_top1", q.divergence ? q.divergence->next_token_top1 : 0.0},
          {"definition", "generalization benchmark accuracy (test half, scored paradigms), Wilson 95% interval"}};
}

json measure_config(const MixedOptions& o, Context& ctx, const minigpt::QuantPlan& plan, const std::string& cache) {
  double qsec = 0;
  auto lm = quantized(o, ctx, plan, qsec);
  minigpt::Model& m = lm->model;
  const EvalLimits limits{.ppl_tokens = o.ppl_tokens, .max_slots = o.max_slots, .perplexity = false, .max_items = o.max_items};
  SchemeRow row;
  row.scheme = plan.id;
  row.storage_scheme = plan.rules.empty() ? plan.base.scheme.name() : "mixed";
  row.method = method_of(plan);
  row.quantize_seconds = qsec;
  ItemScores margins;
  const ItemScores& ref_margins = reference_margins(ctx, limits);
  row.quality = evaluate_quality(m, ctx.corpus.tok, ctx.corpus, limits, &margins);
  evaluate_divergence(ctx.reference->model, "fp32", &ref_margins, {{&m, &*row.quality, &margins}}, ctx.corpus.tok, ctx.corpus,
                      limits);
  const minigpt::ModelConfig& c = m.config();
  row.footprint = describe(m, c.n_ctx / 2 + c.n_ctx / 4);
  row.ok = true;
  // Speed and energy are the rounds' (mixed_energy.h); the model waits for them in the cache.
  if (!plan.is_identity() && !plan.phases) {
    fs::create_directories(fs::path(cache).parent_path());
    minigpt::save_quantized_model(cache, m, plan, lm->meta);
  }
  return {{"row", to_json(row)}, {"accuracy", accuracy_of(*row.quality)}};
}

json measure_sensitivity(const MixedOptions& o, Context& ctx, const minigpt::QuantPlan& plan) {
  double qsec = 0;
  auto lm = quantized(o, ctx, plan, qsec);
  const EvalLimits limits{.ppl_tokens = o.sensitivity_tokens, .perplexity = false, .benchmark = false};
  Quality q;
  evaluate_divergence(ctx.reference->model, "fp32", nullptr, {{&lm->model, &q, nullptr}}, ctx.corpus.tok, ctx.corpus, limits);
  const Divergence& d = *q.divergence;
  long long bytes = 0;
  for (const auto& li : lm->model.linears()) bytes += lm->model.projection(li.name).weight_bytes();
  return {{"kl_mean", d.kl_mean}, {"kl_low", d.kl_low}, {"kl_high", d.kl_high}, {"top1", d.top1}, {"ppl", q.ppl},
          {"dppl", d.dppl}, {"tokens", d.tokens}, {"bytes_linear", bytes}, {"quantize_seconds", qsec}};
}


}  // namespace

// The host names the node of a cluster; the CPU fields say whether two nodes are the same hardware.
json machine_brief() {
  const mq::CpuInfo c = mq::cpu_info();
  return {{"host", mq::host_name()}, {"cpu_model", c.model}, {"cpu_family", c.family}, {"cpu_model_number", c.model_number},
          {"cpu_stepping", c.stepping}, {"logical_cpus", c.logical_cpus}};
}

void validate(const MixedOptions& o) {
  if (o.rounds < 2 || o.rounds > 1000) throw mq::UsageError(fmt::format("--rounds {} is outside 2..1000 (a paired interval needs 2)", o.rounds));
  if (o.max_rounds != 0 && (o.max_rounds < o.rounds || o.max_rounds > 3000))
    throw mq::UsageError(fmt::format("--max-rounds {}: must be 0 (3 x --rounds) or in [--rounds ({}), 3000]", o.max_rounds, o.rounds));
  if (o.add_rounds < 1 || o.add_rounds > 1000) throw mq::UsageError(fmt::format("--add-rounds {}: must be in [1, 1000]", o.add_rounds));
  if (o.gens < 1 || o.gens > 100) throw mq::UsageError(fmt::format("--gens {} is outside 1..100", o.gens));
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw mq::UsageError(fmt::format("--shard {}/{}: expected i/n with 0 <= i < n", o.shard, o.shards));
  if (o.ppl_tokens < 0 || o.sensitivity_tokens < 0 || o.max_slots < 0 || o.max_items < 0)
    throw mq::UsageError("token, slot and item limits must be >= 0");
  if (o.calibration < 1 || o.calibration > 100000) throw mq::UsageError(fmt::format("--calibration {} is outside 1..100000", o.calibration));
  if (o.prompt_tokens < 1 || o.gen_tokens < 2) throw mq::UsageError("--prompt-tokens must be >= 1 and --gen-tokens >= 2");
  for (const auto& r : o.sensitivity_recipes) {
    const minigpt::LinearRecipe rec = minigpt::LinearRecipe::parse(r);
    if (!rec.scheme.is_integer()) throw mq::UsageError(fmt::format("sensitivity recipe {}: an integer scheme is expected", r));
  }
}

std::vector<minigpt::QuantPlan> load_mixed_configs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw mq::UsageError(fmt::format("--configs {}: not a folder", dir));
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw mq::UsageError(fmt::format("--configs {}: no *.json quant maps", dir));
  std::vector<minigpt::QuantPlan> plans;
  std::set<std::string> ids = {"fp32"};  // the baseline's id is taken
  for (const auto& f : files) {
    minigpt::QuantPlan p = minigpt::read_quant_map(f, f);  // its config_id checked there: it names the result file
    if (!ids.insert(p.id).second) throw mq::UsageError(fmt::format("{}: config_id \"{}\" is used by another configuration", f, p.id));
    plans.push_back(std::move(p));
  }
  return plans;
}

std::vector<MixedUnit> config_units(const MixedOptions& o) {
  std::vector<MixedUnit> u = {{"config", "fp32", study_plan(minigpt::QuantPlan::uniform("fp32"), o)}};
  for (auto& p : load_mixed_configs(o.configs_dir)) {
    const std::string id = p.id;
    u.push_back({"config", id, study_plan(std::move(p), o)});
  }
  return u;
}

std::vector<MixedUnit> energy_units(const MixedOptions& o, bool with_auto) {
  std::vector<MixedUnit> u = config_units(o);
  std::error_code ec;
  const std::string dir = o.out + "/configs_auto";
  if (with_auto && fs::is_directory(dir, ec))
    for (const auto& p : load_mixed_configs(dir)) u.push_back({"auto", p.id, study_plan(p, o)});
  return u;
}

std::vector<MixedUnit> sensitivity_units(const MixedOptions& o, const minigpt::ModelConfig& c) {
  std::vector<MixedUnit> u = {{"sensitivity", "base-fp16", study_plan(all_fp16("base-fp16"), o)}};
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k)
      for (const auto& r : o.sensitivity_recipes) {
        const auto kind = static_cast<minigpt::LinearKind>(k);
        const std::string id = fmt::format("L{}-{}-{}", l, minigpt::linear_kind_name(kind), r);
        minigpt::QuantPlan p = all_fp16(id);
        p.rules.push_back({{l}, kind, minigpt::LinearRecipe::parse(r)});
        u.push_back({"sensitivity", id, study_plan(std::move(p), o)});
      }
  for (int l = 0; l < c.n_layer; ++l)
    for (const auto& r : o.sensitivity_recipes) {
      const minigpt::LinearRecipe rec = minigpt::LinearRecipe::parse(r);
      if (rec.scheme.bits >= 8) continue;
      const std::string id = fmt::format("L{}-all-{}", l, r);
      minigpt::QuantPlan p = all_fp16(id);
      p.rules.push_back({{l}, std::nullopt, rec});
      u.push_back({"sensitivity", id, study_plan(std::move(p), o)});
    }
  return u;
}

std::string unit_key(const MixedOptions& o, const MixedUnit& u, const std::string& checkpoint_sha256) {
  json k = {{"kind", u.kind}, {"plan", u.plan.to_json()}, {"checkpoint", checkpoint_sha256}, {"seed", o.seed}};
  if (u.kind == "sensitivity") {
    k["tokens"] = o.sensitivity_tokens;
  } else {
    k["ppl_tokens"] = o.ppl_tokens;
    k["max_slots"] = o.max_slots;
    if (o.max_items != 0) k["max_items"] = o.max_items;  // keys of full runs stay those of the runs before the option
    k["quality_only"] = true;  // speed and energy moved to the rounds (mixed_energy.h)
    k["accuracy"] = "generalization benchmark, test half";  // what EPI divides by (the composite before it)
  }
  const std::string text = k.dump();
  return mq::sha256_hex(text.data(), text.size()).substr(0, 16);
}

minigpt::ModelConfig mixed_model_config(const MixedOptions& o) {
  return load_checkpoint(o.model).model.config();
}

UnitsRun run_mixed_units(const MixedOptions& o, const std::vector<MixedUnit>& units, const MixedProgress& progress) {
  const std::string sha = minigpt::content_sha256(o.model);
  // Every plan against the model's shape before any unit runs: a map naming layer 7 of a 4-layer model
  // stops the run here, not after an hour of other units.
  const minigpt::ModelConfig shape = mixed_model_config(o);
  for (const MixedUnit& u : units) u.plan.validate(shape);
  UnitsRun run;
  std::unique_ptr<Context> ctx;
  const mq::Stopwatch clock;
  const int mine = [&] {
    int n = 0;
    for (size_t i = 0; i < units.size(); ++i) n += static_cast<int>(i % static_cast<size_t>(o.shards)) == o.shard;
    return n;
  }();
  int seen = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const MixedUnit& u = units[i];
    if (static_cast<int>(i % static_cast<size_t>(o.shards)) != o.shard) {
      ++run.other_shards;
      continue;
    }
    ++seen;
    const std::string key = unit_key(o, u, sha);
    const std::string path = unit_file(runs_dir(o.out), u);
    if (find_unit(o, u, key)) {
      ++run.reused;
      continue;
    }
    if (!ctx) {
      progress("loading the corpus, the fp32 reference and the calibration windows");
      ctx = make_context(o, progress);
    }
    json j = {{"kind", u.kind}, {"id", u.id}, {"key", key}, {"plan", u.plan.to_json()}, {"date", mq::utc_now_iso8601()},
              {"machine", machine_brief()}, {"threads", omp_get_max_threads()}};
    const mq::Stopwatch t;
    try {
      j.update(u.kind == "sensitivity" ? measure_sensitivity(o, *ctx, u.plan) : measure_config(o, *ctx, u.plan, cached_model_path(o, u, key)));
      j["status"] = "ok";
      ++run.measured;
    } catch (const mq::UsageError&) {
      throw;  // a plan that cannot apply to this model is the configuration's mistake: stop, say which
    } catch (const std::exception& e) {
      j["status"] = "failed";
      j["error"] = e.what();
      ++run.failed;
    }
    j["seconds"] = t.seconds();
    fs::create_directories(fs::path(path).parent_path());
    write_json_atomic(path, j);
    std::string what;
    if (j["status"] != "ok") what = "FAILED: " + j["error"].get<std::string>();
    else if (u.kind == "sensitivity") what = fmt::format("KLD {:.3g}", j["kl_mean"].get<double>());
    else {
      const json& q = j["row"];
      what = fmt::format("PPL {:.3f}, KLD {:.3g}, verb tense {:.4f}, generalization accuracy {:.4f}", q["ppl"].get<double>(),
                         q["divergence"]["kl"]["mean"].get<double>(), q["verb_tense_accuracy"].get<double>(),
                         j["accuracy"]["accuracy"].get<double>());
    }
    progress(fmt::format("[{}/{} of shard {}/{}, {} s] {} {}: {}", seen, mine, o.shard, o.shards,
                         static_cast<long>(clock.seconds()), u.kind, u.id, what));
  }
  return run;
}

}  // namespace mqexp
