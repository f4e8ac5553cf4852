#include "experiments/mixed_answers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/core.h>

#include "experiments/energy_robust.h"
#include "experiments/energy_summary.h"
#include "experiments/epi.h"
#include "experiments/generalization_report.h"
#include "experiments/results.h"
#include "miniquant/energy/select.h"
#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"
#include "minigpt/quant_plan.h"

namespace mqexp {
namespace {

using json = nlohmann::json;
namespace en = mq::energy;

const std::string& kBase = kMixedBase;
const char* const kGroupNames[] = {"early", "middle", "late"};

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

std::string rtext(const en::Ratio& r) { return fmt::format("{:.3f} [{:.3f}, {:.3f}]", r.ratio, r.low, r.high); }

// What the answers read of one measured configuration.
struct Cfg {
  std::string id, kind;
  double acc = 0, ppl = 0, dppl_half = 0, bytes = 0, kld = 0;
  std::string answers;  // the generalization benchmark's per-item answers (scored paradigms), for paired accuracy
  minigpt::QuantPlan plan;
};

std::vector<Cfg> measured(const json& configs, const EnergySetData& e) {
  std::vector<Cfg> v;
  const auto& have = e.rounds.results.at("generation");
  for (const auto& c : configs) {
    const std::string id = c["config_id"];
    if (!have.count(id)) continue;
    Cfg x;
    x.id = id;
    x.kind = c["kind"];
    x.acc = c["accuracy"].get<double>();
    if (c["row"].contains("generalization")) x.answers = scored_answers(generalization_from_json(c["row"]["generalization"]));
    x.ppl = c["row"]["ppl"].get<double>();
    const json& ci = c["row"]["divergence"]["delta_ppl"]["ci95"];
    x.dppl_half = (ci[1].get<double>() - ci[0].get<double>()) / 2;
    x.bytes = c["row"]["bytes"].get<double>();
    x.kld = c["row"]["divergence"]["kl"]["mean"].get<double>();
    x.plan = minigpt::QuantPlan::from_json(c["plan"], id);
    v.push_back(std::move(x));
  }
  return v;
}

double jmean(const EnergySetData& e, const std::string& id, const Pricing& p = {}) { return mean_of(priced_series(e.rounds, "generation", id, "total", p)); }
en::Ratio jratio(const EnergySetData& e, const std::string& a, const std::string& b, const Pricing& p = {}, const std::string& ph = "total") {
  return paired(e.rounds, "generation", a, b, ph, p);
}
// EPI_a / EPI_b = (J_a / J_b) (acc_b / acc_a): the accuracies are deterministic, so the interval scales with them.
en::Ratio epi_ratio(const EnergySetData& e, const Cfg& a, const Cfg& b, const Pricing& p = {}) {
  const en::Ratio r = jratio(e, a.id, b.id, p);
  const double f = b.acc / a.acc;
  return {r.ratio * f, r.low * f, r.high * f};
}
int direction(const en::Ratio& r) { return r.high < 1 ? -1 : r.low > 1 ? 1 : 0; }

const Cfg* find(const std::vector<Cfg>& v, const std::string& id) {
  for (const auto& c : v)
    if (c.id == id) return &c;
  return nullptr;
}

// The configurations as epi.h's frontier sees them, under a pricing.
std::vector<EpiPoint> points(const EnergySetData& e, const std::vector<Cfg>& cs, const Pricing& p) {
  std::vector<EpiPoint> v;
  for (const Cfg& c : cs) v.push_back({c.id, c.acc, priced_series(e.rounds, "generation", c.id, "total", p), c.answers});
  return v;
}

// The accuracy-vs-J/token frontier (epi_frontier: paired intervals decide "cheaper").
std::vector<std::string> frontier(const EnergySetData& e, const std::vector<Cfg>& cs, const Pricing& p) { return epi_frontier(points(e, cs, p)); }

// The EPI-optimal configuration under a pricing (lowest mean J / accuracy).
const Cfg* epi_best(const EnergySetData& e, const std::vector<Cfg>& cs, const Pricing& p) { return find(cs, epi_optimal(points(e, cs, p))); }

int bits_of(const minigpt::LinearRecipe& r) { return r.scheme.bits; }

// Which Linears two plans give different recipes, as one label when they all share a layer group
// ("group early") or a tensor kind ("kind mlp_down"); "" when they differ more widely (or not at all).
std::string single_difference(const minigpt::QuantPlan& a, const minigpt::QuantPlan& b, int n_layer, std::string* ra, std::string* rb) {
  std::set<int> groups, kinds;
  int n = 0;
  for (int l = 0; l < n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k) {
      const auto kind = static_cast<minigpt::LinearKind>(k);
      const minigpt::LinearRecipe x = a.recipe_for(l, kind), y = b.recipe_for(l, kind);
      if (x == y) continue;
      ++n;
      groups.insert(l == 0 ? 0 : l == n_layer - 1 ? 2 : 1);
      kinds.insert(k);
      *ra = x.name();
      *rb = y.name();
    }
  if (n == 0) return "";
  if (groups.size() == 1) return std::string("group ") + kGroupNames[*groups.begin()];
  if (kinds.size() == 1) return std::string("kind ") + minigpt::linear_kind_name(static_cast<minigpt::LinearKind>(*kinds.begin()));
  return "";
}

// Mean seconds and work of a configuration's phase over the rounds.
struct PhaseMean {
  double seconds = 0;
  en::Work work;
};
PhaseMean phase_mean(const EnergySetData& e, const std::string& id, const std::string& ph) {
  PhaseMean m;
  const auto& ms = e.rounds.of("generation", id);
  for (const Measurement& x : ms) {
    m.seconds += x.phase(ph).seconds / static_cast<double>(ms.size());
    m.work += x.phase(ph).work.scaled(1.0 / static_cast<double>(ms.size()));
  }
  return m;
}

// fp32's modelled energy minus the configuration's, per phase and per generated token, split into the
// model's terms: time (static power x seconds), arithmetic (operations) and bytes (per level, summed).
struct Saving {
  double time = 0, arithmetic = 0, bytes = 0;
  double total() const { return time + arithmetic + bytes; }
  const char* dominant() const {
    const double t = std::abs(time), a = std::abs(arithmetic), b = std::abs(bytes);
    return t >= a && t >= b ? "time (static power)" : b >= a ? "bytes moved" : "arithmetic";
  }
};
Saving saving_of(const EnergySetData& e, const std::string& id, const std::string& ph, const en::Coefficients& c) {
  const PhaseMean b = phase_mean(e, kBase, ph), x = phase_mean(e, id, ph);
  const en::ModelBreakdown mb = en::model_energy(c, b.seconds, b.work), mx = en::model_energy(c, x.seconds, x.work);
  Saving s;
  s.time = mb.static_j - mx.static_j;
  s.arithmetic = mb.compute_j - mx.compute_j;
  for (int l = 0; l < en::kLevels; ++l) s.bytes += mb.level_j[l] - mx.level_j[l];
  return s;
}

// The most common dominant term of the quantized configurations' savings in a phase.
std::string dominant_term(const EnergySetData& e, const std::vector<Cfg>& cs, const std::string& ph, const en::Coefficients& c) {
  std::map<std::string, int> votes;
  for (const Cfg& x : cs)
    if (x.id != kBase) ++votes[saving_of(e, x.id, ph, c).dominant()];
  std::string best;
  int n = -1;
  for (const auto& [k, v] : votes)
    if (v > n) best = k, n = v;
  return best;
}

}  // namespace

std::optional<en::Coefficients> energy_coefficients(const MixedOptions& o) { return en::load_coefficients(o.roots.coefficients); }

json mixed_energy_json(const EnergySetData& e, const std::string& set, json& configs) {
  const auto& have = e.rounds.results.at("generation");
  for (auto& c : configs) {
    const std::string id = c["config_id"];
    if (!have.count(id)) continue;
    json en_j = {{"rounds", e.rounds.rounds}};
    for (const char* ph : {"prefill", "decode", "post", "total"}) {
      const std::vector<double> v = e.rounds.series("generation", id, ph, "joules_per_token");
      json sj = en::summary_json(en::summarize_trials(v));
      sj["values"] = v;
      en_j["joules_per_token"][ph] = sj;
      if (id != kBase) en_j["vs_fp32"][ph] = en::ratio_json(jratio(e, id, kBase, {}, ph));
    }
    for (const char* ph : {"prefill", "decode"})
      en_j["tokens_per_s"][ph] = en::summary_json(en::summarize_trials(e.rounds.series("generation", id, ph, "tokens_per_s")));
    en_j["watts"] = en::summary_json(en::summarize_trials(e.rounds.series("generation", id, "total", "watts")));
    const double j = jmean(e, id), acc = c["accuracy"].get<double>();
    c["energy"] = en_j;
    c["joules_per_token"] = j;
    c["epi"] = acc > 0 ? json(j / acc) : json(nullptr);
  }
  json out = {{"set", set}, {"rounds", e.rounds.rounds}, {"expected_rounds", e.expected_rounds}, {"round_indices", e.round_indices},
              {"machines", e.machines}, {"energy_source", e.energy_source}, {"measured", e.measured},
              {"design", "paired interleaved rounds: every configuration once per round in one process, order drawn at random each "
                         "round (seed 42); comparisons are medians of the per-round ratios with the 95% sign-test "
                         "interval (a disturbed round cannot drag them)"}};
  if (have.count(kMixedControl)) {
    const en::Ratio r = jratio(e, kMixedControl, kBase);
    out["control"] = {{"name", kMixedControl}, {"of", kBase}, {"ratio", r.ratio}, {"low", r.low}, {"high", r.high},
                      {"contains_one", r.low <= 1 && r.high >= 1}, {"within_3_percent", r.low >= 0.97 && r.high <= 1.03}};
    out["control"]["passes"] = control_passes(r);
  }
  // The source's matrix names one allocation twice: measured as two configurations, a second control.
  if (have.count("mix_high_middle") && have.count("mix_bookend_low")) {
    const en::Ratio r = jratio(e, "mix_high_middle", "mix_bookend_low");
    out["natural_control"] = {{"a", "mix_high_middle"}, {"b", "mix_bookend_low"}, {"ratio", r.ratio}, {"low", r.low}, {"high", r.high},
                              {"contains_one", r.low <= 1 && r.high >= 1}};
  }
  return out;
}

json mixed_answers(const json& configs, const EnergySetData& e, const en::Coefficients* coeffs, const json& sensitivity, int n_layer) {
  const std::vector<Cfg> cs = measured(configs, e);
  const Cfg* base = find(cs, kBase);
  if (!base) throw mq::Error("mixed answers: the fp32 baseline has no energy rounds");
  std::unique_ptr<CoefficientBox> box;
  if (coeffs && !e.measured) box = std::make_unique<CoefficientBox>(make_box(*coeffs));
  std::vector<Statement> st;
  json out;

  // RQ1: perplexity-matched pairs and their paired EPI ratio.
  struct Pair {
    const Cfg *a, *b;
    en::Ratio epi, j;
  };
  std::vector<Pair> pairs;
  for (size_t i = 0; i < cs.size(); ++i)
    for (size_t k = i + 1; k < cs.size(); ++k)
      if (std::abs(cs[i].ppl - cs[k].ppl) < std::max(cs[i].dppl_half, cs[k].dppl_half))
        pairs.push_back({&cs[i], &cs[k], epi_ratio(e, cs[i], cs[k]), jratio(e, cs[i].id, cs[k].id)});
  std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) { return std::abs(std::log(x.epi.ratio)) > std::abs(std::log(y.epi.ratio)); });
  json pj = json::array();
  int differ = 0;
  for (const Pair& p : pairs) differ += direction(p.epi) != 0;
  for (size_t i = 0; i < pairs.size() && i < 40; ++i) {
    const Pair& p = pairs[i];
    pj.push_back({{"a", p.a->id}, {"b", p.b->id}, {"ppl_a", p.a->ppl}, {"ppl_b", p.b->ppl}, {"joules_ratio", en::ratio_json(p.j)},
                  {"epi_ratio", en::ratio_json(p.epi)}, {"differ", direction(p.epi) != 0}});
  }
  out["pairs"] = pj;
  out["pairs_total"] = pairs.size();
  json rq1 = {{"pairs", pairs.size()}, {"differ", differ}};
  if (!pairs.empty() && direction(pairs.front().epi) != 0) {
    const Pair p = pairs.front();
    const int dir = direction(p.epi);
    rq1["largest"] = {{"a", p.a->id}, {"b", p.b->id}, {"epi_ratio", en::ratio_json(p.epi)}};
    rq1["answer"] = fmt::format("Yes: {} of {} perplexity-matched pairs differ in EPI beyond their paired 95% interval; the widest, {} / {} "
                                "(perplexity {:.3f} vs {:.3f}), has an EPI ratio of {}.", differ, pairs.size(), p.a->id, p.b->id, p.a->ppl,
                                p.b->ppl, rtext(p.epi));
    st.push_back({"rq1/" + p.a->id + "/" + p.b->id, fmt::format("RQ1: {} and {} have the same perplexity and {} EPI", p.a->id, p.b->id,
                                                               dir < 0 ? "the first has the lower" : "the first has the higher"),
                  [&e, a = *p.a, b = *p.b, dir](const Pricing& pr) {
                    const en::Ratio r = epi_ratio(e, a, b, pr);
                    return Verdict{direction(r) == dir, rtext(r)};
                  }});
  } else {
    rq1["answer"] = pairs.empty() ? "No perplexity-matched pairs among the measured configurations."
                                  : fmt::format("No: none of the {} perplexity-matched pairs differs in EPI beyond its paired interval.", pairs.size());
  }
  out["rq1"] = rq1;

  // RQ2: the accuracy-vs-J/token frontier.
  const std::vector<std::string> fr = frontier(e, cs, {});
  json rq2 = {{"frontier", json::array()}};
  std::vector<std::string> mixed_on, uniform_on;
  for (const auto& id : fr) {
    const Cfg* c = find(cs, id);
    json f = {{"config_id", id}, {"kind", c->kind}, {"accuracy", c->acc}, {"joules_per_token", jmean(e, id)}};
    if (const Cfg* base = find(cs, kBase); base && !c->answers.empty() && c->answers.size() == base->answers.size()) {
      const PairedDifference d = pair_answer_strings(c->answers, base->answers);
      f["accuracy_vs_fp32"] = {{"diff", d.diff}, {"ci95", {d.low, d.high}}, {"p_mcnemar", d.p_value}};
    }
    rq2["frontier"].push_back(f);
    (c->kind == "mixed" || c->kind == "auto" ? mixed_on : uniform_on).push_back(id);
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return v.empty() ? std::string("none") : s;
  };
  rq2["answer"] = fmt::format("{} configurations are on the frontier (no other is at least as accurate and cheaper beyond its paired "
                              "J/token interval; accuracies compare by their paired interval over the benchmark's items, so a difference "
                              "inside it is a tie, not a win): mixed or allocated maps {}; uniform maps and the baseline {}.",
                              fr.size(), join(mixed_on), join(uniform_on));
  out["rq2"] = rq2;
  for (const auto& id : mixed_on)
    st.push_back({"rq2/" + id, fmt::format("RQ2: {} is on the accuracy-vs-J/token frontier", id), [&e, cs, id](const Pricing& p) {
                    const std::vector<std::string> f = frontier(e, cs, p);
                    const bool on = std::find(f.begin(), f.end(), id) != f.end();
                    return Verdict{on, on ? "on the frontier" : "dominated"};
                  }});

  // RQ3: quality sensitivity from the sensitivity units; energy sensitivity from maps that differ in one
  // layer group or one tensor kind only (paired J/token ratio, KLD beside it).
  json rq3;
  if (sensitivity.contains("linears")) {
    json worst_lin, worst_layer;
    std::map<std::string, double> by_kind;
    for (const auto& s : sensitivity["linears"]) {
      if (worst_lin.is_null() || s["dkl"].get<double>() > worst_lin["dkl"].get<double>()) worst_lin = s;
      by_kind[s["kind"].get<std::string>()] += s["dkl"].get<double>();
    }
    for (const auto& s : sensitivity["layers"])
      if (worst_layer.is_null() || s["dkl"].get<double>() > worst_layer["dkl"].get<double>()) worst_layer = s;
    std::string kind;
    double kv = -1;
    for (const auto& [k, v] : by_kind)
      if (v > kv) kind = k, kv = v;
    rq3["quality"] = {{"linear", worst_lin}, {"layer", worst_layer}, {"kind", kind}};
  }
  json singles = json::array();
  std::map<std::string, std::pair<double, json>> strongest;  // label -> (|ln ratio|, entry)
  for (const Cfg& a : cs)
    for (const Cfg& b : cs) {
      if (a.id >= b.id || a.id == kBase || b.id == kBase) continue;
      std::string ra, rb;
      const std::string what = single_difference(a.plan, b.plan, n_layer, &ra, &rb);
      if (what.empty()) continue;
      // Order each pair so that `hi` keeps the difference at more bits.
      const bool a_hi = bits_of(minigpt::LinearRecipe::parse(ra)) >= bits_of(minigpt::LinearRecipe::parse(rb));
      const Cfg& hi = a_hi ? a : b;
      const Cfg& lo = a_hi ? b : a;
      const en::Ratio r = jratio(e, lo.id, hi.id);
      const json entry = {{"differs_in", what}, {"higher", hi.id}, {"lower", lo.id}, {"higher_recipe", a_hi ? ra : rb},
                          {"lower_recipe", a_hi ? rb : ra}, {"joules_ratio_lower_to_higher", en::ratio_json(r)}, {"kld_higher", hi.kld},
                          {"kld_lower", lo.kld}};
      singles.push_back(entry);
      const double mag = std::abs(std::log(r.ratio));
      if (!strongest.count(what) || mag > strongest[what].first) strongest[what] = {mag, entry};
    }
  rq3["single_differences"] = singles;
  std::string strongest_label;
  double strongest_mag = -1;
  for (const auto& [label, v] : strongest)
    if (direction(en::Ratio{v.second["joules_ratio_lower_to_higher"]["ratio"].get<double>(),
                            v.second["joules_ratio_lower_to_higher"]["ratio_ci95_low"].get<double>(),
                            v.second["joules_ratio_lower_to_higher"]["ratio_ci95_high"].get<double>()}) != 0 &&
        v.first > strongest_mag)
      strongest_label = label, strongest_mag = v.first;
  std::string qtext = "no sensitivity units merged";
  if (rq3.contains("quality"))
    qtext = fmt::format("in quality, layer {} {} is the most sensitive Linear ({} adds {:.3g} KLD alone), layer {} the most sensitive "
                        "layer, and {} the most sensitive tensor kind summed over layers",
                        rq3["quality"]["linear"]["layer"].get<int>(), rq3["quality"]["linear"]["kind"].get<std::string>(),
                        rq3["quality"]["linear"]["recipe"].get<std::string>(), rq3["quality"]["linear"]["dkl"].get<double>(),
                        rq3["quality"]["layer"]["layer"].get<int>(), rq3["quality"]["kind"].get<std::string>());
  std::string etext = "no two measured maps differ in one layer group or tensor kind alone with a resolved energy difference";
  if (!strongest_label.empty()) {
    const json& s = strongest[strongest_label].second;
    etext = fmt::format("in energy, the {} moves J/token most: {} ({}) against {} ({}) costs {} of the J/token (KLD {:.3g} vs {:.3g})",
                        strongest_label, s["lower"].get<std::string>(), s["lower_recipe"].get<std::string>(), s["higher"].get<std::string>(),
                        s["higher_recipe"].get<std::string>(), rtext(en::Ratio{s["joules_ratio_lower_to_higher"]["ratio"].get<double>(),
                                                                                 s["joules_ratio_lower_to_higher"]["ratio_ci95_low"].get<double>(),
                                                                                 s["joules_ratio_lower_to_higher"]["ratio_ci95_high"].get<double>()}),
                        s["kld_lower"].get<double>(), s["kld_higher"].get<double>());
    const std::string lo = s["lower"], hi = s["higher"];
    const int dir = s["joules_ratio_lower_to_higher"]["ratio_ci95_high"].get<double>() < 1 ? -1 : 1;
    st.push_back({"rq3/" + strongest_label, fmt::format("RQ3: {} at {} costs {} energy per token than {} ({})", lo, s["lower_recipe"].get<std::string>(),
                                                       dir < 0 ? "less" : "more", hi, strongest_label),
                  [&e, lo, hi, dir](const Pricing& p) {
                    const en::Ratio r = jratio(e, lo, hi, p);
                    return Verdict{direction(r) == dir, rtext(r)};
                  }});
  }
  rq3["answer"] = "Sensitivity: " + qtext + "; " + etext + ".";
  out["rq3"] = rq3;

  // RQ4: the EPI-optimal map against uniform 4-bit.
  const Cfg* ref = find(cs, "uniform-q4_k_m");
  if (!ref) ref = find(cs, "uniform-int4-g64-gptq");
  // Any other study (lab 05's names its map uniform-int4): a map with no rules whose every Linear is int4.
  for (size_t i = 0; !ref && i < cs.size(); ++i)
    if (cs[i].plan.rules.empty() && mq::traits_of(cs[i].plan.base.scheme).family == "int4") ref = &cs[i];
  const Cfg* best = epi_best(e, cs, {});
  json rq4 = {{"epi_optimal", best->id}, {"epi_optimal_bytes", best->bytes}};
  std::vector<std::vector<double>> rows(static_cast<size_t>(e.rounds.rounds), std::vector<double>(cs.size()));
  for (size_t i = 0; i < cs.size(); ++i) {
    const std::vector<double> v = priced_series(e.rounds, "generation", cs[i].id, "total");
    for (size_t k = 0; k < v.size(); ++k) rows[k][i] = v[k] / cs[i].acc;
  }
  const std::vector<double> freq = en::top_frequency(rows);
  const size_t bi = static_cast<size_t>(best - cs.data());
  rq4["stays_on_top"] = freq[bi];
  if (ref) {
    const en::Ratio r = epi_ratio(e, *best, *ref);
    const bool smaller = best->bytes < ref->bytes;
    rq4["reference"] = ref->id;
    rq4["reference_bytes"] = ref->bytes;
    rq4["epi_ratio_to_reference"] = en::ratio_json(r);
    rq4["smaller"] = smaller;
    std::string acc_vs;  // the two maps' accuracies paired by item: a difference inside the interval is a tie
    if (best->id != ref->id && !best->answers.empty() && best->answers.size() == ref->answers.size()) {
      const PairedDifference d = pair_answer_strings(best->answers, ref->answers);
      rq4["accuracy_vs_reference"] = {{"diff", d.diff}, {"ci95", {d.low, d.high}}, {"p_mcnemar", d.p_value}};
      acc_vs = fmt::format("; its accuracy differs from {}'s by {:+.4f} [{:+.4f}, {:+.4f}] paired by item ({})", ref->id, d.diff, d.low,
                           d.high, d.high < 0 ? "lower" : d.low > 0 ? "higher" : "a tie");
    }
    rq4["answer"] = fmt::format("The EPI-optimal configuration is {} ({:.0f} KiB, generalization accuracy {:.4f}); it is {} than {} ({:.0f} KiB), "
                                "at an EPI ratio of {} to it (the J/token interval scaled by the accuracies){}; it stays the lowest in {:.0f}% "
                                "of bootstrap resamples of the rounds.",
                                best->id, best->bytes / 1024, best->acc, best->id == ref->id ? "the same map" : smaller ? "smaller" : "larger",
                                ref->id, ref->bytes / 1024, rtext(r), acc_vs, 100 * freq[bi]);
    if (best->id != ref->id)
      st.push_back({"rq4/size", fmt::format("RQ4: the EPI-optimal map is {} than {}", smaller ? "smaller" : "larger", ref->id),
                    [&e, cs, ref = *ref, smaller](const Pricing& p) {
                      const Cfg* b = epi_best(e, cs, p);
                      return Verdict{(b->bytes < ref.bytes) == smaller && b->id != ref.id, "EPI-optimal: " + b->id};
                    }});
  } else {
    rq4["answer"] = fmt::format("The EPI-optimal configuration is {}; no uniform 4-bit map was measured to compare it with.", best->id);
  }
  out["rq4"] = rq4;

  // RQ5: the model's decomposition of each map's saving against fp32, per phase.
  json rq5;
  if (coeffs) {
    json rows5 = json::array();
    for (const Cfg& x : cs) {
      if (x.id == kBase) continue;
      json r = {{"config_id", x.id}};
      for (const char* ph : {"prefill", "decode"}) {
        const Saving s = saving_of(e, x.id, ph, *coeffs);
        r[ph] = {{"time_joules", s.time}, {"arithmetic_joules", s.arithmetic}, {"bytes_joules", s.bytes}, {"dominant", s.dominant()}};
      }
      rows5.push_back(r);
    }
    rq5["configs"] = rows5;
    for (const char* ph : {"prefill", "decode"}) {
      const std::string dom = dominant_term(e, cs, ph, *coeffs);
      rq5[ph] = dom;
      st.push_back({std::string("rq5/") + ph, fmt::format("RQ5: in {}, the modelled savings against fp32 come mostly from {}", ph, dom),
                    [&e, cs, ph = std::string(ph), dom, c0 = *coeffs](const Pricing& p) {
                      const std::string d = dominant_term(e, cs, ph, p.coefficients ? *p.coefficients : c0);
                      return Verdict{d == dom, "mostly " + d};
                    }});
    }
    rq5["answer"] = fmt::format("By the model's decomposition (fp32's modelled joules minus each map's, split into static power x time, "
                                "operations, and bytes per level), decode savings come mostly from {} and prefill savings mostly from {} "
                                "(most common dominant term over the {} maps). Time is what the kernels' speed buys: fewer bytes to read "
                                "in decode, cheaper integer arithmetic in prefill.",
                                rq5["decode"].get<std::string>(), rq5["prefill"].get<std::string>(), rows5.size());
  } else {
    rq5["answer"] = "The joules were measured: the model's decomposition does not apply to them.";
  }
  out["rq5"] = rq5;

  json sj = json::array();
  for (const Statement& s : st) sj.push_back(check_statement(s, box.get()).to_json());
  out["statements"] = sj;
  out["robustness"] = box ? box->to_json() : json{{"note", "measured joules (or no coefficients): nothing to vary"}};
  return out;
}

}  // namespace mqexp
