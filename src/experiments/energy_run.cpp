#include "experiments/energy_run.h"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/core.h>

#include "experiments/energy_phases.h"
#include "experiments/energy_rss.h"
#include "miniquant/energy/model.h"
#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/calibrate.h"
#include "minigpt/eval.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quant_plan.h"
#include "minigpt/throughput.h"
#include "experiments/workspace.h"

namespace mqexp {
namespace {

using nlohmann::json;
namespace en = mq::energy;

json model_bytes_json(const minigpt::Model& m, int context) {
  const minigpt::DecodeTraffic t = minigpt::decode_traffic(m, context);
  return {{"parameter_bytes", t.weight_bytes + t.embedding_bytes + t.other_param_bytes},
          {"linear_weight_bytes", t.weight_bytes},
          {"embedding_bytes", t.embedding_bytes},
          {"embedding_format", m.embedding().format_name()},
          {"decode_step", {{"context", context}, {"flops", t.flops}, {"bytes", t.total_bytes()}, {"kv_bytes", t.kv_bytes}}}};
}

// What one model kind (MiniGPT, GPT-2-small-shaped) brings to the runs.
struct Subject {
  std::string key;     // "minigpt", "gpt2_small_shaped"
  std::string suffix;  // appended to the method's trial folder ("" or "@gpt2-small-shaped")
  std::function<std::unique_ptr<minigpt::Model>()> build;
  bool accuracy = false;
  std::vector<std::string> methods;
};

struct Shared {
  const EnergyOptions& o;
  en::Meter& meter;
  WorkContext wc;
  const minigpt::Tokenizer& tok;
  const minigpt::Corpus& corpus;
  const CorpusBundle& bundle;  // for GPTQ's calibration windows (the val split)
  int calib_ctx = 0;           // their length: MiniGPT's n_ctx, for either model
  std::vector<int32_t> ppl_stream;
  std::vector<std::vector<int32_t>> warm_prompts, trial_prompts, batch_prompts;
  std::vector<en::CalibrationSample> samples;  // with a real meter: every measured phase
};

json summarize_phase(const std::vector<const PhaseStats*>& runs) {
  json out;
  const auto field = [&](const char* name, auto get) {
    std::vector<double> v;
    for (const auto* p : runs) v.push_back(get(*p));
    json s = en::summary_json(en::summarize_trials(v));
    s["values"] = v;
    out[name] = s;
  };
  field("joules_per_token", [](const PhaseStats& p) { return p.joules_per_token(); });
  field("joules", [](const PhaseStats& p) { return p.joules; });
  field("seconds", [](const PhaseStats& p) { return p.seconds; });
  field("watts", [](const PhaseStats& p) { return p.watts(); });
  field("tokens_per_s", [](const PhaseStats& p) { return p.tokens_per_s(); });
  out["tokens"] = runs.front()->tokens;
  out["work"] = work_json(runs.front()->work);  // deterministic: the same every run
  return out;
}

json summarize_runs(const std::vector<RunResult>& runs) {
  json out;
  for (const std::string ph : {"prefill", "decode", "post", "total"}) {
    std::vector<const PhaseStats*> v;
    for (const auto& r : runs) v.push_back(&r.phase(ph));
    out[ph] = summarize_phase(v);
  }
  return out;
}

void add_sample(Shared& s, const PhaseStats& p) {
  if (s.meter.measured() && p.seconds > 0) s.samples.push_back({p.seconds, p.work, p.joules});
}

// The plan a method runs: a quant map's when the method is its config_id, else the sweep's uniform plan
// for the method's scheme (every Linear in it, the embedding in fp16; fp32 is the checkpoint as it is).
minigpt::QuantPlan plan_for(const std::string& method, const EnergyOptions& o) {
  for (const auto& p : o.quant_maps)
    if (p.id == method) return p;
  minigpt::QuantPlan plan = minigpt::QuantPlan::uniform(scheme_for_method(method));
  plan.gptq.calibration_windows = o.calibration;
  return plan;
}

// A method's "scheme": the recipe every Linear gets ("mixed" for a quant map that gives them several).
std::string scheme_of(const std::string& method, const EnergyOptions& o) {
  for (const auto& p : o.quant_maps)
    if (p.id == method) {
      const std::vector<minigpt::LinearRecipe> rs = p.recipes();
      const bool one = std::all_of(rs.begin(), rs.end(), [&](const minigpt::LinearRecipe& r) { return r == p.base; });
      return one ? p.base.name() : "mixed";
    }
  return scheme_for_method(method);
}

}  // namespace

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

json trial_json(const Subject& sub, const std::string& method, const std::string& kind, int index, const RunResult& r,
                const std::vector<std::pair<int, BatchRun>>& batch, const json& agreement, const Shared& s) {
  json t = {{"model", sub.key},  {"method", method}, {"scheme", scheme_of(method, s.o)}, {"kind", kind}, {"index", index},
            {"energy_source", s.meter.source()}, {"measured", s.meter.measured()},
            {"prompt_tokens", r.prefill.tokens}, {"gen_tokens", r.total.tokens}, {"text_chars", r.text.size()},
            {"greedy_agreement_with_float32", agreement}};
  for (const std::string ph : {"prefill", "decode", "post", "total"}) t["phases"][ph] = phase_json(r.phase(ph));
  json b = json::array();
  for (const auto& [B, br] : batch)
    b.push_back({{"batch", B}, {"decode", phase_json(br.decode)}, {"post", phase_json(br.post)}, {"total", phase_json(br.total)}});
  t["batch"] = b;
  return t;
}

json run_method(const Subject& sub, const std::string& method, Shared& s, std::vector<std::vector<int32_t>>* reference,
                const EnergyProgress& progress) {
  const EnergyOptions& o = s.o;
  json r = {{"method", method}, {"scheme", scheme_of(method, o)}};
  try {
    reset_peak_rss();
    const minigpt::QuantPlan plan = plan_for(method, o);
    if (std::any_of(o.quant_maps.begin(), o.quant_maps.end(), [&](const auto& p) { return p.id == method; }))
      r["quant_map"] = plan.to_json();
    std::unique_ptr<minigpt::Model> m = sub.build();
    minigpt::quantize_model(*m, plan, calibration_for(plan, s.bundle, s.calib_ctx));
    r["activations"] = activations_of(*m);
    r.update(model_bytes_json(*m, o.prompt_tokens + o.gen_tokens / 2));
    if (sub.accuracy) {
      const int win = m->config().n_ctx;
      const auto ppl = minigpt::perplexity(*m, s.ppl_stream, win, win / 2);
      const auto vt = minigpt::verb_tense_accuracy(*m, s.tok, s.corpus.test, o.max_slots);
      r["accuracy"] = {{"ppl", ppl.ppl}, {"ppl_tokens", ppl.tokens}, {"verb_tense_accuracy", vt.overall.accuracy()},
                       {"verb_tense_slots", vt.overall.total}};
    } else {
      r["accuracy"] = {{"ppl", nullptr}, {"verb_tense_accuracy", nullptr},
                       {"note", "random weights: perplexity and verb tense say nothing; greedy agreement only"}};
    }
    const WorkContext& wc = s.wc;  // the work functions read each Linear's arithmetic from the model

    std::vector<RunResult> warm, trials;
    for (int k = 0; k < o.warmup; ++k) warm.push_back(run_generation(*m, s.meter, s.warm_prompts[k], o.gen_tokens, &s.tok, wc));
    for (int k = 0; k < o.trials; ++k) trials.push_back(run_generation(*m, s.meter, s.trial_prompts[k], o.gen_tokens, &s.tok, wc));
    // Batch curve: each trial runs every batch size once; warm-ups before the first.
    std::vector<std::vector<std::pair<int, BatchRun>>> batch(static_cast<size_t>(o.trials));
    std::vector<std::vector<std::pair<int, BatchRun>>> batch_warm(static_cast<size_t>(o.warmup));
    for (int B : o.batch) {
      const std::vector<std::vector<int32_t>> prompts(s.batch_prompts.begin(), s.batch_prompts.begin() + B);
      BatchDecoder bd(*m, prompts, o.batch_steps);
      for (int k = 0; k < o.warmup; ++k) batch_warm[static_cast<size_t>(k)].emplace_back(B, bd.run(s.meter, wc));
      for (int k = 0; k < o.trials; ++k) batch[static_cast<size_t>(k)].emplace_back(B, bd.run(s.meter, wc));
    }
    r["peak_rss_bytes"] = peak_rss_bytes();

    // Greedy agreement with float32 over the same prompts.
    json agree_all = nullptr;
    std::vector<json> agree(static_cast<size_t>(o.trials), nullptr);
    if (reference && reference->empty()) {
      for (const auto& t : trials) reference->push_back(t.generated);
    } else if (reference) {
      double same = 0, n = 0;
      for (int k = 0; k < o.trials; ++k) {
        const auto& a = trials[static_cast<size_t>(k)].generated;
        const auto& b = (*reference)[static_cast<size_t>(k)];
        double sk = 0;
        for (size_t i = 0; i < a.size() && i < b.size(); ++i) sk += a[i] == b[i];
        agree[static_cast<size_t>(k)] = sk / static_cast<double>(a.size());
        same += sk;
        n += static_cast<double>(a.size());
      }
      agree_all = same / n;
    }
    if (reference && method_is_baseline(method)) agree_all = 1.0;
    r["accuracy"]["greedy_agreement_with_float32"] = agree_all;

    for (int k = 0; k < o.warmup; ++k) {
      const json t = trial_json(sub, method, "warmup", k, warm[static_cast<size_t>(k)], batch_warm[static_cast<size_t>(k)], nullptr, s);
      if (o.on_trial) o.on_trial(sub.key, method + sub.suffix, "warmup", k, t);
    }
    for (int k = 0; k < o.trials; ++k) {
      const json a = method_is_baseline(method) && reference ? json(1.0) : agree[static_cast<size_t>(k)];
      const json t = trial_json(sub, method, "trial", k, trials[static_cast<size_t>(k)], batch[static_cast<size_t>(k)], a, s);
      if (o.on_trial) o.on_trial(sub.key, method + sub.suffix, "trial", k, t);
      for (const std::string ph : {"prefill", "decode", "post"}) add_sample(s, trials[static_cast<size_t>(k)].phase(ph));
      for (const auto& [B, br] : batch[static_cast<size_t>(k)]) add_sample(s, br.decode);
    }
    r["phases"] = summarize_runs(trials);
    r["warmup"] = o.warmup > 0 ? summarize_runs(warm) : json(nullptr);
    json bj = json::array();
    for (size_t i = 0; i < o.batch.size(); ++i) {
      std::vector<const PhaseStats*> dec, tot;
      for (const auto& tr : batch) {
        dec.push_back(&tr[i].second.decode);
        tot.push_back(&tr[i].second.total);
      }
      bj.push_back({{"batch", o.batch[i]}, {"steps", o.batch_steps}, {"decode", summarize_phase(dec)}, {"total", summarize_phase(tot)}});
    }
    r["batch"] = bj;
    r["status"] = "ok";
    const auto mj = [&](const char* ph) { return 1e3 * r["phases"][ph]["joules_per_token"]["mean"].get<double>(); };
    progress(fmt::format("{} {}: prefill {:.4f}, decode {:.4f}, post {:.5f}, total {:.4f} mJ/token ({}), peak RSS {:.0f} MB",
                         sub.key, method, mj("prefill"), mj("decode"), mj("post"), mj("total"),
                         s.meter.measured() ? "measured" : "MODELLED", r["peak_rss_bytes"].get<double>() / 1e6));
  } catch (const std::exception& e) {
    r["status"] = "failed";
    r["error"] = e.what();
    progress(fmt::format("{} {}: FAILED: {}", sub.key, method, e.what()));
  }
  return r;
}

// Savings against float32 (the first method whose scheme is fp32 and that succeeded).
void add_savings(json& methods) {
  const json* base = nullptr;
  for (const auto& m : methods)
    if (m["status"] == "ok" && m["scheme"] == "fp32") {
      base = &m;
      break;
    }
  if (!base) return;
  const json b = *base;
  // A meter that saw no energy (a counter that did not move) gives no ratio to divide by.
  if (!(b["phases"]["total"]["joules_per_token"]["mean"].get<double>() > 0)) return;
  const auto summary = [](const json& s) {
    en::Summary x;
    x = en::summarize_trials(s["values"].get<std::vector<double>>());
    return x;
  };
  // null where the baseline's mean is 0 (a phase shorter than a counter's update interval).
  const auto ratio = [](const en::Summary& a, const en::Summary& bs) {
    return bs.mean > 0 ? en::ratio_json(en::ratio_of_means(a, bs)) : json(nullptr);
  };
  for (auto& m : methods) {
    if (m["status"] != "ok") continue;
    json sv;
    for (const std::string ph : {"prefill", "decode", "post", "total"})
      sv["energy_per_token"][ph] = ratio(summary(m["phases"][ph]["joules_per_token"]), summary(b["phases"][ph]["joules_per_token"]));
    sv["latency"] = ratio(summary(m["phases"]["total"]["seconds"]), summary(b["phases"]["total"]["seconds"]));
    for (size_t i = 0; i < m["batch"].size() && i < b["batch"].size(); ++i)
      sv["batch_energy_per_token"][std::to_string(m["batch"][i]["batch"].get<int>())] =
          ratio(summary(m["batch"][i]["total"]["joules_per_token"]), summary(b["batch"][i]["total"]["joules_per_token"]));
    m["savings_vs_float32"] = sv;
  }
}

std::vector<std::vector<int32_t>> windows(const std::vector<int32_t>& stream, size_t& offset, int count, int len) {
  std::vector<std::vector<int32_t>> out;
  for (int k = 0; k < count; ++k) {
    if (offset + static_cast<size_t>(len) > stream.size())
      throw mq::UsageError(fmt::format("the test split has {} tokens; the prompts asked for need more (fewer trials or shorter prompts)", stream.size()));
    out.emplace_back(stream.begin() + static_cast<long>(offset), stream.begin() + static_cast<long>(offset + len));
    offset += static_cast<size_t>(len);
  }
  return out;
}

}  // namespace

