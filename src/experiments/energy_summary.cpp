#include "experiments/energy_summary.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"

namespace mqexp {
namespace {

using json = nlohmann::json;
namespace en = mq::energy;

const char* const kGenPhases[] = {"prefill", "decode", "post", "total"};

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

json summarize_phase(const std::vector<Measurement>& runs, const std::string& ph) {
  json out;
  for (const char* metric : {"joules_per_token", "joules", "seconds", "watts", "tokens_per_s"}) {
    std::vector<double> v;
    for (const Measurement& m : runs) v.push_back(phase_metric(m.phase(ph), metric));
    json s = en::summary_json(en::summarize_trials(v));
    s["values"] = v;
    out[metric] = s;
  }
  out["tokens"] = runs.front().phase(ph).tokens;
  out["work"] = work_json(runs.front().phase(ph).work);  // deterministic: the same every round
  return out;
}

std::string ratio_text(const en::Ratio& r) { return fmt::format("{:.3f} [{:.3f}, {:.3f}]", r.ratio, r.low, r.high); }

// A ratio below 1 whose interval excludes 1 (-1), above 1 excluding it (+1), or unresolved (0).
int direction(const en::Ratio& r) { return r.high < 1 ? -1 : r.low > 1 ? 1 : 0; }

// Total J/token of every ranked configuration per round (rows) and its argmin over the round means.
std::vector<std::string> ranked(const SubjectData& d) {
  std::vector<std::string> v;
  for (const auto& c : d.configs)
    if (c != d.control) v.push_back(c);
  return v;
}

std::string lowest(const SubjectData& d, const Pricing& price) {
  std::string best;
  double best_j = 0;
  for (const auto& c : ranked(d)) {
    const double j = mean_of(priced_series(d.main, "generation", c, "total", price, "joules_per_token"));
    if (best.empty() || j < best_j) best = c, best_j = j;
  }
  return best;
}

// Energy of one request of the curve (prompt L, curve_gen generated) by phase, means over rounds.
struct RequestEnergy {
  double prefill = 0, decode = 0, post = 0, prefill_jpt = 0, decode_jpt = 0;
};
RequestEnergy request(const SubjectData& d, const std::string& method, int L, const Pricing& price) {
  const std::string task = fmt::format("prompt{}", L);
  RequestEnergy e;
  e.prefill = mean_of(priced_series(d.curve, task, method, "prefill", price, "joules"));
  e.decode = mean_of(priced_series(d.curve, task, method, "decode", price, "joules"));
  e.post = mean_of(priced_series(d.curve, task, method, "post", price, "joules"));
  e.prefill_jpt = mean_of(priced_series(d.curve, task, method, "prefill", price, "joules_per_token"));
  e.decode_jpt = mean_of(priced_series(d.curve, task, method, "decode", price, "joules_per_token"));
  return e;
}

}  // namespace

std::vector<double> priced_series(const RoundsResult& r, const std::string& task, const std::string& c, const std::string& phase,
                                  const Pricing& price, const std::string& metric) {
  std::vector<double> v;
  for (const Measurement& m : r.of(task, c)) {
    const PhaseStats& p = m.phase(phase);
    v.push_back(metric == "joules_per_token" ? price.joules_per_token(p) : metric == "joules" ? price.joules(p) : phase_metric(p, metric));
  }
  return v;
}

en::Ratio paired(const RoundsResult& r, const std::string& task, const std::string& a, const std::string& b, const std::string& phase,
                 const Pricing& price, const std::string& metric) {
  return en::robust_paired_ratio(priced_series(r, task, a, phase, price, metric), priced_series(r, task, b, phase, price, metric));
}

json prompt_crossover(const SubjectData& d, const std::string& method, const Pricing& price) {
  double prev_L = 0, prev_diff = 0;
  bool have_prev = false;
  for (int L : d.curve_lengths) {
    const RequestEnergy e = request(d, method, L, price);
    const double diff = e.prefill - e.decode;
    if (diff >= 0) {
      if (!have_prev) return {{"between", {0, L}}, {"at", nullptr}, {"note", "prefill already dominates at the shortest prompt"}};
      const double at = prev_L + (L - prev_L) * (-prev_diff) / (diff - prev_diff);
      return {{"between", {prev_L, L}}, {"at", at}};
    }
    prev_L = L;
    prev_diff = diff;
    have_prev = true;
  }
  return {{"never", true}, {"longest", d.curve_lengths.empty() ? 0 : d.curve_lengths.back()}};
}

json summarize_subject(const SubjectData& d) {
  json out;
  json methods = json::array();
  const std::vector<Measurement>& base_gen = d.main.of("generation", d.baseline);
  for (const std::string& c : d.configs) {
    json rec = d.info.at(c);
    const std::vector<Measurement>& gen = d.main.of("generation", c);
    for (const char* ph : kGenPhases) rec["phases"][ph] = summarize_phase(gen, ph);
    json batch = json::array();
    for (int B : d.batch) {
      const std::vector<Measurement>& br = d.batches.of(fmt::format("batch{}", B), c);
      batch.push_back({{"batch", B}, {"decode", summarize_phase(br, "decode")}, {"total", summarize_phase(br, "total")}});
    }
    rec["batch"] = batch;
    // Greedy agreement with the baseline over the same prompts (each round its own prompt).
    double same = 0, n = 0;
    for (size_t k = 0; k < gen.size(); ++k) {
      const auto& a = gen[k].generated;
      const auto& b = base_gen[k].generated;
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) same += a[i] == b[i];
      n += static_cast<double>(a.size());
    }
    rec["accuracy"]["greedy_agreement_with_fp32"] = n > 0 ? json(same / n) : json(nullptr);
    if (c != d.baseline) {
      json sv;
      for (const char* ph : kGenPhases) sv["energy_per_token"][ph] = ratio_json(paired(d.main, "generation", c, d.baseline, ph));
      sv["latency"] = ratio_json(paired(d.main, "generation", c, d.baseline, "total", {}, "seconds"));
      for (int B : d.batch)
        sv["batch_energy_per_token"][std::to_string(B)] = ratio_json(paired(d.batches, fmt::format("batch{}", B), c, d.baseline, "total"));
      sv["design"] = "paired: geometric mean of per-round ratios, 95% t interval of their logs";
      rec["savings_vs_fp32"] = sv;
    }
    methods.push_back(rec);
  }
  // Batch scaling: tokens/s at B against B = 1, paired within rounds (batch tasks of one round run together).
  for (auto& rec : methods) {
    const std::string c = rec["name"];
    json sc = json::object();
    if (std::find(d.batch.begin(), d.batch.end(), 1) != d.batch.end())
      for (int B : d.batch)
        if (B != 1)
          sc[std::to_string(B)] = ratio_json(en::paired_ratio(priced_series(d.batches, fmt::format("batch{}", B), c, "decode", {}, "tokens_per_s"),
                                                              priced_series(d.batches, "batch1", c, "decode", {}, "tokens_per_s")));
    rec["batch_speedup_vs_b1"] = sc;
  }
  out["methods"] = methods;

