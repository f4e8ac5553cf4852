#include "experiments/energy_run.h"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include <fmt/core.h>

#include "experiments/energy_baseline.h"
#include "experiments/energy_phases.h"
#include "experiments/energy_rounds.h"
#include "experiments/energy_rss.h"
#include "experiments/energy_summary.h"
#include "experiments/evaluate.h"
#include "experiments/intervals.h"
#include "experiments/workspace.h"
#include "miniquant/energy/model.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/eval.h"
#include "minigpt/phase_projection.h"
#include "minigpt/quantize_model.h"
#include "minigpt/throughput.h"

namespace mqexp {
namespace {

using nlohmann::json;
namespace en = mq::energy;

const std::string kControlSuffix = " (control)";

json model_bytes_json(const minigpt::Model& m, int context) {
  const minigpt::DecodeTraffic t = minigpt::decode_traffic(m, context);
  long long stored = 0;
  for (const auto& li : m.linears()) stored += m.projection(li.name).weight_bytes();
  return {{"parameter_bytes", t.weight_bytes + t.embedding_bytes + t.other_param_bytes},
          {"linear_weight_bytes", stored},
          {"linear_weight_bytes_read_per_decode_step", t.weight_bytes},
          {"embedding_bytes", t.embedding_bytes},
          {"embedding_format", m.embedding().format_name()},
          {"decode_step", {{"context", context}, {"flops", t.flops}, {"bytes", t.total_bytes()}, {"kv_bytes", t.kv_bytes}}}};
}

// One configuration of the rounds: a method's model (or the baseline's second copy, the control).
struct Config {
  std::string name, method, role;  // role: "baseline", "control", "method", "split", "map"
  minigpt::QuantPlan plan;
  std::unique_ptr<minigpt::Model> model;
  json info;
  std::map<int, std::unique_ptr<BatchDecoder>> decoders;  // per batch size, built at first use
};

struct Subject {
  std::string key, title;
  std::function<std::unique_ptr<minigpt::Model>()> build;
  bool accuracy = false;
  std::vector<std::string> methods, splits;
  minigpt::ModelConfig shape;
};

struct Shared {
  const EnergyOptions& o;
  en::Meter& meter;
  WorkContext wc;
  const CorpusBundle& c;
  int calib_ctx = 0;
  std::vector<int32_t> test, ppl_stream;
  std::vector<en::CalibrationSample> samples;  // with a real meter: every measured phase, for --calibrate
};

// The plan a method runs: a quant map's when the method is its config_id, else the uniform plan of its scheme
// (every Linear in it, the embedding in fp16; fp32 is the checkpoint as it is).
minigpt::QuantPlan plan_for(const std::string& method, const EnergyOptions& o) {
  for (const auto& p : o.quant_maps)
    if (p.id == method) return p;
  minigpt::QuantPlan plan = minigpt::QuantPlan::uniform(scheme_for_method(method));
  plan.gptq.calibration_windows = o.calibration;
  return plan;
}

// A method's scheme: the recipe every Linear gets ("mixed" for a quant map that gives them several).
std::string scheme_of(const minigpt::QuantPlan& p) {
  const std::vector<minigpt::LinearRecipe> rs = p.recipes();
  const bool one = std::all_of(rs.begin(), rs.end(), [&](const minigpt::LinearRecipe& r) { return r == p.base; });
  return p.phases ? p.id : one ? p.base.name() : "mixed";
}

// Accuracy of a MiniGPT configuration: the generalization benchmark's (its test half; the report pairs it
// with fp32's item by item through the stored answers), with perplexity, next-token top-1 and the
// in-distribution verb-tense accuracy beside it.
json accuracy_json(const minigpt::Model& m, const Shared& s) {
  const int win = m.config().n_ctx;
  const auto ppl = minigpt::perplexity(m, s.ppl_stream, win, win / 2);
  const auto vt = minigpt::verb_tense_accuracy(m, s.c.tok, s.c.corpus.test, s.o.max_slots);
  const std::optional<Generalization> g = evaluate_generalization(m, s.c.tok, s.c, EvalLimits{.max_items = s.o.max_items});
  if (!g) throw mq::Error("energy: the generalization benchmark has no items");
  const Interval w = wilson(g->overall.correct, g->overall.total);
  return {{"ppl", ppl.ppl}, {"ppl_tokens", ppl.tokens}, {"next_token_top1", ppl.top1()}, {"verb_tense_accuracy", vt.overall.accuracy()},
          {"verb_tense_slots", vt.overall.total}, {"accuracy", g->overall.accuracy()}, {"accuracy_ci95", {w.low, w.high}},
          {"accuracy_items", g->overall.total}, {"generalization", to_json(*g)},
          {"accuracy_definition", "generalization benchmark accuracy (test half, scored paradigms), Wilson 95% interval"}};
}

// What each phase runs, read from the model itself: the recipe the energy model charges per phase.
json phase_activations(const minigpt::Model& m) {
  json j;
  for (const minigpt::Phase ph : {minigpt::Phase::prefill, minigpt::Phase::decode}) {
    const minigpt::Model::PhaseGuard g = m.use_phase(ph);
    j[minigpt::phase_name(ph)] = {{"activations", activations_of(m)}, {"first_linear", m.projection(m.linears().front().name).format_name() +
                                                                                          minigpt::activation_suffix(m.projection(m.linears().front().name))}};
  }
  return j;
}

Config build_config(const Subject& sub, const std::string& name, const std::string& method, const std::string& role, Shared& s,
                    const EnergyProgress& progress) {
  Config c{name, method, role, {}, nullptr, json::object(), {}};
  c.info = {{"name", name}, {"method", method}, {"role", role}, {"source_name", method_for_scheme(scheme_for_method(method))}};
  try {
    reset_peak_rss();
    c.plan = plan_for(method, s.o);
    c.info["scheme"] = scheme_of(c.plan);
    if (std::any_of(s.o.quant_maps.begin(), s.o.quant_maps.end(), [&](const auto& p) { return p.id == method; }))
      c.info["quant_map"] = c.plan.to_json();
    c.model = sub.build();
    minigpt::quantize_model(*c.model, c.plan, calibration_for(c.plan, s.c, s.calib_ctx));
    c.info["activations"] = activations_of(*c.model);
    c.info["phases_run"] = phase_activations(*c.model);
    c.info.update(model_bytes_json(*c.model, s.o.prompt_tokens + s.o.gen_tokens / 2));
    c.info["accuracy"] = sub.accuracy ? accuracy_json(*c.model, s)
                                      : json{{"ppl", nullptr}, {"accuracy", nullptr},
                                             {"note", "random weights: perplexity and accuracy say nothing; greedy agreement only"}};
    c.info["peak_rss_bytes"] = peak_rss_bytes();
    c.info["status"] = "ok";
    progress(fmt::format("{} {}: built ({}, {:.2f} MB of Linear weights)", sub.key, name, c.info["activations"].get<std::string>(),
                         c.info["linear_weight_bytes"].get<double>() / 1e6));
  } catch (const std::exception& e) {  // an unknown scheme too: recorded, and the other methods still run
    c.model.reset();
    c.info["status"] = "failed";
    c.info["error"] = e.what();
    progress(fmt::format("{} {}: FAILED: {}", sub.key, name, e.what()));
  }
  return c;
}

std::vector<std::vector<int32_t>> windows(const std::vector<int32_t>& stream, size_t& offset, int count, int len) {
  std::vector<std::vector<int32_t>> out;
  for (int k = 0; k < count; ++k) {
    if (offset + static_cast<size_t>(len) > stream.size())
      throw mq::UsageError(fmt::format("the test split has {} tokens; the prompts asked for need more (fewer rounds or shorter prompts)",
                                       stream.size()));
    out.emplace_back(stream.begin() + static_cast<long>(offset), stream.begin() + static_cast<long>(offset + len));
    offset += static_cast<size_t>(len);
  }
  return out;
}

// The two uniform modes a split mixes: its base scheme run in the prefill's mode throughout, and in the decode's.
SplitDef split_def(const std::string& name) {
  const minigpt::QuantPlan p = minigpt::QuantPlan::uniform(name);
  const auto uniform = [&](minigpt::Phase ph) {
    const minigpt::LinearRecipe r = p.recipe_for(0, minigpt::LinearKind::qkv, ph);
    return r.name();
  };
  return {name, uniform(minigpt::Phase::prefill), uniform(minigpt::Phase::decode)};
}

json run_subject(const Subject& sub, Shared& s, EnergyRun& run, std::vector<Statement>& statements,
                 std::vector<std::unique_ptr<SubjectData>>& keep, const EnergyProgress& progress) {
  const EnergyOptions& o = s.o;
  // Configurations: the baseline first, its control copy, the methods, the splits (with the uniform modes they mix).
  std::vector<std::pair<std::string, std::string>> wanted;  // (name, method)
  std::vector<std::string> methods = sub.methods;
  std::vector<SplitDef> splits;
  for (const auto& sp : sub.splits) {
    splits.push_back(split_def(sp));
    for (const auto& u : {splits.back().prefill_uniform, splits.back().decode_uniform})
      if (std::find(methods.begin(), methods.end(), u) == methods.end()) methods.push_back(u);
  }
  std::stable_partition(methods.begin(), methods.end(), [](const std::string& m) { return method_is_baseline(m); });
  if (methods.empty() || !method_is_baseline(methods.front()))
    throw mq::UsageError(fmt::format("{}: the methods must include the baseline fp32 (every comparison is against it)", sub.key));
  const std::string baseline = methods.front();
  std::vector<Config> configs;
  configs.push_back(build_config(sub, baseline, baseline, "baseline", s, progress));
  if (o.control) configs.push_back(build_config(sub, baseline + kControlSuffix, baseline, "control", s, progress));
  for (size_t i = 1; i < methods.size(); ++i)
    configs.push_back(build_config(sub, methods[i], methods[i], method_is_baseline(methods[i]) ? "baseline-alias" : "method", s, progress));
  for (const auto& sp : splits) configs.push_back(build_config(sub, sp.name, sp.name, "split", s, progress));
  for (const auto& c : configs) {
    ++run.methods;
    if (c.info["status"] != "ok") ++run.failed;
  }
  if (configs.front().info["status"] != "ok")
    throw mq::Error(fmt::format("{}: the baseline {} failed: {}", sub.key, baseline, configs.front().info["error"].get<std::string>()));

  auto data = std::make_unique<SubjectData>();
  SubjectData& d = *data;
  d.key = sub.key;
  d.title = sub.title;
  d.baseline = baseline;
  d.control = o.control ? baseline + kControlSuffix : "";
  d.batch = o.batch;
  std::map<std::string, Config*> by_name;
  for (auto& c : configs) {
    d.info[c.name] = c.info;
    if (c.info["status"] == "ok") {
      d.configs.push_back(c.name);
      by_name[c.name] = &c;
    }
  }
  for (const auto& sp : splits)
    if (by_name.count(sp.name) && by_name.count(sp.prefill_uniform) && by_name.count(sp.decode_uniform)) d.splits.push_back(sp);

  // Prompts: one per measured round and warm-up round, the same for every configuration of a round.
  size_t off = 0;
  const std::vector<std::vector<int32_t>> gen_prompts = windows(s.test, off, o.round_bound() + o.warmup, o.prompt_tokens);
  const std::vector<std::vector<int32_t>> batch_prompts = windows(s.test, off, *std::max_element(o.batch.begin(), o.batch.end()), o.batch_prompt);
  const auto prompt_of = [&](int round) { return gen_prompts[static_cast<size_t>(round + o.warmup)]; };

  std::vector<RoundTask> tasks, btasks;
  tasks.push_back({"generation", d.configs, [&](const std::string& c, int round) {
                     return from_run(run_generation(*by_name.at(c)->model, s.meter, prompt_of(round), o.gen_tokens, &s.c.tok, s.wc));
                   }});
  for (int B : o.batch)
    btasks.push_back({fmt::format("batch{}", B), d.configs, [&, B](const std::string& c, int) {
                       Config& cf = *by_name.at(c);
                       auto& dec = cf.decoders[B];
                       if (!dec) {
                         const std::vector<std::vector<int32_t>> p(batch_prompts.begin(), batch_prompts.begin() + B);
                         dec = std::make_unique<BatchDecoder>(*cf.model, p, o.batch_steps);
                       }
                       return from_batch(dec->run(s.meter, s.wc));
                     }});
  progress(fmt::format("{}: {} configurations, generation, {} rounds after {} warm-up", sub.key, d.configs.size(), o.rounds, o.warmup));
  // Every round moves every configuration's buffers to new memory first (Model::relocate): two copies of one
  // fp32 model ran a steady 0.9-2.6% apart for a whole run under load (the GPT-2-shaped control 0.9853 [0.9706,
  // 0.9898] after 90 rounds), an effect of where each instance's pages landed that more rounds only confirm.
  // Drawn again each round, it is round-to-round noise, which the per-round ratios and their interval cover.
  const auto relocate_all = [&](int) {
    for (auto& c : configs)
      if (c.model) c.model->relocate();
  };
  RoundsOptions ro{o.rounds, o.warmup};
  ro.before_round = relocate_all;
  if (!d.control.empty() && o.round_bound() > o.rounds) {
    ro.max_rounds = o.round_bound();
    ro.step = o.add_rounds;
    ro.enough = [&](const RoundsResult& r) { return control_passes(paired(r, "generation", d.control, d.baseline, "total")); };
  }
  d.main = run_rounds(tasks, ro, [&](const std::string& l) { progress(sub.key + ": " + l); });
  progress(fmt::format("{}: batch curve, {} configurations x {} batch sizes, {} rounds after 1 warm-up", sub.key, d.configs.size(), btasks.size(),
                       o.batch_rounds));
  RoundsOptions bo{o.batch_rounds, 1};
  bo.before_round = relocate_all;
  d.batches = run_rounds(btasks, bo, [&](const std::string& l) { progress(sub.key + " batch: " + l); });
  for (auto& c : configs) c.decoders.clear();  // the batch caches: GPT-2-shaped ones are hundreds of MB
  if (s.meter.measured())
    for (const RoundsResult* rr : {&d.main, &d.batches})
      for (const auto& [task, per] : rr->results)
        for (const auto& [name, ms] : per)
          for (const Measurement& m : ms)
            for (const auto& [ph, p] : m.phases)
              if (ph != "total" && p.seconds > 0) s.samples.push_back({p.seconds, p.work, p.joules});

  // The prompt-length curve: its own (fewer) rounds; the longest prompt that fits is always a point.
  const int n_ctx = sub.shape.n_ctx, longest = n_ctx - o.curve_gen + 1;
  for (int L : o.curve_lengths)
    if (L < longest) d.curve_lengths.push_back(L);
  d.curve_lengths.push_back(longest);
  d.curve_gen = o.curve_gen;
  for (const auto& m : o.curve_methods.empty() ? default_curve_methods() : o.curve_methods)
    if (by_name.count(m)) d.curve_methods.push_back(m);
  if (!d.curve_methods.empty() && o.curve_rounds >= 2) {
    std::vector<RoundTask> ct;
    for (int L : d.curve_lengths)
      ct.push_back({fmt::format("prompt{}", L), d.curve_methods, [&, L](const std::string& c, int round) {
                      // Each round a different stretch of the test split, the same for every method of the round.
                      const size_t at = static_cast<size_t>(round + 1) * static_cast<size_t>(n_ctx) % (s.test.size() - static_cast<size_t>(L));
                      const std::vector<int32_t> prompt(s.test.begin() + static_cast<long>(at), s.test.begin() + static_cast<long>(at) + L);
                      return from_run(run_generation(*by_name.at(c)->model, s.meter, prompt, o.curve_gen, &s.c.tok, s.wc));
                    }});
    progress(fmt::format("{}: prompt-length curve, {} lengths x {} methods, {} rounds", sub.key, d.curve_lengths.size(), d.curve_methods.size(),
                         o.curve_rounds));
    RoundsOptions co{o.curve_rounds, 1};
    co.before_round = relocate_all;
    d.curve = run_rounds(ct, co, [&](const std::string& l) { progress(sub.key + " curve: " + l); });
  } else {  // no curve measured: nothing for the summary to read or state
    d.curve_lengths.clear();
    d.curve_methods.clear();
  }

  json out = summarize_subject(d);
  for (auto& c : configs)  // the failed ones, recorded with their error
    if (c.info["status"] != "ok") out["methods"].push_back(c.info);
  const minigpt::ModelConfig& k = sub.shape;
  out["config"] = {{"vocab_size", k.vocab_size}, {"n_ctx", k.n_ctx}, {"d_model", k.d_model}, {"n_layer", k.n_layer}, {"n_head", k.n_head}, {"d_ff", k.d_ff}};
  out["title"] = sub.title;
  out["rounds_seconds"] = d.main.seconds;
  out["batch_seconds"] = d.batches.seconds;
  out["curve_seconds"] = d.curve.seconds;
  run.rounds_csv += rounds_csv(sub.key, d.main, run.rounds_csv.empty());  // one header for the whole file
  run.rounds_csv += rounds_csv(sub.key, d.batches, false);
  if (!d.curve_lengths.empty()) run.rounds_csv += rounds_csv(sub.key, d.curve, false);
  for (auto& st : subject_statements(d)) statements.push_back(std::move(st));
  keep.push_back(std::move(data));  // the statements refer to it
  return out;
}

}  // namespace

bool method_is_baseline(const std::string& method) { return scheme_for_method(method) == "fp32"; }

const std::vector<std::string>& default_energy_methods() {
  static const std::vector<std::string> k = {"fp32", "fp16", "bf16", "int8-per-channel", "int8-per-channel+a8", "int4-g64", "int4-g64+a8", "int4-g64+bf16"};
  return k;
}

const std::vector<std::string>& default_gpt2_energy_methods() {
  static const std::vector<std::string> k = {"fp32", "int8-per-channel", "int8-per-channel+a8", "int4-g64", "int4-g64+a8"};
  return k;
}

const std::vector<std::string>& default_phase_splits() {
  static const std::vector<std::string> k = {"int4-g64[prefill=+a8,decode=weight-only]", "int4-g64[prefill=+a8,decode=+bf16]",
                                             "int8-per-channel[prefill=+a8,decode=weight-only]"};
  return k;
}

const std::vector<std::string>& default_gpt2_phase_splits() {
  static const std::vector<std::string> k = {"int4-g64[prefill=+a8,decode=weight-only]"};
  return k;
}

const std::vector<std::string>& default_curve_methods() {
  static const std::vector<std::string> k = {"fp32", "int8-per-channel", "int4-g64", "int4-g64+a8"};
  return k;
}

std::string scheme_for_method(const std::string& m) {
  if (m == "float32") return "fp32";
  if (m == "float16") return "fp16";
  if (m == "bfloat16") return "bf16";
  if (m == "int8") return "int8-per-channel";
  if (m == "int8_dynamic") return "int8-per-channel+a8";
  return m;
}

std::string method_for_scheme(const std::string& s) {
  for (const char* m : {"float32", "float16", "bfloat16", "int8", "int8_dynamic"})
    if (scheme_for_method(m) == s) return m;
  return "";
}

// How the configured model's Linears take their activations, as the energy model charges them.
std::string activations_of(const minigpt::Model& m) {
  const std::vector<minigpt::LinearInfo> lin = m.linears();
  const auto count = [&](auto pred) { return static_cast<size_t>(std::count_if(lin.begin(), lin.end(), pred)); };
  const size_t n8 = count([&](const minigpt::LinearInfo& li) { return m.projection(li.name).int8_dots() == 1; });
  const size_t n16 = count([&](const minigpt::LinearInfo& li) { return m.projection(li.name).int8_dots() == 2; });
  const size_t nb = count([&](const minigpt::LinearInfo& li) { return m.projection(li.name).bf16_activations(); });
  if (n8 + n16 + nb == 0) return "fp32";
  const std::pair<size_t, const char*> kinds[] = {{n8, "int8 (dynamic, per token)"},
                                                  {n16, "16-bit (dynamic, per token, two int8 halves)"},
                                                  {nb, "bf16 (rounded per token, fp32 multiply-adds)"}};
  std::string s;
  for (const auto& [k, what] : kinds) {
    if (k == lin.size()) return what;
    if (k > 0) s += fmt::format("{} in {} of {} Linears, ", what, k, lin.size());
  }
  return s + "fp32 in the others";
}

namespace {
// The splits one subject will run (the default list when none given, nothing for "none") are each
// named once and by no method of the subject.
void check_unique_splits(const std::vector<std::string>& given, const std::vector<std::string>& methods, const char* flag,
                         const char* methods_flag) {
  if (given.size() == 1 && given[0] == "none") return;
  const std::vector<std::string>& splits = given.empty() ? (std::string(flag) == "--splits" ? default_phase_splits() : default_gpt2_phase_splits()) : given;
  std::set<std::string> seen;
  for (const auto& sp : splits) {
    if (!seen.insert(sp).second) throw mq::UsageError(fmt::format("{}: {} is listed twice", flag, mq::clip_text(sp)));
    if (std::find(methods.begin(), methods.end(), sp) != methods.end())
      throw mq::UsageError(fmt::format("{}: {} is also one of {}; configurations need unique names", flag, mq::clip_text(sp), methods_flag));
  }
}
}  // namespace

std::vector<std::string> use_scheme_names(EnergyOptions& o) {
  std::vector<std::string> notes;
  const std::pair<std::vector<std::string>*, const char*> lists[] = {
      {&o.methods, "--schemes"}, {&o.gpt2_methods, "--gpt2-schemes"}, {&o.curve_methods, "--curve-schemes"}};
  for (const auto& [list, flag] : lists)
    for (std::string& m : *list) {
      const std::string scheme = scheme_for_method(m);
      if (scheme == m) continue;
      notes.push_back(fmt::format("note: {} {}: the source documents' name of {}; use {}", flag, m, scheme, scheme));
      m = scheme;
    }
  return notes;
}

void validate(const EnergyOptions& o) {
  if (o.rounds < 2) throw mq::UsageError(fmt::format("--rounds {}: a paired interval needs at least 2 rounds", o.rounds));
  if (o.warmup < 0) throw mq::UsageError(fmt::format("--warmup {}: must be >= 0", o.warmup));
  if (o.rounds > 100000) throw mq::UsageError(fmt::format("--rounds {}: must be <= 100000", o.rounds));
  if (o.max_rounds != 0 && (o.max_rounds < o.rounds || o.max_rounds > 300000))
    throw mq::UsageError(fmt::format("--max-rounds {}: must be 0 (3 x --rounds) or in [--rounds ({}), 300000]", o.max_rounds, o.rounds));
  if (o.add_rounds < 1 || o.add_rounds > 100000) throw mq::UsageError(fmt::format("--add-rounds {}: must be in [1, 100000]", o.add_rounds));
  if (o.prompt_tokens < 1) throw mq::UsageError(fmt::format("--prompt-tokens {}: must be >= 1", o.prompt_tokens));
  if (o.gen_tokens < 2) throw mq::UsageError(fmt::format("--gen-tokens {}: must be >= 2", o.gen_tokens));
  if (o.batch.empty()) throw mq::UsageError("--batch: need at least one size");
  for (int b : o.batch)
    if (b < 1 || b > 1024) throw mq::UsageError(fmt::format("--batch {}: sizes must be in [1, 1024]", b));
  if (std::set<int>(o.batch.begin(), o.batch.end()).size() != o.batch.size()) throw mq::UsageError("--batch: a size is listed twice");
  if (o.batch_prompt < 1 || o.batch_steps < 1) throw mq::UsageError("--batch-prompt and --batch-steps must be >= 1");
  for (int L : o.curve_lengths)
    if (L < 1) throw mq::UsageError(fmt::format("--curve-lengths {}: prompt lengths must be >= 1", L));
  if (o.curve_gen < 2) throw mq::UsageError(fmt::format("--curve-gen {}: must be >= 2", o.curve_gen));
  if (o.batch_rounds < 2) throw mq::UsageError(fmt::format("--batch-rounds {}: the batch curve's paired speed-ups need at least 2 rounds", o.batch_rounds));
  if (o.curve_rounds < 0) throw mq::UsageError(fmt::format("--curve-rounds {}: must be >= 0 (0 or 1: no curve)", o.curve_rounds));
  if (o.meter != "auto" && o.meter != "rapl" && o.meter != "perf" && o.meter != "model")
    throw mq::UsageError(fmt::format("--meter {}: expected auto, rapl, perf or model", o.meter));
  // Methods are found by name (rounds, comparisons, the report): every configuration needs a name of its own.
  std::set<std::string> names;
  for (const auto& m : o.methods.empty() ? default_energy_methods() : o.methods)
    if (!names.insert(m).second) throw mq::UsageError(fmt::format("--schemes: {} is listed twice", m));
  for (const auto& p : o.quant_maps)
    if (!names.insert(p.id).second)
      throw mq::UsageError(fmt::format("--quant-map: config_id '{}' is already a method's name; methods need unique names",
                                       mq::clip_text(p.id)));
  for (const auto* list : {&o.splits, &o.gpt2_splits})
    for (const auto& sp : *list)
      if (sp != "none") {
        const minigpt::QuantPlan p = minigpt::QuantPlan::uniform(sp);  // throws UsageError for a bad split
        if (!p.phases) throw mq::UsageError(fmt::format("--splits {}: not a phase split (e.g. int4-g64[prefill=+a8,decode=+bf16])", sp));
      }
  // Splits are configurations found by name like the methods: one listed twice, or also a method, made two
  // configurations of one name and summarize_subject read past its table (a SIGSEGV after the batch curve).
  std::vector<std::string> mini_methods(names.begin(), names.end());
  const std::vector<std::string>& gpt2_methods = o.gpt2_methods.empty() ? default_gpt2_energy_methods() : o.gpt2_methods;
  check_unique_splits(o.splits, mini_methods, "--splits", "--schemes or --quant-map");
  if (o.gpt2) {
    if (std::set<std::string>(gpt2_methods.begin(), gpt2_methods.end()).size() != gpt2_methods.size())
      throw mq::UsageError("--gpt2-schemes: a method is listed twice");
    check_unique_splits(o.gpt2_splits, gpt2_methods, "--gpt2-splits", "--gpt2-schemes");
  }
}

EnergyRun run_energy(const EnergyOptions& o, const EnergyProgress& progress, const std::function<void()>& started) {
  validate(o);
  en::Selection sel = en::select_meter(o.meter, o.roots);
  if (o.calibrate && !sel.meter->measured())
    throw mq::Error(fmt::format("--calibrate needs a real energy meter (RAPL or the perf power PMU) and this machine has "
                                "none: {}", sel.warning));
  const int threads = omp_get_max_threads();
  EnergyRun run;
  run.summary = {{"energy_source", sel.meter->source()}, {"measured", sel.meter->measured()}, {"warning", sel.warning},
                 {"hardware", en::hardware_json(sel.probes, threads)}};
  const auto* mm = dynamic_cast<const en::ModelMeter*>(sel.meter.get());
  if (mm) {
    run.summary["model_coefficients"] = en::coefficients_json(mm->coefficients());
    run.summary["model_coefficients"]["file"] = mm->coefficients().file;
  }
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  const LoadedModel probe = load_checkpoint(o.model, &c.tok);
  const minigpt::ModelConfig mc = probe.model.config();
  const minigpt::ModelConfig gc{.vocab_size = mc.vocab_size, .n_ctx = 256, .d_model = 768, .n_layer = 12, .n_head = 12, .d_ff = 3072};
  for (const auto* cfg : {&mc, &gc}) {
    if (o.prompt_tokens + o.gen_tokens - 1 > cfg->n_ctx)
      throw mq::UsageError(fmt::format("--prompt-tokens {} + --gen-tokens {} - 1 exceed the model's context of {} tokens",
                                       o.prompt_tokens, o.gen_tokens, cfg->n_ctx));
    if (o.batch_prompt + o.batch_steps > cfg->n_ctx)
      throw mq::UsageError(fmt::format("--batch-prompt {} + --batch-steps {} exceed the model's context of {} tokens",
                                       o.batch_prompt, o.batch_steps, cfg->n_ctx));
    if (o.curve_gen >= cfg->n_ctx) throw mq::UsageError(fmt::format("--curve-gen {} leaves no prompt in a {}-token context", o.curve_gen, cfg->n_ctx));
    if (!o.gpt2) break;
  }
  if (started) started();
  if (!sel.warning.empty()) progress("WARNING: " + sel.warning);

  Shared s{o, *sel.meter, {}, c, mc.n_ctx, minigpt::encode_split(c.tok, c.corpus.test), {}, {}};
  s.wc.caches = mq::cpu_info().caches;
  s.wc.threads = threads;
  s.ppl_stream = s.test;
  if (o.ppl_tokens > 0 && o.ppl_tokens < static_cast<int64_t>(s.test.size())) s.ppl_stream.resize(static_cast<size_t>(o.ppl_tokens));

  const auto splits_of = [](const std::vector<std::string>& given, const std::vector<std::string>& dflt) {
    if (given.size() == 1 && given[0] == "none") return std::vector<std::string>{};
    return given.empty() ? dflt : given;
  };
  std::vector<Subject> subjects;
  std::vector<std::string> minigpt_methods = o.methods.empty() ? default_energy_methods() : o.methods;
  for (const auto& p : o.quant_maps) minigpt_methods.push_back(p.id);
  subjects.push_back({"minigpt", "MiniGPT", [&] { return std::make_unique<minigpt::Model>(load_checkpoint(o.model, &c.tok).model); }, true,
                      minigpt_methods, splits_of(o.splits, default_phase_splits()), mc});
  if (o.gpt2)
    subjects.push_back({"gpt2_small_shaped", "GPT-2-small-shaped body", [&] { return std::make_unique<minigpt::Model>(gc, o.seed); }, false,
                        o.gpt2_methods.empty() ? default_gpt2_energy_methods() : o.gpt2_methods,
                        splits_of(o.gpt2_splits, default_gpt2_phase_splits()), gc});
  std::vector<Statement> statements;
  std::vector<std::unique_ptr<SubjectData>> keep;
  for (const auto& sub : subjects) {
    run.summary["models"][sub.key] = run_subject(sub, s, run, statements, keep, progress);
    if (sub.key == "minigpt") run.summary["models"][sub.key]["checkpoint"] = o.model;
    else run.summary["models"][sub.key]["weights"] = "random (GPT-2 initialisation, seed 42)";
  }
  if (o.fp32_check) {
    progress("fp32 kernels against Eigen's GEMM on the models' Linear shapes");
    std::vector<const minigpt::ModelConfig*> shapes = {&mc};
    if (o.gpt2) shapes.push_back(&gc);
    run.summary["fp32_kernel_check"] = fp32_kernel_check(shapes, o.batch, threads);
  }

  if (o.calibrate) {
    const en::Coefficients prior = en::load_coefficients(o.roots.coefficients);
    const en::Calibration cal = en::calibrate(s.samples, prior);
    run.calibration = en::coefficients_json(cal.fitted);
    run.calibration["fit"] = {{"samples", s.samples.size()}, {"rms_relative_error", cal.rms_relative_error},
                              {"notes", cal.notes}, {"meter", sel.meter->source()}, {"cpu_model", mq::cpu_info().model}};
  }
  // Every statement the reports make, re-priced over the coefficient box (or measured: nothing to vary).
  std::unique_ptr<CoefficientBox> box;
  if (mm) box = std::make_unique<CoefficientBox>(make_box(mm->coefficients()));
  json st = json::array();
  for (const Statement& x : statements) st.push_back(check_statement(x, box.get()).to_json());
  run.summary["statements"] = st;
  run.summary["robustness"] = box ? box->to_json() : json{{"note", "joules measured by " + sel.meter->source() + ": no model coefficients to vary"}};
  return run;
}

}  // namespace mqexp