bool method_is_baseline(const std::string& method) { return scheme_for_method(method) == "fp32"; }

const std::vector<std::string>& default_energy_methods() {
  static const std::vector<std::string> k = {"float32", "float16", "bfloat16", "int8", "int8_dynamic", "int4-g64", "int4-g64+a8"};
  return k;
}

const std::vector<std::string>& default_gpt2_energy_methods() {
  static const std::vector<std::string> k = {"float32", "int8", "int8_dynamic", "int4-g64+a8"};
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

void validate(const EnergyOptions& o) {
  if (o.trials < 2) throw mq::UsageError(fmt::format("--trials {}: need at least 2 for an interval", o.trials));
  if (o.warmup < 0) throw mq::UsageError(fmt::format("--warmup {}: must be >= 0", o.warmup));
  if (o.prompt_tokens < 1) throw mq::UsageError(fmt::format("--prompt-tokens {}: must be >= 1", o.prompt_tokens));
  if (o.gen_tokens < 2) throw mq::UsageError(fmt::format("--gen-tokens {}: must be >= 2", o.gen_tokens));
  if (o.batch.empty()) throw mq::UsageError("--batch: need at least one size");
  for (int b : o.batch)
    if (b < 1 || b > 1024) throw mq::UsageError(fmt::format("--batch {}: sizes must be in [1, 1024]", b));
  if (o.batch_prompt < 1 || o.batch_steps < 1) throw mq::UsageError("--batch-prompt and --batch-steps must be >= 1");
  if (o.meter != "auto" && o.meter != "rapl" && o.meter != "perf" && o.meter != "model")
    throw mq::UsageError(fmt::format("--meter {}: expected auto, rapl, perf or model", o.meter));
  // Methods are found by name (trial folders, savings, the report): a map needs a name of its own.
  std::set<std::string> names;
  for (const auto& m : o.methods.empty() ? default_energy_methods() : o.methods) names.insert(m);
  for (const auto& p : o.quant_maps)
    if (!names.insert(p.id).second)
      throw mq::UsageError(fmt::format("--quant-map: config_id '{}' is already a method's name; methods need unique names",
                                       mq::clip_text(p.id)));
}

EnergyRun run_energy(const EnergyOptions& o, const EnergyProgress& progress) {
  validate(o);
  en::Selection sel = en::select_meter(o.meter, o.roots);
  if (o.calibrate && !sel.meter->measured())
    throw mq::Error(fmt::format("--calibrate needs a real energy meter (RAPL or the perf power PMU) and this machine has "
                                "none: {}", sel.warning));
  const int threads = omp_get_max_threads();
  EnergyRun run;
  run.summary = {{"energy_source", sel.meter->source()}, {"measured", sel.meter->measured()}, {"warning", sel.warning},
                 {"hardware", en::hardware_json(sel.probes, threads)}};
  if (!sel.meter->measured()) {
    const auto* mm = dynamic_cast<const en::ModelMeter*>(sel.meter.get());
    run.summary["model_coefficients"] = en::coefficients_json(mm->coefficients());
    run.summary["model_coefficients"]["file"] = mm->coefficients().file;
  }
  if (!sel.warning.empty()) progress("WARNING: " + sel.warning);

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
    if (!o.gpt2) break;
  }

  const std::vector<int32_t> test = minigpt::encode_split(c.tok, c.corpus.test);
  Shared s{o, *sel.meter, {}, c.tok, c.corpus, c, mc.n_ctx, {}, {}, {}, {}, {}};
  s.wc.caches = mq::cpu_info().caches;
  s.wc.threads = threads;
  s.ppl_stream = test;
  if (o.ppl_tokens > 0 && o.ppl_tokens < static_cast<int64_t>(test.size())) s.ppl_stream.resize(static_cast<size_t>(o.ppl_tokens));
  size_t off = 0;
  s.trial_prompts = windows(test, off, o.trials, o.prompt_tokens);
  s.warm_prompts = windows(test, off, o.warmup, o.prompt_tokens);
  s.batch_prompts = windows(test, off, *std::max_element(o.batch.begin(), o.batch.end()), o.batch_prompt);

  std::vector<Subject> subjects;
  std::vector<std::string> minigpt_methods = o.methods.empty() ? default_energy_methods() : o.methods;
  for (const auto& p : o.quant_maps) minigpt_methods.push_back(p.id);
  subjects.push_back({"minigpt", "", [&] { return std::make_unique<minigpt::Model>(load_checkpoint(o.model, &c.tok).model); },
                      true, minigpt_methods});
  if (o.gpt2)
    subjects.push_back({"gpt2_small_shaped", "@gpt2-small-shaped", [&] { return std::make_unique<minigpt::Model>(gc, o.seed); },
                        false, o.gpt2_methods.empty() ? default_gpt2_energy_methods() : o.gpt2_methods});
  for (const auto& sub : subjects) {
    json methods = json::array();
    std::vector<std::vector<int32_t>> reference;
    // float32 first, so every other method's greedy tokens can be compared with it.
    std::vector<std::string> order = sub.methods;
    std::stable_partition(order.begin(), order.end(), [](const std::string& m) { return method_is_baseline(m); });
    const bool has_ref = !order.empty() && method_is_baseline(order.front());
    for (const auto& m : order) {
      json r = run_method(sub, m, s, has_ref ? &reference : nullptr, progress);
      if (r["status"] != "ok") ++run.failed;
      if (has_ref && method_is_baseline(m) && r["status"] != "ok") reference.clear();
      ++run.methods;
      methods.push_back(r);
    }
    add_savings(methods);
    json cfg = sub.key == "minigpt" ? json{{"checkpoint", o.model}} : json{{"weights", "random (GPT-2 initialisation, seed 42)"}};
    const minigpt::ModelConfig& k = sub.key == "minigpt" ? mc : gc;
    cfg["config"] = {{"vocab_size", k.vocab_size}, {"n_ctx", k.n_ctx}, {"d_model", k.d_model}, {"n_layer", k.n_layer},
                     {"n_head", k.n_head}, {"d_ff", k.d_ff}};
    run.summary["models"][sub.key] = cfg;
    run.summary["models"][sub.key]["methods"] = methods;
  }
  if (o.calibrate) {
    const en::Coefficients prior = en::load_coefficients(o.roots.coefficients);
    const en::Calibration cal = en::calibrate(s.samples, prior);
    run.calibration = en::coefficients_json(cal.fitted);
    run.calibration["fit"] = {{"samples", s.samples.size()}, {"rms_relative_error", cal.rms_relative_error},
                              {"notes", cal.notes}, {"meter", sel.meter->source()}, {"cpu_model", mq::cpu_info().model}};
  }
  return run;
}