  if (!d.control.empty()) {
    json ctl = {{"name", d.control}, {"of", d.baseline}};
    for (const char* ph : kGenPhases) ctl["energy_per_token"][ph] = ratio_json(paired(d.main, "generation", d.control, d.baseline, ph));
    const en::Ratio t = paired(d.main, "generation", d.control, d.baseline, "total");
    const double half = std::max(t.high - 1.0, 1.0 - t.low);
    ctl["ratio"] = t.ratio;
    ctl["low"] = t.low;
    ctl["high"] = t.high;
    ctl["contains_one"] = t.low <= 1.0 && t.high >= 1.0;
    ctl["within_3_percent"] = t.high <= 1.03 && t.low >= 0.97;
    ctl["passes"] = control_passes(t);
    ctl["half_width"] = half;
    // How many rounds it took, and which a disturbance moved (the robust ratio does not follow them).
    ctl["rounds"] = d.main.rounds;
    ctl["planned_rounds"] = d.main.planned;
    ctl["added_rounds"] = d.main.rounds - d.main.planned;
    ctl["disturbed_rounds"] = en::disturbed_rounds(priced_series(d.main, "generation", d.control, "total"),
                                                   priced_series(d.main, "generation", d.baseline, "total"));
    json loads = json::array();
    for (double l : d.main.load) loads.push_back(l >= 0 ? json(l) : json(nullptr));
    ctl["load_average"] = loads;
    out["control"] = ctl;
  }

