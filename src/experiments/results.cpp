// JSON of the typed results: the layout results.json has always had, written and read in one place.
#include "experiments/results.h"

#include "experiments/method_compare.h"

#include <fmt/core.h>

#include "experiments/intervals.h"
#include "minigpt/corpus/generalization.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"

namespace mqexp {

using nlohmann::json;

RateStat RateStat::of(const mq::Timing& t, double work_per_call) {
  const mq::Rate r = mq::rate_of(work_per_call, t);
  return {r.median, r.low, r.high, r.reps, t.spread()};
}

const SchemeRow* SweepResults::find(const std::string& scheme) const {
  for (const auto& r : schemes)
    if (r.scheme == scheme && r.ok) return &r;
  return nullptr;
}

namespace {

json rate_json(const RateStat& r) {
  return {{"median", r.median}, {"low", r.low}, {"high", r.high}, {"reps", r.reps}, {"spread", r.spread}};
}
RateStat rate_from(const json& j) {
  return {j.at("median").get<double>(), j.at("low").get<double>(), j.at("high").get<double>(), j.at("reps").get<int>(),
          j.value("spread", 0.0)};
}
// ci95: the Wilson interval, derived from correct / total (written for readers; recomputed on read).
json score_json(const Score& s) {
  const Interval w = wilson(s.correct, s.total);
  return {{"correct", s.correct}, {"total", s.total}, {"accuracy", s.accuracy()}, {"ci95", {w.low, w.high}}};
}
Score score_from(const json& j) { return {j.at("correct").get<long long>(), j.at("total").get<long long>()}; }

json shape_json(const ModelShape& c) {
  return {{"vocab_size", c.vocab_size}, {"n_ctx", c.n_ctx}, {"d_model", c.d_model},
          {"n_layer", c.n_layer},       {"n_head", c.n_head}, {"d_ff", c.d_ff}};
}
ModelShape shape_from(const json& j) {
  return {j.at("vocab_size").get<int>(), j.at("n_ctx").get<int>(), j.at("d_model").get<int>(),
          j.at("n_layer").get<int>(),    j.at("n_head").get<int>(), j.at("d_ff").get<int>()};
}

json margin_json(const MarginStats& m) { return {{"slots", m.slots}, {"median", m.median}, {"p1", m.p1}, {"min", m.min}}; }
MarginStats margin_from(const json& j) {
  return {j.at("slots").get<long long>(), j.at("median").get<double>(), j.at("p1").get<double>(), j.at("min").get<double>()};
}

json paired_json(const PairedDifference& p) {
  return {{"items", p.n}, {"only_model", p.only_a}, {"only_reference", p.only_b}, {"diff", p.diff},
          {"ci95", {p.low, p.high}}, {"p_mcnemar", p.p_value}};
}
PairedDifference paired_from(const json& j) {
  PairedDifference p;
  p.n = j.at("items").get<long long>();
  p.only_a = j.at("only_model").get<long long>();
  p.only_b = j.at("only_reference").get<long long>();
  p.diff = j.at("diff").get<double>();
  p.low = j.at("ci95").at(0).get<double>();
  p.high = j.at("ci95").at(1).get<double>();
  p.p_value = j.at("p_mcnemar").get<double>();
  return p;
}

json divergence_json(const Divergence& d) {
  json j = {{"reference", d.reference},
          {"tokens", d.tokens},
          {"windows", d.windows},
          {"kl", {{"mean", d.kl_mean}, {"ci95", {d.kl_low, d.kl_high}}, {"median", d.kl_median}, {"p99", d.kl_p99}, {"max", d.kl_max}}},
          {"top1_agreement", d.top1},
          {"next_token_top1", d.next_token_top1},
          {"next_token_top1_reference", d.next_token_top1_reference},
          {"ppl_reference", d.ppl_reference},
          {"delta_nll", {{"mean", d.dnll_mean}, {"ci95", {d.dnll_low, d.dnll_high}}}},
          {"delta_ppl", {{"value", d.dppl}, {"ci95", {d.dppl_low, d.dppl_high}}}},
          {"margin_change", {{"slots", d.margin_slots}, {"mean", d.dmargin_mean}, {"ci95", {d.dmargin_low, d.dmargin_high}},
                             {"flipped_to_wrong", d.flipped_to_wrong}, {"flipped_to_right", d.flipped_to_right}}},
          {"seconds", d.seconds}};
  if (d.generalization_change) {
    json by = json::object();
    for (const auto& [k, p] : d.generalization_change_by_paradigm) by[k] = paired_json(p);
    j["generalization_change"] = paired_json(*d.generalization_change);
    j["generalization_change"]["by_paradigm"] = by;
  }
  return j;
}
Divergence divergence_from(const json& j) {
  Divergence d;
  d.reference = j.at("reference").get<std::string>();
  d.tokens = j.at("tokens").get<long long>();
  d.windows = j.at("windows").get<long long>();
  const json& kl = j.at("kl");
  d.kl_mean = kl.at("mean").get<double>();
  d.kl_low = kl.at("ci95").at(0).get<double>();
  d.kl_high = kl.at("ci95").at(1).get<double>();
  d.kl_median = kl.at("median").get<double>();
  d.kl_p99 = kl.at("p99").get<double>();
  d.kl_max = kl.at("max").get<double>();
  d.top1 = j.at("top1_agreement").get<double>();
  d.next_token_top1 = j.value("next_token_top1", 0.0);  // absent in results written before it existed
  d.next_token_top1_reference = j.value("next_token_top1_reference", 0.0);
  d.ppl_reference = j.at("ppl_reference").get<double>();
  const json& n = j.at("delta_nll");
  d.dnll_mean = n.at("mean").get<double>();
  d.dnll_low = n.at("ci95").at(0).get<double>();
  d.dnll_high = n.at("ci95").at(1).get<double>();
  const json& p = j.at("delta_ppl");
  d.dppl = p.at("value").get<double>();
  d.dppl_low = p.at("ci95").at(0).get<double>();
  d.dppl_high = p.at("ci95").at(1).get<double>();
  const json& m = j.at("margin_change");
  d.margin_slots = m.at("slots").get<long long>();
  d.dmargin_mean = m.at("mean").get<double>();
  d.dmargin_low = m.at("ci95").at(0).get<double>();
  d.dmargin_high = m.at("ci95").at(1).get<double>();
  d.flipped_to_wrong = m.value("flipped_to_wrong", 0LL);
  d.flipped_to_right = m.value("flipped_to_right", 0LL);
  d.seconds = j.value("seconds", 0.0);
  if (j.contains("generalization_change")) {
    const json& g = j.at("generalization_change");
    d.generalization_change = paired_from(g);
    for (const auto& [k, v] : g.at("by_paradigm").items()) d.generalization_change_by_paradigm[k] = paired_from(v);
  }
  return d;
}

}  // namespace

json to_json(const Generalization& g) {
  json by = json::object();
  for (const auto& [k, s] : g.by_paradigm) by[k] = score_json(s);
  json scored = json::array();  // for readers of the JSON alone (the plots): which paradigms "overall" counts
  for (int p = 0; p < minigpt::kNumParadigms; ++p)
    if (minigpt::paradigm_scored(static_cast<minigpt::Paradigm>(p))) scored.push_back(minigpt::paradigm_name(static_cast<minigpt::Paradigm>(p)));
  return {{"split", g.split}, {"scored_paradigms", scored}, {"overall", score_json(g.overall)}, {"diagnostic", score_json(g.diagnostic)}, {"by_paradigm", by},
          {"margin", margin_json(g.margin)},
          {"skipped_unknown_form", g.skipped_unknown_form}, {"skipped_too_long", g.skipped_too_long}, {"seconds", g.seconds},
          {"answers", g.answers}};
}
Generalization generalization_from_json(const json& j) {
  Generalization g;
  g.split = j.at("split").get<std::string>();
  g.overall = score_from(j.at("overall"));
  g.diagnostic = score_from(j.at("diagnostic"));
  for (const auto& [k, v] : j.at("by_paradigm").items()) g.by_paradigm[k] = score_from(v);
  g.margin = margin_from(j.at("margin"));
  g.skipped_unknown_form = j.value("skipped_unknown_form", 0LL);
  g.skipped_too_long = j.value("skipped_too_long", 0LL);
  g.seconds = j.value("seconds", 0.0);
  if (j.contains("answers"))
    for (const auto& [k, v] : j.at("answers").items()) {
      std::string a = v.get<std::string>();
      for (char ch : a)
        if (ch != '0' && ch != '1' && ch != '-')
          throw mq::Error(fmt::format("generalization.answers.{} holds a character other than 0, 1 and -", mq::clip_text(k)));
      g.answers[k] = std::move(a);
    }
  return g;
}

json to_json(const SchemeRow& r) {
  json j = {{"scheme", r.scheme}};
  if (!r.storage_scheme.empty()) j["storage_scheme"] = r.storage_scheme;
  if (!r.method.empty()) j["method"] = r.method;
  if (!r.ok) {
    j["status"] = "failed";
    j["error"] = r.error;
    j["on_pareto_frontier"] = false;
    return j;
  }
  j["status"] = "ok";
  if (r.method != "") j["quantize_seconds"] = r.quantize_seconds;
  if (r.gptq)
    j["gptq"] = {{"calibration_windows", r.gptq->calibration_windows}, {"percdamp", r.gptq->percdamp},
                 {"block", r.gptq->block}, {"act_order", r.gptq->act_order}, {"sequential", r.gptq->sequential},
                 {"calibration_seconds", r.gptq->calibration_seconds}};
  if (const auto& q = r.quality) {
    j["ppl"] = q->ppl;
    j["nats_per_token"] = q->nats_per_token;
    j["ppl_floor"] = q->ppl_floor;
    j["test_tokens"] = q->test_tokens;
    j["ppl_window"] = q->window;
    j["ppl_stride"] = q->stride;
    j["perplexity_seconds"] = q->perplexity_seconds;
    json by = json::object();
    for (const auto& [k, s] : q->by_construction) by[k] = score_json(s);
    j["verb_tense_accuracy"] = q->verb_tense.accuracy();
    j["verb_tense"] = {{"overall", score_json(q->verb_tense)}, {"by_construction", by},
                       {"skipped_unknown_form", q->skipped_unknown_form}, {"skipped_too_long", q->skipped_too_long}};
    j["verb_tense_seconds"] = q->verb_tense_seconds;
    if (q->margin.slots > 0) {
      json mb = json::object();
      for (const auto& [k, m] : q->margin_by_construction) mb[k] = margin_json(m);
      j["verb_tense"]["margin"] = {{"overall", margin_json(q->margin)}, {"by_construction", mb}};
    }
    if (q->divergence) j["divergence"] = divergence_json(*q->divergence);
    if (q->generalization) {
      j["generalization_accuracy"] = q->generalization->overall.accuracy();
      j["generalization"] = to_json(*q->generalization);
    }
  }
  const Footprint& f = r.footprint;
  const Traffic& t = f.decode;
  j["bytes"] = f.bytes;
  j["bytes_linear"] = f.bytes_linear;
  j["bytes_embedding"] = f.bytes_embedding;
  j["bytes_other"] = f.bytes_other;
  j["linear_weights"] = f.linear_weights;
  j["bits_per_weight"] = f.bits_per_weight;
  j["embedding_format"] = f.embedding_format;
  j["decode_traffic"] = {{"context", t.context},
                         {"flops", t.flops},
                         {"bytes", {{"weights", t.weights}, {"embedding", t.embedding}, {"other_params", t.other_params},
                                    {"activations", t.activations}, {"kv_cache", t.kv_cache}, {"total", t.total}}},
                         {"intensity", t.intensity}};
  if (const auto& s = r.speed) {
    j["threads"] = s->threads;
    j["decode_tokens_per_s"] = rate_json(s->decode_tokens_per_s);
    j["prefill_tokens_per_s"] = rate_json(s->prefill_tokens_per_s);
    j["decode_tokens_per_rep"] = s->decode_tokens_per_rep;
    j["prefill_prompt_tokens"] = s->prefill_prompt_tokens;
    j["decode_gflops"] = s->decode_gflops;
    j["decode_gbps"] = s->decode_gbps;
    j["load_average"] = {{"before", s->load_before}, {"after", s->load_after}, {"busy", s->busy}};
    if (const auto& b = s->roofline)
      j["roofline"] = {{"ceiling", b->ceiling}, {"level", b->level}, {"attainable_gflops", b->attainable_gflops},
                       {"fraction_of_bound", b->fraction_of_bound}, {"level_bandwidth_gbps", b->level_bandwidth_gbps}};
  }
  if (const auto& c = r.vs_baseline) {
    j["ppl_over_baseline"] = c->ppl_over_baseline;
    j["decode_speedup"] = c->decode_speedup;
    j["prefill_speedup"] = c->prefill_speedup;
    j["bytes_ratio"] = c->bytes_ratio;
  }
  j["on_pareto_frontier"] = r.on_pareto_frontier;
  return j;
}

SchemeRow scheme_row_from_json(const json& j) {
  SchemeRow r;
  r.scheme = j.at("scheme").get<std::string>();
  r.storage_scheme = j.value("storage_scheme", "");
  r.method = j.value("method", "");
  r.ok = j.value("status", "") == "ok";
  r.on_pareto_frontier = j.value("on_pareto_frontier", false);
  if (!r.ok) {
    r.error = j.value("error", "");
    return r;
  }
  r.quantize_seconds = j.value("quantize_seconds", 0.0);
  if (j.contains("gptq")) {
    const json& g = j.at("gptq");
    r.gptq = GptqRecord{g.at("calibration_windows").get<int>(), g.at("percdamp").get<double>(), g.at("block").get<long long>(),
                        g.at("act_order").get<bool>(), g.at("sequential").get<bool>(), g.value("calibration_seconds", 0.0)};
  }
  if (j.contains("ppl")) {
    Quality q;
    q.ppl = j.at("ppl").get<double>();
    q.nats_per_token = j.at("nats_per_token").get<double>();
    q.ppl_floor = j.at("ppl_floor").get<double>();
    q.test_tokens = j.at("test_tokens").get<long long>();
    q.window = j.value("ppl_window", 0);
    q.stride = j.value("ppl_stride", 0);
    q.perplexity_seconds = j.value("perplexity_seconds", 0.0);
    const json& vt = j.at("verb_tense");
    q.verb_tense = score_from(vt.at("overall"));
    for (const auto& [k, v] : vt.at("by_construction").items()) q.by_construction[k] = score_from(v);
    q.skipped_unknown_form = vt.value("skipped_unknown_form", 0LL);
    q.skipped_too_long = vt.value("skipped_too_long", 0LL);
    q.verb_tense_seconds = j.value("verb_tense_seconds", 0.0);
    if (vt.contains("margin")) {
      q.margin = margin_from(vt.at("margin").at("overall"));
      for (const auto& [k, v] : vt.at("margin").at("by_construction").items()) q.margin_by_construction[k] = margin_from(v);
    }
    if (j.contains("divergence")) q.divergence = divergence_from(j.at("divergence"));
    if (j.contains("generalization")) q.generalization = generalization_from_json(j.at("generalization"));
    r.quality = q;
  }
  Footprint& f = r.footprint;
  f.bytes = j.at("bytes").get<long long>();
  f.bytes_linear = j.at("bytes_linear").get<long long>();
  f.bytes_embedding = j.at("bytes_embedding").get<long long>();
  f.bytes_other = j.at("bytes_other").get<long long>();
  f.linear_weights = j.at("linear_weights").get<long long>();
  f.bits_per_weight = j.at("bits_per_weight").get<double>();
  f.embedding_format = j.at("embedding_format").get<std::string>();
  const json& t = j.at("decode_traffic");
  const json& b = t.at("bytes");
  f.decode = {t.at("context").get<int>(),          t.at("flops").get<double>(),       b.at("weights").get<double>(),
              b.at("embedding").get<double>(),     b.at("other_params").get<double>(), b.at("activations").get<double>(),
              b.at("kv_cache").get<double>(),      b.at("total").get<double>(),        t.at("intensity").get<double>()};
  if (j.contains("decode_tokens_per_s")) {
    Speed s;
    s.threads = j.at("threads").get<int>();
    s.decode_tokens_per_s = rate_from(j.at("decode_tokens_per_s"));
    s.prefill_tokens_per_s = rate_from(j.at("prefill_tokens_per_s"));
    s.decode_tokens_per_rep = j.at("decode_tokens_per_rep").get<int>();
    s.prefill_prompt_tokens = j.at("prefill_prompt_tokens").get<int>();
    s.decode_gflops = j.at("decode_gflops").get<double>();
    s.decode_gbps = j.at("decode_gbps").get<double>();
    if (j.contains("load_average")) {
      s.load_before = j.at("load_average").at("before").get<double>();
      s.load_after = j.at("load_average").at("after").get<double>();
      s.busy = j.at("load_average").at("busy").get<bool>();
    }
    if (j.contains("roofline")) {
      const json& rf = j.at("roofline");
      s.roofline = RooflinePoint{rf.at("ceiling").get<std::string>(), rf.at("level").get<std::string>(),
                                 rf.at("attainable_gflops").get<double>(), rf.at("fraction_of_bound").get<double>(),
                                 rf.at("level_bandwidth_gbps").get<double>()};
    }
    r.speed = s;
  }
  if (j.contains("ppl_over_baseline"))
    r.vs_baseline = Comparison{j.at("ppl_over_baseline").get<double>(), j.at("decode_speedup").get<double>(),
                               j.at("prefill_speedup").get<double>(), j.at("bytes_ratio").get<double>()};
  return r;
}

std::vector<BaselineRow> baseline_rows(const std::vector<minigpt::BaselineScore>& b) {
  std::vector<BaselineRow> out;
  for (const auto& x : b) {
    BaselineRow r{x.name, x.rule, {x.overall.correct, x.overall.total}, {}};
    for (int k = 0; k < minigpt::kNumConstructions; ++k) {
      const auto& s = x.by_kind[static_cast<size_t>(k)];
      r.by_construction[minigpt::construction_name(static_cast<minigpt::Construction>(k))] = {s.correct, s.total};
    }
    out.push_back(std::move(r));
  }
  return out;
}

json to_json(const BaselineRow& b) {
  json by = json::object();
  for (const auto& [k, s] : b.by_construction) by[k] = score_json(s);
  return {{"name", b.name}, {"rule", b.rule}, {"overall", score_json(b.overall)}, {"by_construction", by}};
}

BaselineRow baseline_row_from_json(const json& j) {
  BaselineRow b{j.at("name").get<std::string>(), j.value("rule", ""), score_from(j.at("overall")), {}};
  for (const auto& [k, v] : j.at("by_construction").items()) b.by_construction[k] = score_from(v);
  return b;
}

json to_json(const SweepResults& r) {
  json rows = json::array();
  for (const auto& s : r.schemes) rows.push_back(to_json(s));
  json j = {{"baseline", r.baseline}, {"seed", r.seed}, {"calibration_windows", r.calibration_windows}, {"schemes", rows}};
  if (r.gpt2_config) {
    json g = json::array();
    for (const auto& s : r.gpt2_schemes) g.push_back(to_json(s));
    j["gpt2_small_shaped"] = {{"config", shape_json(*r.gpt2_config)}, {"weights", r.gpt2_weights}, {"schemes", g}};
  }
  if (!r.ceilings_file.empty()) j["ceilings_file"] = r.ceilings_file;
  if (!r.baselines.empty()) {
    j["baselines"] = json::array();
    for (const auto& b : r.baselines) j["baselines"].push_back(to_json(b));
  }
  if (!r.activation_outliers.empty()) j["activation_outliers"] = r.activation_outliers;
  if (!r.method_comparisons.empty()) {
    j["method_comparisons"] = json::array();
    for (const auto& c : r.method_comparisons) j["method_comparisons"].push_back(to_json(c));
  }
  return j;
}

SweepResults sweep_results_from_json(const json& j, const std::string& file) {
  try {
    SweepResults r;
    r.baseline = j.at("baseline").get<std::string>();
    r.seed = j.value("seed", 42ULL);
    r.calibration_windows = j.value("calibration_windows", 0);
    for (const auto& s : j.at("schemes")) r.schemes.push_back(scheme_row_from_json(s));
    if (j.contains("gpt2_small_shaped")) {
      const json& g = j.at("gpt2_small_shaped");
      r.gpt2_config = shape_from(g.at("config"));
      r.gpt2_weights = g.value("weights", "");
      for (const auto& s : g.at("schemes")) r.gpt2_schemes.push_back(scheme_row_from_json(s));
    }
    r.ceilings_file = j.value("ceilings_file", "");
    if (j.contains("baselines"))
      for (const auto& b : j.at("baselines")) r.baselines.push_back(baseline_row_from_json(b));
    if (j.contains("activation_outliers")) r.activation_outliers = j.at("activation_outliers").get<std::map<std::string, double>>();
    if (j.contains("method_comparisons"))
      for (const auto& c : j.at("method_comparisons")) r.method_comparisons.push_back(method_comparison_from_json(c));
    return r;
  } catch (const json::exception& e) {
    mq::throw_json_access_error(file, e);
  }
}

}  // namespace mqexp
