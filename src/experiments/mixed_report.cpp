// Frontier flags, allocation comparisons and the README block of experiments/27-mixed-epi, from the merged
// results (the answers and their statements are computed at merge time, mixed_answers.h).
#include "experiments/mixed_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "experiments/generalization_report.h"
#include "experiments/pareto.h"
#include "experiments/results.h"

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
double epi(const json& c) { return num(c, {"epi"}); }

const json* find_config(const json& res, const std::string& id) {
  for (const auto& c : res["configs"])
    if (c["config_id"] == id) return &c;
  return nullptr;
}

std::string mj(double j) { return std::isfinite(j) ? fmt::format("{:.4f}", 1e3 * j) : "-"; }
std::string kb(double b) { return fmt::format("{:.0f}", b / 1024.0); }
std::string ratio(const json& r) {
  if (!r.is_object()) return "-";
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", r["ratio"].get<double>(), r["ratio_ci95_low"].get<double>(), r["ratio_ci95_high"].get<double>());
}

std::string control_line(const json& en) {
  if (!en.contains("control")) return "Control: not measured.";
  const json& c = en["control"];
  // Rounds the adaptive loop added (mixed_energy.h) are said with the planned count.
  const int rounds = en["rounds"].get<int>(), planned = en.value("expected_rounds", rounds);
  const std::string count = rounds > planned ? fmt::format("{} paired rounds ({} planned, {} added while the control did not pass)",
                                                           rounds, planned, rounds - planned)
                                             : fmt::format("{} paired rounds", rounds);
  std::string s = fmt::format("**Control: {} / {} = {:.4f} [{:.4f}, {:.4f}]** in J/token over {}: {}.", c["name"].get<std::string>(),
                              c["of"].get<std::string>(), c["ratio"].get<double>(), c["low"].get<double>(), c["high"].get<double>(),
                              count,
                              c["passes"].get<bool>() ? "it contains 1.00 and lies inside ±3%, so differences beyond that are the maps'"
                                                      : "**it FAILS (does not contain 1.00 or is wider than ±3%): the comparisons below are "
                                                        "not to be trusted at that resolution**");
  if (en.contains("natural_control")) {
    const json& n = en["natural_control"];
    s += fmt::format(" The source's matrix names one allocation twice ({} and {}): measured as two configurations, {:.4f} [{:.4f}, {:.4f}] ({}).",
                     n["a"].get<std::string>(), n["b"].get<std::string>(), n["ratio"].get<double>(), n["low"].get<double>(), n["high"].get<double>(),
                     n["contains_one"].get<bool>() ? "contains 1.00" : "excludes 1.00");
  }
  return s;
}

std::string statement_marks(const json& answers, const std::string& rq) {
  std::string s;
  for (const auto& st : answers.value("statements", json::array()))
    if (st["id"].get<std::string>().rfind(rq + "/", 0) == 0)
      s += fmt::format("  - {} ({}): **{}**\n", st["text"].get<std::string>(), st["value"].get<std::string>(), st["mark"].get<std::string>());
  return s;
}

}  // namespace

void annotate_mixed(json& res) {
  json& cs = res["configs"];
  std::vector<std::pair<double, double>> b;
  for (const auto& c : cs) b.emplace_back(bytes(c), kld(c));
  const std::vector<bool> on_b = pareto_frontier(b);
  std::vector<std::string> epi_front;
  if (res.contains("answers"))
    for (const auto& f : res["answers"]["rq2"]["frontier"]) epi_front.push_back(f["config_id"]);
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i]["on_epi_frontier"] = std::find(epi_front.begin(), epi_front.end(), cs[i]["config_id"].get<std::string>()) != epi_front.end();
    cs[i]["on_bytes_frontier"] = static_cast<bool>(on_b[i]);
  }
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
}

