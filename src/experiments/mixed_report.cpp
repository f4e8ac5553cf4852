// Frontiers, matched pairs, the answers and the README block of experiments/27-mixed-epi.
#include "experiments/mixed_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "experiments/pareto.h"

namespace mqexp {
namespace {

using json = nlohmann::json;

double num(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return NAN;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : NAN;
}

double ppl(const json& c) { return num(c, {"row", "ppl"}); }
double kld(const json& c) { return num(c, {"row", "divergence", "kl", "mean"}); }
double bytes(const json& c) { return num(c, {"row", "bytes"}); }
double jpt(const json& c) { return num(c, {"energy", "joules_per_token", "total", "median"}); }
double jlow(const json& c) { return num(c, {"energy", "joules_per_token", "total", "low"}); }
double jhigh(const json& c) { return num(c, {"energy", "joules_per_token", "total", "high"}); }
double acc(const json& c) { return num(c, {"row", "verb_tense_accuracy"}); }
double epi(const json& c) { return c.value("epi", json()).is_number() ? c["epi"].get<double>() : NAN; }
double dppl_half(const json& c) {
  const json& ci = c["row"]["divergence"]["delta_ppl"]["ci95"];
  return 0.5 * (ci[1].get<double>() - ci[0].get<double>());
}
const json& ci(const json& c, std::initializer_list<const char*> path) {
  const json* p = &c;
  for (const char* k : path) p = &(*p)[k];
  return *p;
}

const json* find_config(const json& res, const std::string& id) {
  for (const auto& c : res["configs"])
    if (c["config_id"] == id) return &c;
  return nullptr;
}

std::string mj(double j) { return std::isfinite(j) ? fmt::format("{:.4f}", 1e3 * j) : "-"; }
std::string kb(double b) { return fmt::format("{:.0f}", b / 1024.0); }

// The uniform int4-g64 GPTQ map: the study's reference point for RQ4 and RQ5.
const json* uniform_int4(const json& res) { return find_config(res, "uniform-int4-g64-gptq"); }

json answers(const json& res) {
  json a;
  const json& cs = res["configs"];
  // RQ1: perplexity-matched pairs whose joules per token differ beyond their repetition ranges.
  {
    int matched = 0, differ = 0;
    const json* best = nullptr;
    for (const auto& p : res["pairs"]) {
      ++matched;
      if (p["joules_differ"].get<bool>()) {
        ++differ;
        if (!best || std::abs(p["joules_ratio"].get<double>() - 1) > std::abs((*best)["joules_ratio"].get<double>() - 1)) best = &p;
      }
    }
    const double un = res.value("unit_noise_joules_ratio", 1.0);
    std::string s = fmt::format("{} pairs of configurations have perplexities within the noise of each other; in {} of them the "
                                "joules per token differ beyond both configurations' repetition ranges and beyond the {:.2f}x that "
                                "identical models measured as separate units differ by ({} such pairs).",
                                matched, differ, un, res.value("identical_models", json::array()).size());
    if (best)
      s += fmt::format(" The largest: {} and {} (PPL {:.3f} vs {:.3f}) at {} vs {} mJ/token ({:+.1f}%).", (*best)["a"].get<std::string>(),
                       (*best)["b"].get<std::string>(), (*best)["ppl_a"].get<double>(), (*best)["ppl_b"].get<double>(),
                       mj((*best)["joules_a"].get<double>()), mj((*best)["joules_b"].get<double>()),
                       100 * ((*best)["joules_ratio"].get<double>() - 1));
    a["rq1"] = {{"text", s}, {"matched_pairs", matched}, {"differing_in_joules", differ}};
  }
  // RQ2: the frontiers, and the non-uniform configurations on them.
  {
    std::vector<std::string> epi_front, bytes_front, mixed_epi, mixed_bytes;
    for (const auto& c : cs) {
      const bool mixed = c["kind"] == "mixed" || c["kind"] == "auto";
      if (c.value("on_epi_frontier", false)) {
        epi_front.push_back(c["config_id"]);
        if (mixed) mixed_epi.push_back(c["config_id"]);
      }
      if (c.value("on_bytes_frontier", false)) {
        bytes_front.push_back(c["config_id"]);
        if (mixed) mixed_bytes.push_back(c["config_id"]);
      }
    }
    const std::string s = fmt::format(
        "Accuracy against J/token: {} configurations on the frontier ({}); {} of them mixed or allocated ({}). KLD against bytes: {} on "
        "the frontier ({}); {} mixed or allocated ({}). A mixed configuration on a frontier is one no uniform configuration matches "
        "or beats on both axes.",
        epi_front.size(), fmt::join(epi_front, ", "), mixed_epi.size(), mixed_epi.empty() ? "none" : fmt::format("{}", fmt::join(mixed_epi, ", ")),
        bytes_front.size(), fmt::join(bytes_front, ", "), mixed_bytes.size(),
        mixed_bytes.empty() ? "none" : fmt::format("{}", fmt::join(mixed_bytes, ", ")));
    int below = 0;
    for (const auto& c : cs)
      if (acc(c) < 1.0) ++below;
    const std::string sat = fmt::format(
        " Verb-tense accuracy is below 1 in {} of {} configurations, so accuracy hardly separates them and the EPI ranking is "
        "the J/token ranking; the KLD panels carry the quality differences.",
        below, cs.size());
    a["rq2"] = {{"text", s + (below * 4 < static_cast<int>(cs.size()) ? sat : std::string())}, {"epi_frontier", epi_front},
                {"bytes_frontier", bytes_front}, {"accuracy_below_one", below}};
  }
  // RQ3: the most sensitive Linears and kinds, at the lowest and the middle bit widths measured.
  // (const access: operator[] on a missing key is undefined, so ask first)
  if (res.contains("sensitivity") && res["sensitivity"].contains("linears")) {
    std::map<std::string, std::vector<const json*>> by_recipe;
    for (const auto& e : res["sensitivity"]["linears"]) by_recipe[e["recipe"].get<std::string>()].push_back(&e);
    std::string s;
    json top = json::object();
    for (auto& [recipe, v] : by_recipe) {
      std::sort(v.begin(), v.end(), [](const json* x, const json* y) { return (*x)["dkl"].get<double>() > (*y)["dkl"].get<double>(); });
      std::map<std::string, double> kind_sum, layer_sum;
      for (const json* e : v) {
        kind_sum[(*e)["kind"].get<std::string>()] += (*e)["dkl"].get<double>();
        layer_sum[fmt::format("layer {}", (*e)["layer"].get<int>())] += (*e)["dkl"].get<double>();
      }
      const auto arg = [](const std::map<std::string, double>& m) {
        return std::max_element(m.begin(), m.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
      };
      std::vector<std::string> names;
      for (size_t i = 0; i < v.size() && i < 3; ++i)
        names.push_back(fmt::format("layer {} {} (+{:.3g})", (*v[i])["layer"].get<int>(), (*v[i])["kind"].get<std::string>(), (*v[i])["dkl"].get<double>()));
      top[recipe] = {{"most_sensitive", names}, {"kind", arg(kind_sum)}, {"layer", arg(layer_sum)}};
      s += fmt::format("{}: most sensitive {}; by kind (sum over layers) {}, by layer (sum over kinds) {}. ", recipe, fmt::join(names, ", "),
                       arg(kind_sum), arg(layer_sum));
    }
    a["rq3"] = {{"text", s}, {"by_recipe", top}};
  }
  // RQ4 and RQ5: the EPI-optimal configuration against uniform int4-g64 (GPTQ).
  const json* best = nullptr;
  for (const auto& c : cs)
    if (std::isfinite(epi(c)) && (!best || epi(c) < epi(*best))) best = &c;
  const json* u4 = uniform_int4(res);
  if (best && u4) {
    const double rb = bytes(*best) / bytes(*u4);
    a["rq4"] = {{"text", fmt::format("The lowest EPI is {} ({} mJ/token at accuracy {:.4f}, EPI {:.4g} mJ); it stores {} KiB, {:.2f}x "
                                     "uniform int4-g64-gptq's {} KiB (EPI {:.4g} mJ): {}.",
                                     (*best)["config_id"].get<std::string>(), mj(jpt(*best)), acc(*best), 1e3 * epi(*best),
                                     kb(bytes(*best)), rb, kb(bytes(*u4)), 1e3 * epi(*u4),
                                     rb < 0.999 ? "smaller" : rb > 1.001 ? "larger" : "the same size")},
                {"config_id", (*best)["config_id"]}, {"bytes_ratio_vs_uniform_int4", rb}};
    std::vector<std::string> close;
    const double un = res.value("unit_noise_joules_ratio", 1.0);
    for (const auto& c : cs)
      if (&c != best && std::isfinite(epi(c)) && epi(c) <= epi(*best) * un) close.push_back(c["config_id"].get<std::string>());
    a["rq4"]["within_unit_noise"] = close;
    if (!close.empty())
      a["rq4"]["text"] = a["rq4"]["text"].get<std::string>() +
                         fmt::format(" Within the {:.2f}x unit-to-unit spread of it: {}.", un, fmt::join(close, ", "));
    const double rtraffic = num(*best, {"row", "decode_traffic", "bytes", "total"}) / num(*u4, {"row", "decode_traffic", "bytes", "total"});
    const double rflops = num(*best, {"row", "decode_traffic", "flops"}) / num(*u4, {"row", "decode_traffic", "flops"});
    const double rspeed = num(*best, {"row", "decode_tokens_per_s", "median"}) / num(*u4, {"row", "decode_tokens_per_s", "median"});
    const double rj = jpt(*best) / jpt(*u4);
    a["rq5"] = {{"text", fmt::format("Against uniform int4-g64-gptq, {} moves {:.2f}x the bytes per decode step and runs {:.2f}x the "
                                     "FLOPs (the same arithmetic on other widths), decodes at {:.2f}x the speed and spends {:.2f}x the "
                                     "joules per token. {}",
                                     (*best)["config_id"].get<std::string>(), rtraffic, rflops, rspeed, rj,
                                     std::abs(rflops - 1) < 1e-9
                                         ? "Every configuration here does the same FLOPs, so any energy difference comes from the bytes "
                                           "moved and from how fast each kernel runs (time x static power), not from less compute."
                                         : "")},
                {"traffic_ratio", rtraffic}, {"flops_ratio", rflops}, {"decode_speed_ratio", rspeed}, {"joules_ratio", rj}};
  }
  return a;
}

}  // namespace

void annotate_mixed(json& res) {
  json& cs = res["configs"];
  std::vector<std::pair<double, double>> e, b;
  for (const auto& c : cs) {
    e.emplace_back(jpt(c), -acc(c));  // fewer joules, higher accuracy
    b.emplace_back(bytes(c), kld(c));
  }
  const std::vector<bool> on_e = pareto_frontier(e), on_b = pareto_frontier(b);
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i]["on_epi_frontier"] = static_cast<bool>(on_e[i]);
    cs[i]["on_bytes_frontier"] = static_cast<bool>(on_b[i]);
  }
  // Identical models measured as separate units (an allocated map that came out uniform, say): same bytes,
  // and bit-identical perplexity and KLD, which only the same weights give. Their J/token ratio is the
  // unit-to-unit spread that a unit's own repetitions do not show (each unit runs once, in one process
  // state), so a J/token difference counts only beyond the largest of them.
  json same = json::array();
  double unit_noise = 0;  // largest |log(J/token ratio)| among identical models
  for (size_t i = 0; i < cs.size(); ++i)
    for (size_t k = i + 1; k < cs.size(); ++k) {
      const json &x = cs[i], &y = cs[k];
      if (bytes(x) != bytes(y) || ppl(x) != ppl(y) || kld(x) != kld(y) || !std::isfinite(jpt(x)) || !std::isfinite(jpt(y))) continue;
      unit_noise = std::max(unit_noise, std::abs(std::log(jpt(x) / jpt(y))));
      same.push_back({{"a", x["config_id"]}, {"b", y["config_id"]}, {"joules_a", jpt(x)}, {"joules_b", jpt(y)}, {"joules_ratio", jpt(x) / jpt(y)},
                      {"decode_speed_ratio", num(x, {"row", "decode_tokens_per_s", "median"}) / num(y, {"row", "decode_tokens_per_s", "median"})}});
    }
  res["identical_models"] = same;
  res["unit_noise_joules_ratio"] = std::exp(unit_noise);
  // Perplexity-matched pairs: the ΔPPL interval of each against fp32 says how far its perplexity can move
  // by the test set's noise; two configurations closer than the wider of the two half-widths are matched.
  json pairs = json::array();
  for (size_t i = 0; i < cs.size(); ++i)
    for (size_t k = i + 1; k < cs.size(); ++k) {
      const json &x = cs[i], &y = cs[k];
      if (x["kind"] == "baseline" || y["kind"] == "baseline") continue;
      const double noise = std::max(dppl_half(x), dppl_half(y));
      if (!(std::abs(ppl(x) - ppl(y)) <= noise)) continue;
      const bool differ = (jhigh(x) < jlow(y) || jhigh(y) < jlow(x)) && std::abs(std::log(jpt(x) / jpt(y))) > unit_noise;
      pairs.push_back({{"a", x["config_id"]}, {"b", y["config_id"]}, {"ppl_a", ppl(x)}, {"ppl_b", ppl(y)}, {"noise", noise},
                       {"joules_a", jpt(x)}, {"joules_b", jpt(y)}, {"joules_ratio", jpt(x) / jpt(y)}, {"joules_differ", differ},
                       {"epi_a", epi(x)}, {"epi_b", epi(y)}, {"bytes_a", bytes(x)}, {"bytes_b", bytes(y)}});
    }
  std::sort(pairs.begin(), pairs.end(), [](const json& p, const json& q) {
    return std::abs(std::log(p["joules_ratio"].get<double>())) > std::abs(std::log(q["joules_ratio"].get<double>()));
  });
  res["pairs"] = pairs;
  // Each hand-written map beside the allocated map of its own budget.
  json cmp = json::array();
  if (res.contains("allocation"))
    for (const auto& m : res["allocation"]["maps"]) {
      const std::string why = m["budget"].get<std::string>();
      if (why.rfind("bytes of ", 0) != 0 || m["config_id"].is_null()) continue;
      const json* hand = find_config(res, why.substr(9));
      const json* got = find_config(res, m["config_id"].get<std::string>());
      if (!hand || !got) continue;
      cmp.push_back({{"hand", (*hand)["config_id"]}, {"auto", (*got)["config_id"]}, {"hand_bytes", bytes(*hand)}, {"auto_bytes", bytes(*got)},
                     {"hand_kl", kld(*hand)}, {"auto_kl", kld(*got)}, {"auto_predicted_kl", m["predicted_kl"]},
                     {"hand_epi", epi(*hand)}, {"auto_epi", epi(*got)}});
    }
  res["allocation_vs_hand"] = cmp;
  // Each uniform map beside the allocated map of its fitted joules per token (energy budget).
  json ecmp = json::array();
  if (res.contains("allocation") && res["allocation"].contains("energy_maps"))
    for (const auto& m : res["allocation"]["energy_maps"]) {
      if (m["config_id"].is_null()) continue;
      const json* uni = find_config(res, m["budget_config"].get<std::string>());
      const json* got = find_config(res, m["config_id"].get<std::string>());
      if (!uni || !got) continue;
      ecmp.push_back({{"uniform", (*uni)["config_id"]}, {"auto", (*got)["config_id"]}, {"uniform_joules", jpt(*uni)}, {"uniform_fitted_joules", m["budget_joules"]},
                      {"auto_predicted_joules", m["predicted_joules"]}, {"auto_joules", jpt(*got)}, {"uniform_kl", kld(*uni)},
                      {"auto_predicted_kl", m["predicted_kl"]}, {"auto_kl", kld(*got)}, {"uniform_bytes", bytes(*uni)},
                      {"auto_bytes", bytes(*got)}, {"uniform_epi", epi(*uni)}, {"auto_epi", epi(*got)}});
    }
  res["energy_allocation_vs_uniform"] = ecmp;
  res["answers"] = answers(res);
}