  json splits = json::array();
  for (const SplitDef& s : d.splits) {
    const en::Ratio a = paired(d.main, "generation", s.name, s.prefill_uniform, "total");
    const en::Ratio b = paired(d.main, "generation", s.name, s.decode_uniform, "total");
    json e = {{"split", s.name}, {"prefill_uniform", s.prefill_uniform}, {"decode_uniform", s.decode_uniform},
              {"vs_prefill_uniform", ratio_json(a)}, {"vs_decode_uniform", ratio_json(b)},
              {"beats_both", a.high < 1 && b.high < 1}};
    for (const char* ph : {"prefill", "decode"}) {
      e["phase_vs_prefill_uniform"][ph] = ratio_json(paired(d.main, "generation", s.name, s.prefill_uniform, ph));
      e["phase_vs_decode_uniform"][ph] = ratio_json(paired(d.main, "generation", s.name, s.decode_uniform, ph));
    }
    splits.push_back(e);
  }
  out["splits"] = splits;

  // Ranking by total J/token, with how often the winner stays on top when rounds are resampled.
  const std::vector<std::string> rk = ranked(d);
  std::vector<std::vector<double>> rows(static_cast<size_t>(d.main.rounds), std::vector<double>(rk.size()));
  std::vector<std::pair<double, std::string>> order;
  for (size_t i = 0; i < rk.size(); ++i) {
    const std::vector<double> v = priced_series(d.main, "generation", rk[i], "total", {}, "joules_per_token");
    for (size_t k = 0; k < v.size(); ++k) rows[k][i] = v[k];
    order.emplace_back(mean_of(v), rk[i]);
  }
  std::sort(order.begin(), order.end());
  const std::vector<double> freq = en::top_frequency(rows);
  json ranking = {{"metric", "total J/token of a generation (prefill + decode + post)"}, {"order", json::array()}, {"top_frequency", json::object()}};
  for (const auto& [j, c] : order) ranking["order"].push_back({{"name", c}, {"mean_joules_per_token", j}});
  for (size_t i = 0; i < rk.size(); ++i) ranking["top_frequency"][rk[i]] = freq[i];
  ranking["winner"] = order.front().second;
  ranking["winner_stays_on_top"] = freq[static_cast<size_t>(std::find(rk.begin(), rk.end(), order.front().second) - rk.begin())];
  out["ranking"] = ranking;

  if (!d.curve_lengths.empty()) {
    json curve = {{"gen_tokens", d.curve_gen}, {"lengths", d.curve_lengths}, {"rounds", d.curve.rounds}, {"methods", json::object()},
                  {"crossover", json::object()}};
    for (const std::string& m : d.curve_methods) {
      json pts = json::array();
      for (int L : d.curve_lengths) {
        const RequestEnergy e = request(d, m, L, {});
        const double total = e.prefill + e.decode + e.post;
        pts.push_back({{"prompt", L}, {"prefill_joules_per_token", e.prefill_jpt}, {"decode_joules_per_token", e.decode_jpt},
                       {"request_joules", {{"prefill", e.prefill}, {"decode", e.decode}, {"post", e.post}}},
                       {"prefill_share", total > 0 ? e.prefill / total : 0.0},
                       {"decode_tokens_per_s", mean_of(d.curve.series(fmt::format("prompt{}", L), m, "decode", "tokens_per_s"))},
                       {"prefill_tokens_per_s", mean_of(d.curve.series(fmt::format("prompt{}", L), m, "prefill", "tokens_per_s"))}});
      }
      curve["methods"][m] = pts;
      curve["crossover"][m] = prompt_crossover(d, m);
    }
    out["prompt_curve"] = curve;
  }
  return out;
}

