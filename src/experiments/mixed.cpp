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
#include "minigpt/throughput.h"

namespace mqexp {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string runs_dir(const std::string& out) { return out + "/runs"; }
// The id (a config_id, or made here) names the file: checked again where it becomes a path.
std::string unit_file(const std::string& dir, const MixedUnit& u) {
  mq::check_path_name(u.kind, "unit kind");
  mq::check_path_name(u.id, "unit id");
  return dir + "/" + u.kind + "/" + u.id + ".json";
}

minigpt::QuantPlan study_plan(minigpt::QuantPlan p, const MixedOptions& o) {
  p.gptq.calibration_windows = o.calibration;
  return p;
}

// fp16 everywhere: the base every sensitivity unit changes one Linear (or layer) of.
minigpt::QuantPlan all_fp16(const std::string& id) {
  minigpt::QuantPlan p = minigpt::QuantPlan::uniform("fp16");
  p.id = id;
  return p;
}

// Median and extremes of repeated measurements, with the values.
json stat_json(std::vector<double> v) {
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  const double med = n == 0 ? 0.0 : n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  return {{"median", med}, {"low", n ? s.front() : 0.0}, {"high", n ? s.back() : 0.0}, {"values", v}};
}

// What a unit file's machine field says: enough to tell two machines apart when shards are merged.
json machine_brief() {
  const mq::CpuInfo c = mq::cpu_info();
  return {{"cpu_model", c.model}, {"cpu_family", c.family}, {"cpu_model_number", c.model_number},
          {"cpu_stepping", c.stepping}, {"logical_cpus", c.logical_cpus}};
}

// Everything a run shares across units, built when the first unit of the shard needs measuring.
struct Context {
  explicit Context(CorpusBundle c) : corpus(std::move(c)) {}
  CorpusBundle corpus;
  std::unique_ptr<LoadedModel> reference;  // the fp32 checkpoint
  std::optional<std::vector<double>> reference_margins;  // verb-tense margins, computed for the first config unit
  std::vector<std::vector<int32_t>> calibration;
  mq::energy::Selection meter;
  std::vector<std::vector<int32_t>> prompts;  // per repetition, plus one warm-up prompt first
};

std::unique_ptr<Context> make_context(const MixedOptions& o, const MixedProgress& progress) {
  auto ctx = std::make_unique<Context>(load_corpus(o.lexicon, o.seed));
  ctx->reference = std::make_unique<LoadedModel>(load_checkpoint(o.model, &ctx->corpus.tok));
  const int n_ctx = ctx->reference->model.config().n_ctx;
  if (o.prompt_tokens + o.gen_tokens - 1 > n_ctx)
    throw mq::UsageError(fmt::format("--prompt-tokens {} + --gen-tokens {} - 1 exceed the model's context of {} tokens",
                                     o.prompt_tokens, o.gen_tokens, n_ctx));
  ctx->calibration = minigpt::calibration_windows(minigpt::encode_split(ctx->corpus.tok, ctx->corpus.corpus.val), o.calibration, n_ctx);
  ctx->meter = mq::energy::select_meter(o.meter, o.roots);
  if (!ctx->meter.warning.empty()) progress("WARNING: " + ctx->meter.warning);
  const std::vector<int32_t> test = minigpt::encode_split(ctx->corpus.tok, ctx->corpus.corpus.test);
  for (int k = 0; k <= o.reps; ++k) {
    const size_t at = static_cast<size_t>(k) * static_cast<size_t>(o.prompt_tokens);
    if (at + static_cast<size_t>(o.prompt_tokens) > test.size()) throw mq::UsageError("the test split is too short for the energy prompts");
    ctx->prompts.emplace_back(test.begin() + static_cast<long>(at), test.begin() + static_cast<long>(at + static_cast<size_t>(o.prompt_tokens)));
  }
  return ctx;
}

const std::vector<double>& reference_margins(Context& ctx, const EvalLimits& limits) {
  if (!ctx.reference_margins) {
    std::vector<double> m;
    (void)evaluate_quality(ctx.reference->model, ctx.corpus.tok, ctx.corpus.corpus.test, limits, &m);
    ctx.reference_margins = std::move(m);
  }
  return *ctx.reference_margins;
}

std::unique_ptr<LoadedModel> quantized(const MixedOptions& o, Context& ctx, const minigpt::QuantPlan& plan, double& seconds) {
  auto lm = std::make_unique<LoadedModel>(load_checkpoint(o.model, &ctx.corpus.tok));
  const mq::Stopwatch t;
  static const std::vector<std::vector<int32_t>> none;
  minigpt::quantize_model(lm->model, plan, plan.any_gptq() ? ctx.calibration : none);
  seconds = t.seconds();
  return lm;
}

std::string method_of(const minigpt::QuantPlan& p) {
  if (p.is_identity()) return "none";
  if (!p.rules.empty()) return "mixed";
  return p.base.gptq ? "gptq" : "rtn";
}

json measure_config(const MixedOptions& o, Context& ctx, const minigpt::QuantPlan& plan) {
  double qsec = 0;
  auto lm = quantized(o, ctx, plan, qsec);
  minigpt::Model& m = lm->model;
  const EvalLimits limits{.ppl_tokens = o.ppl_tokens, .max_slots = o.max_slots, .perplexity = false};
  SchemeRow row;
  row.scheme = plan.id;
  row.storage_scheme = plan.rules.empty() ? plan.base.scheme.name() : "mixed";
  row.method = method_of(plan);
  row.quantize_seconds = qsec;
  std::vector<double> margins;
  const std::vector<double>& ref_margins = reference_margins(ctx, limits);
  row.quality = evaluate_quality(m, ctx.corpus.tok, ctx.corpus.corpus.test, limits, &margins);
  evaluate_divergence(ctx.reference->model, "fp32", ref_margins, {{&m, &*row.quality, &margins}}, ctx.corpus.tok,
                      ctx.corpus.corpus.test, limits);
  const minigpt::ModelConfig& c = m.config();
  row.footprint = describe(m, c.n_ctx / 2 + c.n_ctx / 4);
  row.ok = true;

  // Speed and energy: `reps` repetitions, each one sweep-style speed measurement (decode from half the
  // context to the full one, prefill of half the context) and one measured generation; one of each first
  // as warm-up.
  WorkContext wc;
  wc.caches = mq::cpu_info().caches;
  wc.threads = omp_get_max_threads();
  mq::energy::Meter& meter = *ctx.meter.meter;
  minigpt::SpeedOptions so;
  so.prompt = c.n_ctx / 2;
  so.decode = c.n_ctx / 2;
  so.reps = 1;
  const mq::LoadAverage before = mq::load_average();
  (void)run_generation(m, meter, ctx.prompts[0], o.gen_tokens, &ctx.corpus.tok, wc);
  std::vector<double> dec_s, pre_s, jt, jp, jd, jpost, watts, tps;
  for (int k = 0; k < o.reps; ++k) {
    so.warmup = k == 0;
    const minigpt::Speed sp = minigpt::measure_speed(m, so);
    dec_s.push_back(sp.decode.median);
    pre_s.push_back(sp.prefill.median);
    const RunResult r = run_generation(m, meter, ctx.prompts[static_cast<size_t>(k) + 1], o.gen_tokens, &ctx.corpus.tok, wc);
    jt.push_back(r.total.joules_per_token());
    jp.push_back(r.prefill.joules_per_token());
    jd.push_back(r.decode.joules_per_token());
    jpost.push_back(r.post.joules_per_token());
    watts.push_back(r.total.watts());
    tps.push_back(r.total.tokens_per_s());
  }
  const mq::LoadAverage after = mq::load_average();
  Speed s;
  s.threads = wc.threads;
  s.decode_tokens_per_s = RateStat::of(mq::summarize(dec_s, 1), 1.0);
  s.prefill_tokens_per_s = RateStat::of(mq::summarize(pre_s, 1), so.prompt);
  s.decode_tokens_per_rep = so.decode;
  s.prefill_prompt_tokens = so.prompt;
  const double dtps = s.decode_tokens_per_s.median;
  s.decode_gflops = row.footprint.decode.flops * dtps / 1e9;
  s.decode_gbps = row.footprint.decode.total * dtps / 1e9;
  s.load_before = before.one;
  s.load_after = after.one;
  const double limit = static_cast<double>(mq::cpu_info().logical_cpus) + 0.5;
  s.busy = mq::machine_busy(before, limit) || mq::machine_busy(after, limit);
  row.speed = s;

  json energy = {{"source", meter.source()},
                 {"measured", meter.measured()},
                 {"prompt_tokens", o.prompt_tokens},
                 {"gen_tokens", o.gen_tokens},
                 {"joules_per_token", {{"total", stat_json(jt)}, {"prefill", stat_json(jp)}, {"decode", stat_json(jd)}, {"post", stat_json(jpost)}}},
                 {"watts", stat_json(watts)},
                 {"generation_tokens_per_s", stat_json(tps)}};
  return {{"row", to_json(row)}, {"energy", energy}};
}

json measure_sensitivity(const MixedOptions& o, Context& ctx, const minigpt::QuantPlan& plan) {
  double qsec = 0;
  auto lm = quantized(o, ctx, plan, qsec);
  const EvalLimits limits{.ppl_tokens = o.sensitivity_tokens, .perplexity = false};
  Quality q;
  evaluate_divergence(ctx.reference->model, "fp32", {}, {{&lm->model, &q, nullptr}}, ctx.corpus.tok, ctx.corpus.corpus.test, limits);
  const Divergence& d = *q.divergence;
  long long bytes = 0;
  for (const auto& li : lm->model.linears()) bytes += lm->model.projection(li.name).weight_bytes();
  return {{"kl_mean", d.kl_mean}, {"kl_low", d.kl_low}, {"kl_high", d.kl_high}, {"top1", d.top1}, {"ppl", q.ppl},
          {"dppl", d.dppl}, {"tokens", d.tokens}, {"bytes_linear", bytes}, {"quantize_seconds", qsec}};
}

// A unit's file when it is there, complete and made for the same plan and options.
std::optional<json> finished(const std::string& path, const std::string& key) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    json j = read_json(path);
    if (j.is_object() && j.value("key", json()) == key && j.value("status", json()) == "ok") return j;
  } catch (const std::exception&) {
    // A truncated or foreign file (not JSON, not an object, or too large) is measured again (writes are
    // atomic, so this is not ours).
  }
  return std::nullopt;
}