std::string mixed_readme_block(const json& res, const json& manifest) {
  std::string s;
  const json& m = manifest["machine"];
  const json& o = res["options"];
  std::string source = "?";
  bool measured = false;
  for (const auto& c : res["configs"]) {
    source = c["energy"]["source"];
    measured = c["energy"]["measured"];
    break;
  }
  // Where the units were measured, which need not be where they were merged.
  std::string where;
  for (const auto& mo : res.value("measured_on", json::array())) {
    const json& um = mo["machine"];
    const std::string host = um.value("host", "");
    where += fmt::format("{}{}{} (family {}, model {}), {} threads, {} units between {} and {}", where.empty() ? "" : "; ",
                         host.empty() ? "" : host + ": ", um.value("cpu_model", "?"), um.value("cpu_family", -1),
                         um.value("cpu_model_number", -1), mo.value("threads", 0), mo.value("units", 0), mo.value("first_date", "?"),
                         mo.value("last_date", "?"));
  }
  if (where.empty()) where = "no machine yet (no unit measured)";
  s += fmt::format("Measured on {}; merged by `{}` on {} (family {}, model {}) at {}. Energy source: `{}`{}.\n\n", where,
                   manifest.value("command", ""), m.value("cpu_model", "?"), m.value("cpu_family", -1), m.value("cpu_model_number", -1),
                   manifest.value("date", ""), source,
                   measured ? "" : " — **modelled, not measured**: this machine exposes no RAPL or perf energy counter, so joules are "
                                   "the labelled model's estimate from time, bytes and operations (data/energy_model.json)");
  if (const std::string w = mixed_machines_warning(res); !w.empty()) s += "**" + w + "**\n\n";
  if (res.contains("only_machine"))
    s += fmt::format("Only the units measured on this machine ({} measured elsewhere are left out).\n\n", res.value("measured_elsewhere", 0));
  if (const std::string m = mixed_missing_line(res); !m.empty()) s += "**" + m + "**\n\n";
  s += fmt::format("Quality over the test split's first {} tokens (KLD, PPL) and {} verb-tense slots{}; speed and energy the median of {} "
                   "repetitions (range in brackets), one generation of {} prompt + {} generated tokens each; GPTQ with {} calibration windows.\n\n",
                   o["ppl_tokens"].get<long long>(), o["max_slots"].get<long long>() == 0 ? std::string("all") : std::to_string(o["max_slots"].get<long long>()),
                   "", o["reps"].get<int>(), o["prompt_tokens"].get<int>(), o["gen_tokens"].get<int>(), o["calibration_windows"].get<int>());
  s += "| config | kind | KiB | PPL | KLD [95% CI] | top-1 | verb tense [95% CI] | decode tok/s | mJ/token [range] | W | EPI (mJ) | frontier |\n";
  s += "|---|---|---:|---:|---|---:|---|---:|---|---:|---:|---|\n";
  std::vector<const json*> rows;
  for (const auto& c : res["configs"]) rows.push_back(&c);
  std::sort(rows.begin(), rows.end(), [](const json* a, const json* b) { return bytes(*a) > bytes(*b); });
  for (const json* c : rows) {
    const json& kl = ci(*c, {"row", "divergence", "kl", "ci95"});
    const json& vt = ci(*c, {"row", "verb_tense", "overall", "ci95"});
    std::string fr;
    if ((*c)["on_epi_frontier"].get<bool>()) fr += "EPI";
    if ((*c)["on_bytes_frontier"].get<bool>()) fr += fr.empty() ? "bytes" : ", bytes";
    s += fmt::format("| {} | {} | {} | {:.3f} | {:.3g} [{:.3g}, {:.3g}] | {:.4f} | {:.4f} [{:.4f}, {:.4f}] | {:.0f} | {} [{}, {}] | {:.1f} | {:.4g} | {} |\n",
                     (*c)["config_id"].get<std::string>(), (*c)["kind"].get<std::string>(), kb(bytes(*c)), ppl(*c), kld(*c), kl[0].get<double>(),
                     kl[1].get<double>(), num(*c, {"row", "divergence", "top1_agreement"}), acc(*c), vt[0].get<double>(), vt[1].get<double>(),
                     num(*c, {"row", "decode_tokens_per_s", "median"}), mj(jpt(*c)), mj(jlow(*c)), mj(jhigh(*c)),
                     num(*c, {"energy", "watts", "median"}), 1e3 * epi(*c), fr);
  }
  s += "\nEPI = joules per token ÷ verb-tense accuracy. Frontier: EPI = on the accuracy-vs-J/token frontier (`pareto_epi.png`), "
       "bytes = on the KLD-vs-bytes frontier (`pareto_bytes.png`).\n\n";
  if (!res.value("identical_models", json::array()).empty()) {
    s += "### Identical models measured as separate units\n\nSame bytes and bit-identical perplexity and KLD: the same weights, "
         "measured twice by the study. Their J/token ratio is the spread between units that the repetitions inside one unit do not "
         "show; below, a J/token difference counts only beyond the largest of them.\n\n| a | b | mJ/token a | mJ/token b | a / b | decode "
         "speed a / b |\n|---|---|---:|---:|---:|---:|\n";
    for (const auto& p : res["identical_models"])
      s += fmt::format("| {} | {} | {} | {} | {:.3f} | {:.3f} |\n", p["a"].get<std::string>(), p["b"].get<std::string>(),
                       mj(p["joules_a"].get<double>()), mj(p["joules_b"].get<double>()), p["joules_ratio"].get<double>(),
                       p["decode_speed_ratio"].get<double>());
    s += "\n";
  }
  s += "### Perplexity-matched pairs\n\nTwo configurations whose perplexities differ by less than the wider half-width of their ΔPPL "
       "intervals against fp32. They differ in J/token when the repetitions' ranges do not overlap and the ratio is beyond the "
       "identical models' spread above.\n\n";
  if (res["pairs"].empty()) {
    s += "No two configurations are that close in perplexity.\n\n";
  } else {
    s += "| a | b | PPL a | PPL b | mJ/token a | mJ/token b | a / b | differ? | EPI a | EPI b |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|\n";
    int n = 0;
    for (const auto& p : res["pairs"]) {
      if (++n > 15) break;
      s += fmt::format("| {} | {} | {:.3f} | {:.3f} | {} | {} | {:.3f} | {} | {:.4g} | {:.4g} |\n", p["a"].get<std::string>(), p["b"].get<std::string>(),
                       p["ppl_a"].get<double>(), p["ppl_b"].get<double>(), mj(p["joules_a"].get<double>()), mj(p["joules_b"].get<double>()),
                       p["joules_ratio"].get<double>(), p["joules_differ"].get<bool>() ? "yes" : "no", 1e3 * p["epi_a"].get<double>(),
                       1e3 * p["epi_b"].get<double>());
    }
    if (res["pairs"].size() > 15) s += fmt::format("\n({} more pairs in results.json)\n", res["pairs"].size() - 15);
    s += "\n";
  }
  if (res.contains("sensitivity") && res["sensitivity"].contains("linears")) {
    const json& sv = res["sensitivity"];
    s += fmt::format("### Layer sensitivity (`sensitivity.png`)\n\nOne Linear at a time in each recipe, every other Linear and the "
                     "embedding fp16; KLD against fp32 over {} test tokens, minus the all-fp16 model's {:.3g}.\n\n",
                     sv["tokens"].get<long long>(), sv["base_fp16"]["kl_mean"].get<double>());
    std::vector<std::string> recipes;
    for (const auto& e : sv["linears"])
      if (std::find(recipes.begin(), recipes.end(), e["recipe"].get<std::string>()) == recipes.end()) recipes.push_back(e["recipe"]);
    s += "| Linear |";
    for (const auto& r : recipes) s += " " + r + " |";
    s += "\n|---|" + [&] { std::string t; for (size_t i = 0; i < recipes.size(); ++i) t += "---:|"; return t; }() + "\n";
    std::map<std::pair<int, std::string>, std::map<std::string, double>> grid;
    for (const auto& e : sv["linears"]) grid[{e["layer"].get<int>(), e["kind"].get<std::string>()}][e["recipe"]] = e["dkl"];
    for (const auto& e : sv["layers"]) grid[{e["layer"].get<int>(), "whole layer"}][e["recipe"]] = e["dkl"];
    for (const auto& [k, v] : grid) {
      s += fmt::format("| layer {} {} |", k.first, k.second);
      for (const auto& r : recipes) s += v.count(r) ? fmt::format(" {:.3g} |", v.at(r)) : " - |";
      s += "\n";
    }
    s += "\n";
  }
  if (!res["allocation_vs_hand"].empty()) {
    s += "### Automatic allocation against the hand-written maps, at equal budgets\n\nThe solver chooses per Linear among fp16 and "
         "the sensitivity recipes to minimise the sum of the measured per-Linear KLD increases within the hand-written map's Linear "
         "bytes (exact frontier of a multiple-choice knapsack, `src/experiments/allocate.h`); then the chosen map is measured.\n\n";
    s += "| hand-written | KiB | KLD | EPI (mJ) | allocated | KiB | KLD predicted | KLD measured | EPI (mJ) |\n|---|---:|---:|---:|---|---:|---:|---:|---:|\n";
    for (const auto& c : res["allocation_vs_hand"])
      s += fmt::format("| {} | {} | {:.3g} | {:.4g} | {} | {} | {:.3g} | {:.3g} | {:.4g} |\n", c["hand"].get<std::string>(), kb(c["hand_bytes"].get<double>()),
                       c["hand_kl"].get<double>(), 1e3 * c["hand_epi"].get<double>(), c["auto"].get<std::string>(), kb(c["auto_bytes"].get<double>()),
                       c["auto_predicted_kl"].get<double>(), c["auto_kl"].get<double>(), 1e3 * c["auto_epi"].get<double>());
    s += "\n";
  }
  if (res.contains("energy_allocation_vs_uniform") && !res["energy_allocation_vs_uniform"].empty()) {
    const json& fit = res["allocation"]["energy_fit"];
    std::vector<std::string> prices;
    for (const auto& [r, v] : fit["joules_per_weight"].items()) prices.push_back(fmt::format("{} {:.3g} nJ", r, 1e9 * v.get<double>()));
    s += fmt::format("### Automatic allocation within an energy budget\n\nJoules per token fitted as a price per Linear weight of "
                     "each recipe over the {} measured configurations (R² {:.3f}, largest residual {:.3f} mJ; an estimate, used only to "
                     "choose): {}. The solver minimises the predicted KLD within each uniform map's fitted J/token (the budget); the chosen "
                     "map is then measured.\n\n",
                     fit["configs"].get<int>(), fit["r2"].get<double>(), 1e3 * fit["max_abs_residual_joules"].get<double>(),
                     fmt::join(prices, ", "));
    s += "| uniform | mJ/token measured | fitted (budget) | KLD | KiB | allocated | mJ/token predicted | mJ/token measured | KLD predicted | KLD measured | KiB | EPI uniform / allocated (mJ) |\n"
         "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|\n";
    for (const auto& c : res["energy_allocation_vs_uniform"])
      s += fmt::format("| {} | {} | {} | {:.3g} | {} | {} | {} | {} | {:.3g} | {:.3g} | {} | {:.4g} / {:.4g} |\n", c["uniform"].get<std::string>(),
                       mj(c["uniform_joules"].get<double>()), mj(c["uniform_fitted_joules"].get<double>()), c["uniform_kl"].get<double>(),
                       kb(c["uniform_bytes"].get<double>()),
                       c["auto"].get<std::string>(), mj(c["auto_predicted_joules"].get<double>()), mj(c["auto_joules"].get<double>()),
                       c["auto_predicted_kl"].get<double>(), c["auto_kl"].get<double>(), kb(c["auto_bytes"].get<double>()),
                       1e3 * c["uniform_epi"].get<double>(), 1e3 * c["auto_epi"].get<double>());
    s += "\n";
  }
  s += "### Answers, from the data above\n\n";
  for (const char* q : {"rq1", "rq2", "rq3", "rq4", "rq5"})
    if (res["answers"].contains(q)) s += fmt::format("- **{}**: {}\n", q, res["answers"][q]["text"].get<std::string>());
  return s;
}