std::vector<Statement> subject_statements(const SubjectData& d) {
  std::vector<Statement> st;
  const std::string where = d.title;
  for (const std::string& c : d.configs) {
    if (c == d.baseline || c == d.control) continue;
    const int dir = direction(paired(d.main, "generation", c, d.baseline, "total"));
    if (dir == 0) continue;  // no difference resolved: not a claim the report makes
    st.push_back({d.key + "/" + c + "/vs-" + d.baseline,
                  fmt::format("{} uses {} energy per token than {} (total, {})", c, dir < 0 ? "less" : "more", d.baseline, where),
                  [&d, c, dir](const Pricing& p) {
                    const en::Ratio r = paired(d.main, "generation", c, d.baseline, "total", p);
                    return Verdict{direction(r) == dir, ratio_text(r)};
                  }});
  }
  const std::string best = lowest(d, {});
  st.push_back({d.key + "/lowest", fmt::format("{} has the lowest total energy per token ({})", best, where), [&d, best](const Pricing& p) {
                  const std::string b = lowest(d, p);
                  return Verdict{b == best, "lowest: " + b};
                }});
  for (const SplitDef& s : d.splits) {
    const auto beats = [&d, s](const Pricing& p) {
      const en::Ratio a = paired(d.main, "generation", s.name, s.prefill_uniform, "total", p);
      const en::Ratio b = paired(d.main, "generation", s.name, s.decode_uniform, "total", p);
      return std::make_pair(a.high < 1 && b.high < 1, fmt::format("vs {} {}, vs {} {}", s.prefill_uniform, ratio_text(a), s.decode_uniform, ratio_text(b)));
    };
    const bool nominal = beats({}).first;
    st.push_back({d.key + "/split/" + s.name,
                  fmt::format("{} {} both uniform modes {} and {} in total energy per token ({})", s.name, nominal ? "beats" : "does not beat",
                              s.prefill_uniform, s.decode_uniform, where),
                  [beats, nominal](const Pricing& p) {
                    const auto [b, v] = beats(p);
                    return Verdict{b == nominal, v};
                  }});
  }
  for (const std::string& m : d.curve_methods) {  // empty when no curve was measured (run_subject): no crossover claims
    const json x = prompt_crossover(d, m);
    const std::string text =
        x.contains("never") ? fmt::format("prefill's share of a request never overtakes decode's up to a {}-token prompt ({}, {}, {} generated)",
                                          x["longest"].get<int>(), m, where, d.curve_gen)
                            : fmt::format("prefill's share of a request overtakes decode's between {} and {} prompt tokens ({}, {}, {} generated)",
                                          x["between"][0].get<double>(), x["between"][1].get<double>(), m, where, d.curve_gen);
    st.push_back({d.key + "/crossover/" + m, text, [&d, m, x](const Pricing& p) {
                    const json y = prompt_crossover(d, m, p);
                    const bool same = x.contains("never") ? y.contains("never") : (!y.contains("never") && y["between"] == x["between"]);
                    return Verdict{same, y.contains("never") ? std::string("never") : fmt::format("between {} and {}", y["between"][0].get<double>(), y["between"][1].get<double>())};
                  }});
  }
  return st;
}

}  // namespace mqexp