std::vector<std::string> all_runs_dirs(const MixedOptions& o) {
  std::vector<std::string> d = {runs_dir(o.out)};
  for (const auto& e : o.extra_runs) d.push_back(e);
  return d;
}

// The unit's up-to-date file from out/runs or any extra runs folder.
std::optional<json> find_unit(const MixedOptions& o, const MixedUnit& u, const std::string& key) {
  for (const auto& dir : all_runs_dirs(o))
    if (auto j = finished(unit_file(dir, u), key)) return j;
  return std::nullopt;
}

struct Sens {
  json base;
  std::map<std::string, json> by_id;
};

}  // namespace

void validate(const MixedOptions& o) {
  if (o.reps < 1 || o.reps > 100) throw mq::UsageError(fmt::format("--reps {} is outside 1..100", o.reps));
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw mq::UsageError(fmt::format("--shard {}/{}: expected i/n with 0 <= i < n", o.shard, o.shards));
  if (o.ppl_tokens < 0 || o.sensitivity_tokens < 0 || o.max_slots < 0) throw mq::UsageError("token and slot limits must be >= 0");
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
    k["reps"] = o.reps;
    k["prompt_tokens"] = o.prompt_tokens;
    k["gen_tokens"] = o.gen_tokens;
    k["meter"] = o.meter;
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
      j.update(u.kind == "sensitivity" ? measure_sensitivity(o, *ctx, u.plan) : measure_config(o, *ctx, u.plan));
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
      what = fmt::format("PPL {:.3f}, KLD {:.3g}, verb tense {:.4f}, {:.3g} mJ/token", q["ppl"].get<double>(),
                         q["divergence"]["kl"]["mean"].get<double>(), q["verb_tense_accuracy"].get<double>(),
                         1e3 * j["energy"]["joules_per_token"]["total"]["median"].get<double>());
    }
    progress(fmt::format("[{}/{} of shard {}/{}, {} s] {} {}: {}", seen, mine, o.shard, o.shards,
                         static_cast<long>(clock.seconds()), u.kind, u.id, what));
  }
  return run;
}