std::string mixed_readme_block(const json& res, const json& manifest) {
  std::string s;
  const json& m = manifest["machine"];
  const json& o = res["options"];
  const json& en = res.value("energy", json::object());
  const json& an = res.value("answers", json::object());
  if (en.contains("rounds")) {
    s += control_line(en) + "\n\n";
    if (en.value("measured", false) == false)
      s += "Energy source: `" + en.value("energy_source", std::string("?")) +
           "`, **modelled, not measured**: no RAPL or perf energy counter here, so joules are the labelled model's estimate from time, "
           "bytes and operations (data/energy_model.json). Each claim below is re-priced over a box of coefficients (static W x0.5..x2, "
           "every per-byte and per-operation figure x0.25..x4) and marked robust only if it holds at every corner.\n\n";
  } else {
    s += "**No energy rounds measured yet** (`--stage energy`).\n\n";
  }
  std::string where;
  for (const auto& mo : res.value("measured_on", json::array())) {
    const json& um = mo["machine"];
    const std::string host = um.value("host", "");
    where += fmt::format("{}{}{} (family {}, model {}), {} threads, {} units between {} and {}", where.empty() ? "" : "; ",
                         host.empty() ? "" : host + ": ", um.value("cpu_model", "?"), um.value("cpu_family", -1),
                         um.value("cpu_model_number", -1), mo.value("threads", 0), mo.value("units", 0), mo.value("first_date", "?"),
                         mo.value("last_date", "?"));
  }
  s += fmt::format("Quality units measured on {}; merged by `{}` on {} (family {}, model {}) at {}.\n\n", where.empty() ? "no machine yet" : where,
                   manifest.value("command", ""), m.value("cpu_model", "?"), m.value("cpu_family", -1), m.value("cpu_model_number", -1),
                   manifest.value("date", ""));
  if (const std::string w = mixed_machines_warning(res); !w.empty()) s += "**" + w + "**\n\n";
  if (en.value("machines", json::array()).size() > 1)
    s += "**Warning: the energy rounds come from more than one machine; each round is paired on its own machine, but absolute J/token mix machines.**\n\n";
  if (res.contains("only_machine"))
    s += fmt::format("Only the units measured on this machine ({} measured elsewhere are left out).\n\n", res.value("measured_elsewhere", 0));
  if (const std::string m = mixed_missing_line(res); !m.empty()) s += "**" + m + "**\n\n";

  s += "### The five questions\n\n";
  const char* qs[5][2] = {{"rq1", "RQ1: do maps with the same perplexity differ in EPI?"},
                          {"rq2", "RQ2: what does the accuracy-vs-J/token frontier look like; do mixed maps sit on it where no uniform map does?"},
                          {"rq3", "RQ3: which layers and tensor kinds are most sensitive, in quality and in energy?"},
                          {"rq4", "RQ4: is the EPI-optimal map smaller or larger than uniform 4-bit?"},
                          {"rq5", "RQ5: do the savings come from bytes moved or from arithmetic?"}};
  for (const auto& [key, q] : qs) {
    if (!an.contains(key)) continue;
    s += fmt::format("- **{}** {}\n", q, an[key]["answer"].get<std::string>());
    s += statement_marks(an, key);
  }
  s += "\n";
  s += fmt::format("Quality over the test split's first {} tokens (KLD, PPL, next-token top-1) and {} in-distribution verb-tense slots; "
                   "accuracy = the generalization benchmark's (its test half, the scored paradigms, Wilson 95% interval; paired by item "
                   "against fp32); EPI = J/token ÷ that accuracy. Energy: {} paired rounds, "
                   "each {} generation(s) of {} prompt + {} generated tokens per configuration; GPTQ with {} calibration windows.\n\n",
                   o["ppl_tokens"].get<long long>(), o["max_slots"].get<long long>() == 0 ? std::string("all") : std::to_string(o["max_slots"].get<long long>()),
                   o["rounds"].get<int>(), o["gens"].get<int>(), o["prompt_tokens"].get<int>(), o["gen_tokens"].get<int>(),
                   o["calibration_windows"].get<int>());
  s += "| config | kind | KiB | PPL | KLD [95% CI] | top-1 agree | accuracy [Wilson 95%] | vs fp32 (paired) | in-dist. verb / next-token | decode tok/s | mJ/token [95% CI] | J/token vs fp32 (paired) | EPI (mJ) | frontier |\n";
  s += "|---|---|---:|---:|---|---:|---|---|---|---:|---|---|---:|---|\n";
  std::optional<Generalization> base;  // fp32's answers, to pair every configuration's accuracy with
  for (const auto& c : res["configs"])
    if (c["config_id"] == "fp32" && c["row"].contains("generalization")) base = generalization_from_json(c["row"]["generalization"]);
  std::vector<const json*> rows;
  for (const auto& c : res["configs"]) rows.push_back(&c);
  std::sort(rows.begin(), rows.end(), [](const json* a, const json* b) { return bytes(*a) > bytes(*b); });
  for (const json* c : rows) {
    const json& kl = (*c)["row"]["divergence"]["kl"]["ci95"];
    const json& cp = (*c)["accuracy_detail"];
    std::string vs = "-";
    if (base && (*c)["config_id"] != "fp32" && (*c)["row"].contains("generalization"))
      if (const auto d = paired_answers(generalization_from_json((*c)["row"]["generalization"]), *base))
        vs = fmt::format("{:+.4f} [{:+.4f}, {:+.4f}]", d->diff, d->low, d->high);
    std::string fr;
    if ((*c).value("on_epi_frontier", false)) fr += "EPI";
    if ((*c).value("on_bytes_frontier", false)) fr += fr.empty() ? "bytes" : ", bytes";
    const json e = (*c).value("energy", json());
    const std::string jt = e.is_object() ? fmt::format("{} [{}, {}]", mj(e["joules_per_token"]["total"]["mean"].get<double>()),
                                                       mj(e["joules_per_token"]["total"]["ci95_low"].get<double>()),
                                                       mj(e["joules_per_token"]["total"]["ci95_high"].get<double>()))
                                         : "-";
    s += fmt::format("| {} | {} | {} | {:.3f} | {:.3g} [{:.3g}, {:.3g}] | {:.4f} | {:.4f} [{:.4f}, {:.4f}] | {} | {:.4f} / {:.4f} | {} | {} | {} | {} | {} |\n",
                     (*c)["config_id"].get<std::string>(), (*c)["kind"].get<std::string>(), kb(bytes(*c)), ppl(*c), kld(*c), kl[0].get<double>(),
                     kl[1].get<double>(), num(*c, {"row", "divergence", "top1_agreement"}), cp["accuracy"].get<double>(),
                     cp["ci95"][0].get<double>(), cp["ci95"][1].get<double>(), vs, cp["verb_tense"].get<double>(), cp["next_token_top1"].get<double>(),
                     e.is_object() ? fmt::format("{:.0f}", e["tokens_per_s"]["decode"]["mean"].get<double>()) : "-", jt,
                     e.is_object() && e.contains("vs_fp32") ? ratio(e["vs_fp32"]["total"]) : "1 (baseline)",
                     std::isfinite(epi(*c)) ? fmt::format("{:.4g}", 1e3 * epi(*c)) : "-", fr);
  }
  s += "\nFrontier: EPI = on the accuracy-vs-J/token frontier (`pareto_epi.png`; off it means another configuration is at least as "
       "accurate (not below beyond the paired accuracy interval) and cheaper beyond its paired J/token interval, or more accurate beyond "
       "the interval and no dearer), bytes = on the KLD-vs-bytes frontier (`pareto_bytes.png`).\n\n";
  if (an.contains("pairs")) {
    s += fmt::format("### Perplexity-matched pairs\n\nTwo configurations whose perplexities differ by less than the wider half-width of "
                     "their ΔPPL intervals against fp32 ({} pairs; the {} with the largest EPI ratio below). Ratios are a / b, paired over "
                     "the rounds.\n\n",
                     an["pairs_total"].get<size_t>(), std::min<size_t>(15, an["pairs"].size()));
    s += "| a | b | PPL a | PPL b | J/token a / b [95% CI] | EPI a / b [95% CI] | differ in EPI? |\n|---|---|---:|---:|---|---|---|\n";
    int n = 0;
    for (const auto& p : an["pairs"]) {
      if (++n > 15) break;
      s += fmt::format("| {} | {} | {:.3f} | {:.3f} | {} | {} | {} |\n", p["a"].get<std::string>(), p["b"].get<std::string>(), p["ppl_a"].get<double>(),
                       p["ppl_b"].get<double>(), ratio(p["joules_ratio"]), ratio(p["epi_ratio"]), p["differ"].get<bool>() ? "yes" : "no");
    }
    s += "\n";
  }
  if (an.contains("rq3") && !an["rq3"]["single_differences"].empty()) {
    s += "### Maps that differ in one layer group or tensor kind\n\nThe energy side of RQ3: J/token of the map with the lower recipe "
         "over the one with the higher, paired.\n\n| differs in | higher | lower | recipes | J/token lower / higher [95% CI] | KLD higher | KLD lower |\n"
         "|---|---|---|---|---|---:|---:|\n";
    for (const auto& d : an["rq3"]["single_differences"])
      s += fmt::format("| {} | {} | {} | {} -> {} | {} | {:.3g} | {:.3g} |\n", d["differs_in"].get<std::string>(), d["higher"].get<std::string>(),
                       d["lower"].get<std::string>(), d["higher_recipe"].get<std::string>(), d["lower_recipe"].get<std::string>(),
                       ratio(d["joules_ratio_lower_to_higher"]), d["kld_higher"].get<double>(), d["kld_lower"].get<double>());
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
  if (!res.value("allocation_vs_hand", json::array()).empty()) {
    s += "### Automatic allocation against the hand-written maps, at equal budgets\n\nThe solver chooses per Linear among fp16 and "
         "the sensitivity recipes to minimise the sum of the measured per-Linear KLD increases within the hand-written map's Linear "
         "bytes (exact frontier of a multiple-choice knapsack, `src/experiments/allocate.h`); then the chosen map is measured.\n\n";
    s += "| hand-written | KiB | KLD | EPI (mJ) | allocated | KiB | KLD predicted | KLD measured | EPI (mJ) |\n|---|---:|---:|---:|---|---:|---:|---:|---:|\n";
    for (const auto& c : res["allocation_vs_hand"])
      s += fmt::format("| {} | {} | {:.3g} | {} | {} | {} | {:.3g} | {:.3g} | {} |\n", c["hand"].get<std::string>(), kb(c["hand_bytes"].get<double>()),
                       c["hand_kl"].get<double>(), c["hand_epi"].is_number() ? fmt::format("{:.4g}", 1e3 * c["hand_epi"].get<double>()) : "-",
                       c["auto"].get<std::string>(), kb(c["auto_bytes"].get<double>()), c["auto_predicted_kl"].get<double>(), c["auto_kl"].get<double>(),
                       c["auto_epi"].is_number() ? fmt::format("{:.4g}", 1e3 * c["auto_epi"].get<double>()) : "-");
    s += "\n";
  }
  if (res.contains("allocation") && res["allocation"].contains("energy_fit")) {
    const json& fit = res["allocation"]["energy_fit"];
    std::vector<std::string> prices;
    for (const auto& [r, v] : fit["joules_per_weight"].items()) prices.push_back(fmt::format("{} {:.3g} nJ", r, 1e9 * v.get<double>()));
    s += fmt::format("### Automatic allocation within an energy budget\n\nJoules per token fitted as a price per Linear weight of each "
                     "recipe over the {} hand-written configurations' rounds (R² {:.3f}; an estimate, used only to choose): {}. The solver "
                     "minimises the predicted KLD within each uniform map's fitted J/token; the chosen maps (`auto-e*`) are measured with "
                     "the others above.\n\n",
                     fit["configs"].get<int>(), fit["r2"].get<double>(), fmt::join(prices, ", "));
  }
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
  if (res.contains("energy") && res["energy"].contains("control")) s += control_line(res["energy"]) + "\n";
  for (const char* q : {"rq1", "rq2", "rq3", "rq4", "rq5"})
    if (res.contains("answers") && res["answers"].contains(q)) s += fmt::format("{}: {}\n", q, res["answers"][q]["answer"].get<std::string>());
  return s;
}

}  // namespace mqexp