std::vector<std::pair<std::string, json>> trial_fields(const json& t) {
  std::vector<std::pair<std::string, json>> f;
  for (const char* k : {"model", "method", "scheme", "kind", "index", "energy_source", "measured", "prompt_tokens", "gen_tokens",
                        "greedy_agreement_with_float32"})
    f.emplace_back(k, t.at(k));
  for (const std::string ph : {"prefill", "decode", "post", "total"})
    for (const char* k : {"joules", "joules_per_token", "seconds", "watts", "tokens", "tokens_per_s"})
      f.emplace_back(ph + "_" + k, t.at("phases").at(ph).at(k));
  for (const auto& b : t.at("batch")) {
    const std::string p = fmt::format("batch{}_", b.at("batch").get<int>());
    f.emplace_back(p + "joules_per_token", b.at("total").at("joules_per_token"));
    f.emplace_back(p + "decode_joules_per_token", b.at("decode").at("joules_per_token"));
    f.emplace_back(p + "tokens_per_s", b.at("decode").at("tokens_per_s"));
  }
  return f;
}

std::string trial_csv(const json& t) {
  std::string head, row;
  bool first = true;
  for (const auto& [k, v] : trial_fields(t)) {
    head += (first ? "" : ",") + k;
    std::string cell = v.is_null() ? "" : v.is_string() ? v.get<std::string>() : v.dump();
    if (cell.find_first_of(",\"\n") != std::string::npos) {
      std::string q = "\"";
      for (char ch : cell) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      cell = q + "\"";
    }
    row += (first ? "" : ",") + cell;
    first = false;
  }
  return head + "\n" + row + "\n";
}

}  // namespace mqexp