namespace {

Sens read_sensitivities(const MixedOptions& o, const minigpt::ModelConfig& c) {
  const std::string sha = minigpt::content_sha256(o.model);
  Sens s;
  int missing = 0;
  for (const MixedUnit& u : sensitivity_units(o, c)) {
    auto j = find_unit(o, u, unit_key(o, u, sha));
    if (!j) {
      ++missing;
      continue;
    }
    if (u.id == "base-fp16") s.base = *j;
    s.by_id[u.id] = *j;
  }
  if (missing > 0)
    throw mq::Error(fmt::format("allocation: {} sensitivity units are not measured yet (run `miniquant mixed run` first, every shard)", missing));
  return s;
}

// Stored bytes of every Linear of a model of shape `c` under `plan` (fp32 Linears: 4 bytes a weight).
long long plan_linear_bytes(const minigpt::QuantPlan& plan, const minigpt::ModelConfig& c) {
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[minigpt::kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  long long total = 0;
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k) {
      const minigpt::LinearRecipe r = plan.recipe_for(l, static_cast<minigpt::LinearKind>(k));
      total += mq::storage_of(r.scheme, shape[k].first, shape[k].second).total();
    }
  return total;
}

struct AllocationSetup {
  std::vector<AllocItem> items;
  std::vector<std::pair<int, minigpt::LinearKind>> where;  // per item
  double base_kl = 0;
};

AllocationSetup allocation_setup(const MixedOptions& o, const minigpt::ModelConfig& c, const Sens& s) {
  AllocationSetup a;
  a.base_kl = s.base.at("kl_mean").get<double>();
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[minigpt::kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k) {
      const auto kind = static_cast<minigpt::LinearKind>(k);
      AllocItem it{fmt::format("L{}-{}", l, minigpt::linear_kind_name(kind)), {}};
      it.options.push_back({"fp16", mq::storage_of(mq::Scheme::fp16(), shape[k].first, shape[k].second).total(), 0.0});
      for (const auto& r : o.sensitivity_recipes) {
        const json& j = s.by_id.at(fmt::format("L{}-{}-{}", l, minigpt::linear_kind_name(kind), r));
        // The KLD this Linear adds alone over the all-fp16 model; taken as additive across Linears.
        it.options.push_back({r, mq::storage_of(minigpt::LinearRecipe::parse(r).scheme, shape[k].first, shape[k].second).total(),
                              j.at("kl_mean").get<double>() - a.base_kl});
      }
      a.items.push_back(std::move(it));
      a.where.emplace_back(l, kind);
    }
  return a;
}

minigpt::QuantPlan plan_of(const AllocationSetup& a, const Allocation& al, const std::string& id, const MixedOptions& o) {
  minigpt::QuantPlan p = all_fp16(id);
  for (size_t i = 0; i < a.items.size(); ++i) {
    const std::string& r = a.items[i].options[static_cast<size_t>(al.choice[i])].recipe;
    if (r == "fp16") continue;
    p.rules.push_back({{a.where[i].first}, a.where[i].second, minigpt::LinearRecipe::parse(r)});
  }
  return study_plan(p, o);
}

// Weights of each recipe in a plan (recipe name -> Linear weights stored that way).
std::map<std::string, double> weights_by_recipe(const minigpt::QuantPlan& plan, const minigpt::ModelConfig& c) {
  const int d = c.d_model, f = c.d_ff;
  const std::pair<int, int> shape[minigpt::kLinearKinds] = {{3 * d, d}, {d, d}, {f, d}, {d, f}};
  std::map<std::string, double> w;
  for (int l = 0; l < c.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k)
      w[plan.recipe_for(l, static_cast<minigpt::LinearKind>(k)).name()] += static_cast<double>(shape[k].first) * shape[k].second;
  return w;
}

std::optional<EnergyFit> fit_energy(const MixedOptions& o, const minigpt::ModelConfig& c, const std::string& sha) {
  std::vector<std::map<std::string, double>> xs;
  std::vector<double> ys;
  for (const MixedUnit& u : config_units(o)) {
    auto j = find_unit(o, u, unit_key(o, u, sha));
    if (!j) continue;
    xs.push_back(weights_by_recipe(u.plan, c));
    ys.push_back((*j)["energy"]["joules_per_token"]["total"]["median"].get<double>());
  }
  return fit_energy_per_weight(xs, ys);
}

}  // namespace