std::string mixed_machines_warning(const json& res) {
  if (res.contains("only_machine")) return "";
  const int cpus = res.value("machines", 1), hosts = res.value("hosts", 1);
  if (cpus > 1)
    return fmt::format("Warning: the units were measured on {} different CPUs ({} hosts): speeds and joules (modelled ones too, since the "
                       "model charges time) mix machines and compare only within one; `--stage merge --per-machine` reports each "
                       "machine alone (by-machine/).",
                       cpus, hosts);
  if (hosts > 1)
    return fmt::format("Note: the units were measured on {} hosts with the same CPU: speeds and joules compare across them only as "
                       "far as those hosts are alike; `--stage merge --per-machine` reports each alone (by-machine/).",
                       hosts);
  return "";
}

std::string mixed_missing_line(const json& res) {
  const json& m = res.value("missing", json::array());
  if (m.empty()) return "";
  constexpr size_t kShown = 20;
  std::vector<std::string> names;
  for (size_t i = 0; i < m.size() && i < kShown; ++i) names.push_back(m[i].get<std::string>());
  return fmt::format("{} {} not measured: {}{}", m.size(), m.size() == 1 ? "unit is" : "units are", fmt::join(names, ", "),
                     m.size() > kShown ? fmt::format(" and {} more", m.size() - kShown) : std::string());
}

std::string mixed_summary_text(const json& res) {
  std::string s;
  for (const char* q : {"rq2", "rq4"})
    if (res["answers"].contains(q)) s += res["answers"][q]["text"].get<std::string>() + "\n";
  return s;
}

}  // namespace mqexp