std::optional<EnergyFit> fit_energy_per_weight(const std::vector<std::map<std::string, double>>& weights,
                                               const std::vector<double>& joules) {
  if (weights.size() != joules.size()) throw mq::Error("fit_energy_per_weight: one weight map per measurement");
  std::vector<std::string> recipes;
  for (const auto& x : weights)
    for (const auto& [r, w] : x)
      if (std::find(recipes.begin(), recipes.end(), r) == recipes.end()) recipes.push_back(r);
  const int n = static_cast<int>(joules.size()), p = static_cast<int>(recipes.size());
  if (p == 0 || n < p + 2) return std::nullopt;  // fewer measurements than prices + 2: no residual to judge the fit by
  Eigen::MatrixXd A(n, p);
  Eigen::VectorXd y(n);
  const double scale = 1e-6;  // weights in millions keeps the columns near the joules' scale
  for (int i = 0; i < n; ++i) {
    const auto& x = weights[static_cast<size_t>(i)];
    for (int k = 0; k < p; ++k) {
      const auto it = x.find(recipes[static_cast<size_t>(k)]);
      A(i, k) = it == x.end() ? 0.0 : it->second * scale;
    }
    y(i) = joules[static_cast<size_t>(i)];
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
  if (qr.rank() < p) return std::nullopt;  // two recipes always appear in the same proportion: no separate prices
  const Eigen::VectorXd b = qr.solve(y);
  EnergyFit f;
  f.configs = n;
  for (int k = 0; k < p; ++k) f.joules_per_weight[recipes[static_cast<size_t>(k)]] = b(k) * scale;
  const Eigen::VectorXd r = y - A * b;
  const double ss = (y.array() - y.mean()).square().sum();
  f.r2 = ss > 0 ? 1.0 - r.squaredNorm() / ss : 1.0;
  f.max_abs_residual = r.cwiseAbs().maxCoeff();
  return f;
}

nlohmann::json EnergyFit::to_json() const {
  return {{"joules_per_weight", joules_per_weight}, {"r2", r2}, {"max_abs_residual_joules", max_abs_residual}, {"configs", configs},
          {"model", "J/token = sum over recipes of joules_per_weight x Linear weights stored in it, least squares over the "
                    "measured configurations (every map stores all Linears, so the per-token overhead is spread over the "
                    "prices); an estimate that prices the allocation, not a measurement"}};
}

std::vector<MixedUnit> allocate_mixed(const MixedOptions& o) {
  const minigpt::ModelConfig c = mixed_model_config(o);
  const Sens s = read_sensitivities(o, c);
  const AllocationSetup a = allocation_setup(o, c, s);
  const std::vector<Allocation> frontier = allocation_frontier(a.items);
  const long long fp16_bytes = plan_linear_bytes(all_fp16("x"), c);

  // Budgets: every hand-written configuration's Linear bytes (the comparison at equal budgets), and eight
  // points spread evenly over the frontier's byte range (the EPI search). Equal allocations are measured once.
  std::vector<std::pair<std::string, long long>> budgets;  // (why, bytes)
  for (const MixedUnit& u : config_units(o))
    if (!u.plan.is_identity()) budgets.emplace_back("bytes of " + u.id, plan_linear_bytes(u.plan, c));
  const long long lo = frontier.front().bytes, hi = std::min(frontier.back().bytes, fp16_bytes);
  for (int k = 0; k < 8; ++k) budgets.emplace_back(fmt::format("EPI search point {} of 8", k + 1), lo + (hi - lo) * k / 7);

  std::vector<MixedUnit> units;
  std::map<std::vector<int>, size_t> seen;
  json maps = json::array();
  const std::string dir = o.out + "/configs_auto";
  fs::create_directories(dir);
  for (const auto& [why, budget] : budgets) {
    const auto best = best_within(frontier, budget);
    if (!best) {
      maps.push_back({{"budget", why}, {"budget_linear_bytes", budget}, {"config_id", nullptr}, {"note", "no allocation fits"}});
      continue;
    }
    std::string id;
    if (auto it = seen.find(best->choice); it != seen.end()) {
      id = units[it->second].id;
    } else {
      id = fmt::format("auto-{}k", (best->bytes + 512) / 1024);
      seen[best->choice] = units.size();
      minigpt::QuantPlan p = plan_of(a, *best, id, o);
      write_json_atomic(dir + "/" + id + ".json", p.to_json());
      units.push_back({"auto", id, std::move(p)});
    }
    maps.push_back({{"budget", why}, {"budget_linear_bytes", budget}, {"config_id", id}, {"linear_bytes", best->bytes},
                    {"predicted_dkl", best->cost}, {"predicted_kl", best->cost + a.base_kl}});
  }
  json fr = json::array();
  for (const Allocation& al : frontier) fr.push_back({{"linear_bytes", al.bytes}, {"predicted_kl", al.cost + a.base_kl}});
  json alloc = {{"base_kl_fp16", a.base_kl}, {"frontier", fr}, {"maps", maps}, {"options", o.sensitivity_recipes},
                {"method", "exact multiple-choice knapsack over additive per-Linear KLD"}};

  // Energy budgets: the same knapsack with each option's resource its fitted joules per token (in nJ, an
  // integer), budgets the measured J/token of every uniform configuration. Needs the configurations measured.
  const std::string sha = minigpt::content_sha256(o.model);
  if (const auto fit = fit_energy(o, c, sha)) {
    alloc["energy_fit"] = fit->to_json();
    AllocationSetup e = a;
    bool priced = true;
    for (size_t i = 0; i < e.items.size(); ++i)
      for (AllocOption& opt : e.items[i].options) {
        const auto it = fit->joules_per_weight.find(opt.recipe);
        if (it == fit->joules_per_weight.end()) {
          priced = false;
          continue;
        }
        const auto [l, kind] = e.where[i];
        const int k = static_cast<int>(kind);
        const double w = static_cast<double>(k == 0 ? 3 * c.d_model * c.d_model : k == 1 ? c.d_model * c.d_model : c.d_ff * c.d_model);
        (void)l;
        // Negative fitted prices are noise around zero for a recipe's weights: clamp so the knapsack's
        // resource stays a cost. llround of nanojoules keeps the sums exact integers.
        opt.bytes = std::llround(std::max(0.0, it->second * w) * 1e9);
      }
    if (priced) {
      const std::vector<Allocation> ef = allocation_frontier(e.items);
      json emaps = json::array();
      for (const MixedUnit& u : config_units(o)) {
        if (u.plan.is_identity() || !u.plan.rules.empty()) continue;  // uniform maps only
        auto j = find_unit(o, u, unit_key(o, u, sha));
        if (!j) continue;
        // The budget is the fit's price of the uniform map, not its measured J/token: both sides of the
        // comparison are then priced by the same estimate (the measurement is in the table beside it).
        // One nJ per Linear absorbs the rounding of each option's price.
        double joules = 0;
        for (const auto& [r, w] : weights_by_recipe(u.plan, c)) {
          const auto it = fit->joules_per_weight.find(r);
          if (it != fit->joules_per_weight.end()) joules += it->second * w;
        }
        const long long budget = std::llround(joules * 1e9) + static_cast<long long>(e.items.size());
        const auto best = best_within(ef, budget);
        if (!best) {
          emaps.push_back({{"budget", "fitted J/token of " + u.id}, {"budget_config", u.id}, {"budget_joules", joules}, {"config_id", nullptr}, {"note", "no allocation fits"}});
          continue;
        }
        std::string id;
        if (auto it = seen.find(best->choice); it != seen.end()) {
          id = units[it->second].id;
        } else {
          id = fmt::format("auto-e{}uJ", std::llround(static_cast<double>(best->bytes) * 1e-9 * 1e6));
          seen[best->choice] = units.size();
          minigpt::QuantPlan p = plan_of(e, *best, id, o);
          write_json_atomic(dir + "/" + id + ".json", p.to_json());
          units.push_back({"auto", id, std::move(p)});
        }
        emaps.push_back({{"budget", "fitted J/token of " + u.id}, {"budget_config", u.id}, {"budget_joules", joules}, {"config_id", id},
                         {"predicted_joules", static_cast<double>(best->bytes) * 1e-9},
                         {"predicted_dkl", best->cost}, {"predicted_kl", best->cost + a.base_kl}});
      }
      alloc["energy_maps"] = emaps;
    } else {
      alloc["energy_note"] = "a recipe the allocation may choose appears in no measured configuration: no energy price for it";
    }
  } else {
    alloc["energy_note"] = "too few configurations measured to fit joules per token per recipe: run --stage configs first";
  }
  write_json_atomic(o.out + "/allocation.json", alloc);
  return units;
}

json merge_mixed(const MixedOptions& o) {
  const std::string sha = minigpt::content_sha256(o.model);
  const minigpt::ModelConfig c = mixed_model_config(o);
  json res = {{"seed", o.seed}, {"checkpoint_sha256", sha}};
  std::vector<MixedUnit> units = config_units(o);
  std::set<std::string> auto_ids;
  {
    std::error_code ec;
    const std::string dir = o.out + "/configs_auto";
    if (fs::is_directory(dir, ec))
      for (const auto& p : load_mixed_configs(dir)) {
        auto_ids.insert(p.id);
        units.push_back({"auto", p.id, study_plan(p, o)});
      }
  }
  json configs = json::array();
  int missing = 0;
  // The machines the units were measured on (not the merging one), each with its units' dates.
  std::map<std::string, json> machines;
  for (const MixedUnit& u : units) {
    auto j = find_unit(o, u, unit_key(o, u, sha));
    if (!j) {
      ++missing;
      continue;
    }
    json e = {{"config_id", u.id},
              {"kind", u.kind == "auto" ? "auto" : u.id == "fp32" ? "baseline" : u.plan.rules.empty() ? "uniform" : "mixed"},
              {"plan", u.plan.to_json()}, {"row", (*j)["row"]}, {"energy", (*j)["energy"]}, {"machine", (*j)["machine"]},
              {"seconds", (*j)["seconds"]}};
    json& mach = machines[(*j)["machine"].dump()];
    if (mach.is_null()) mach = {{"machine", (*j)["machine"]}, {"threads", (*j).value("threads", 0)}, {"units", 0},
                                {"first_date", (*j)["date"]}, {"last_date", (*j)["date"]}};
    mach["units"] = mach["units"].get<int>() + 1;
    // ISO 8601 UTC strings order as text
    if ((*j)["date"].get<std::string>() < mach["first_date"].get<std::string>()) mach["first_date"] = (*j)["date"];
    if ((*j)["date"].get<std::string>() > mach["last_date"].get<std::string>()) mach["last_date"] = (*j)["date"];
    const double acc = e["row"]["verb_tense_accuracy"].get<double>();
    const double jpt = e["energy"]["joules_per_token"]["total"]["median"].get<double>();
    e["accuracy"] = acc;
    e["joules_per_token"] = jpt;
    e["epi"] = acc > 0 ? json(jpt / acc) : json(nullptr);
    configs.push_back(e);
  }
  res["configs"] = configs;
  res["missing_units"] = missing;
  res["machines"] = machines.size();
  res["measured_on"] = json::array();
  for (auto& [k, v] : machines) res["measured_on"].push_back(std::move(v));
  // Sensitivities, when complete.
  try {
    const Sens s = read_sensitivities(o, c);
    json lin = json::array(), lay = json::array();
    const double base = s.base.at("kl_mean").get<double>();
    for (const auto& [id, j] : s.by_id) {
      if (id == "base-fp16") continue;
      const minigpt::QuantPlan& p = minigpt::QuantPlan::from_json(j.at("plan"));
      const minigpt::PlanRule& r = p.rules.at(0);
      json e = {{"layer", r.layers.at(0)}, {"recipe", r.recipe.name()}, {"kl_mean", j["kl_mean"]}, {"kl_low", j["kl_low"]},
                {"kl_high", j["kl_high"]}, {"dkl", j["kl_mean"].get<double>() - base}, {"bytes_linear", j["bytes_linear"]}};
      if (r.kind) {
        e["kind"] = minigpt::linear_kind_name(*r.kind);
        lin.push_back(e);
      } else {
        lay.push_back(e);
      }
    }
    res["sensitivity"] = {{"base_fp16", {{"kl_mean", base}, {"kl_low", s.base["kl_low"]}, {"kl_high", s.base["kl_high"]}, {"tokens", s.base["tokens"]}}},
                          {"linears", lin}, {"layers", lay}, {"tokens", o.sensitivity_tokens}};
  } catch (const mq::Error& e) {
    res["sensitivity"] = {{"error", e.what()}};
  }
  std::error_code ec;
  if (fs::exists(o.out + "/allocation.json", ec)) res["allocation"] = read_json(o.out + "/allocation.json");
  res["options"] = {{"reps", o.reps}, {"ppl_tokens", o.ppl_tokens}, {"max_slots", o.max_slots},
                    {"sensitivity_tokens", o.sensitivity_tokens}, {"calibration_windows", o.calibration},
                    {"prompt_tokens", o.prompt_tokens}, {"gen_tokens", o.gen_tokens}, {"meter", o.meter},
                    {"sensitivity_recipes", o.sensitivity_recipes}};
  return res;
}

}  // namespace mqexp
