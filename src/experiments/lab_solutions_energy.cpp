// The reference write-ups of labs 04 and 05, rendered from experiments/28-energy/summary.json and
// experiments/27-mixed-epi/results.json (with their manifests for the provenance line). Every number below is
// read from those files or computed from them here; the answers are the ones `miniquant lab check 04 / 05
// --reference` grades against the same files. Only fields both the rounds format and the earlier trials
// format hold are read (a method's phases, savings and batch curve; a configuration's EPI, sensitivities and
// the allocation comparison), so regenerating either experiment regenerates these files.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/lab_solutions.h"
#include "miniquant/error.h"
#include "minigpt/quant_plan.h"

namespace mqexp {
namespace {

using json = nlohmann::json;

std::string provenance(const std::string& root, const std::string& dir, const std::string& file, const std::string& what) {
  const json man = read_json(root + "/" + dir + "/manifest.json");
  std::string commit = "an unrecorded commit";
  if (man.contains("build") && man["build"].contains("binary_configured_at_commit"))
    commit = man["build"]["binary_configured_at_commit"].get<std::string>();
  return fmt::format("Numbers: `{}/{}` ({} of {}, commit {}).", dir, file, what, man.value("date", std::string("an unrecorded date")), commit);
}

std::string name_of(const json& m) { return m.contains("name") ? m["name"].get<std::string>() : m.value("method", std::string()); }
double jpt(const json& m, const char* ph) { return m.at("phases").at(ph).at("joules_per_token").at("mean").get<double>(); }
std::string mj(double j) { return fmt::format("{:.4f} mJ", 1e3 * j); }
std::string ratio(const json& r) {
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", r.at("ratio").get<double>(), r.at("ratio_ci95_low").get<double>(), r.at("ratio_ci95_high").get<double>());
}
std::string saved(const json& r) { return fmt::format("{:.1f}%", 100.0 * (1.0 - r.at("ratio").get<double>())); }

const json& method(const json& model, const std::string& name) {
  for (const auto& m : model.at("methods"))
    if (name_of(m) == name) return m;
  throw mq::Error(fmt::format("experiments/28-energy/summary.json: MiniGPT has no method {}", name));
}

}  // namespace

std::string solution_04(const std::string& root) {
  const json s = read_json(root + "/experiments/28-energy/summary.json");
  const json& mg = s.at("models").at("minigpt");
  std::ostringstream o;
  o << solution_header("energy per token by phase", lab_list()[4], provenance(root, "experiments/28-energy", "summary.json", "the energy run"));
  o << "## The reference approach\n\n"
       "| TODO block | the library | file |\n|---|---|---|\n"
       "| A RAPL | `mq::energy::scan_rapl` (zones, which count in the total, what is skipped and why), `read_rapl` and "
       "`counter_delta` (one wrap at `max_energy_range_uj`), `RaplMeter` | `src/miniquant/energy/rapl.cpp` |\n"
       "| B energy model | `mq::energy::model_energy` (static W x s + J/flop, J/op, J/byte per level), `level_for` | "
       "`src/miniquant/energy/model.cpp` |\n"
       "| C phase tagging | `mqexp::run_generation`: the work of each phase first (in that phase), the meter read at every "
       "boundary, post for sampling and detokenizing | `src/experiments/energy_phases.cpp` |\n"
       "| D statistics | `mq::energy::summarize_trials`, `paired_ratio` (geometric mean of per-round ratios, t interval of their "
       "logs); the rounds themselves `mqexp::run_rounds` | `src/miniquant/energy/trial_stats.cpp`, `src/experiments/energy_rounds.cpp` |\n"
       "| E the run | `miniquant energy` -> `mqexp::run_energy`, `summarize_subject` | `src/experiments/energy_run.cpp`, "
       "`energy_summary.cpp` |\n\n";
  o << fmt::format("Energy source: `{}` ({}).\n\n", s.value("energy_source", std::string("?")).substr(0, s.value("energy_source", std::string("?")).find(':')),
                   s.value("measured", false) ? "measured by a meter" : "modelled: the labelled energy model, no counter readable");
  o << "## Measured: MiniGPT, energy per token by phase (means over the run)\n\n"
       "| method | prefill | decode | post | total | total vs fp32 (paired ratio, 95% interval) |\n|---|---:|---:|---:|---:|---|\n";
  std::vector<const json*> ms;
  for (const auto& m : mg.at("methods")) {
    if (!m.contains("phases") || m.value("role", std::string()) == "control") continue;
    ms.push_back(&m);
    const std::string vs = m.contains("savings_vs_fp32") ? ratio(m["savings_vs_fp32"]["energy_per_token"]["total"]) : "(the baseline)";
    o << fmt::format("| {} | {} | {} | {} | {} | {} |\n", name_of(m), mj(jpt(m, "prefill")), mj(jpt(m, "decode")), mj(jpt(m, "post")),
                     mj(jpt(m, "total")), vs);
  }
  if (ms.empty()) throw mq::Error("experiments/28-energy/summary.json: no measured MiniGPT method");
  const json* best = ms.front();
  for (const json* m : ms)
    if (jpt(*m, "total") < jpt(*best, "total")) best = m;
  const json& fp = method(mg, "fp32");
  const json& i4 = method(mg, "int4-g64");
  o << "\nThe four questions of the handout, answered from these numbers:\n\n";
  o << "## 1. Which method has the lowest total energy per generated token, and what is its paired ratio to fp32 (with its 95% interval)?\n\n";
  if (best->contains("savings_vs_fp32")) {
    const json& r = (*best)["savings_vs_fp32"]["energy_per_token"]["total"];
    o << fmt::format("**{}**: {} per token in total against fp32's {}, a paired ratio of {} ({} saved). Paired: each round ran "
                     "every method once, so the ratio is the geometric mean of the per-round ratios and its interval the t interval of "
                     "their logs.\n\n", name_of(*best), mj(jpt(*best, "total")), mj(jpt(fp, "total")), ratio(r), saved(r));
  } else {
    o << fmt::format("**fp32** itself ({} per token): no quantized method used less in this run.\n\n", mj(jpt(fp, "total")));
  }
  const json& sv = i4.at("savings_vs_fp32").at("energy_per_token");
  const bool pre = sv.at("prefill").at("ratio").get<double>() < sv.at("decode").at("ratio").get<double>();
  const char* ph = pre ? "prefill" : "decode";
  const char* other = pre ? "decode" : "prefill";
  o << "## 2. In which phase, prefill or decode, does int4-g64 save the most energy per token against fp32, and how much?\n\n";
  o << fmt::format("In **{}**: a paired ratio of {} ({} saved), against {} in {} ({} saved). {}\n\n", ph, ratio(sv.at(ph)), saved(sv.at(ph)),
                   ratio(sv.at(other)), other, saved(sv.at(other)),
                   pre ? "Prefill runs the whole prompt through each weight once, so the kernels' arithmetic dominates and int4's cheaper "
                         "decode of weights into registers pays in every token at once."
                       : "Decode reads every weight once per generated token, so the bytes a step moves dominate, and int4's codes with "
                         "one fp16 scale per 64 weights cut them most.");
  double b1 = NAN, b4 = NAN;
  for (const auto& b : fp.value("batch", json::array())) {
    if (b.at("batch") == 1) b1 = b.at("decode").at("joules_per_token").at("mean").get<double>();
    if (b.at("batch") == 4) b4 = b.at("decode").at("joules_per_token").at("mean").get<double>();
  }
  if (!std::isfinite(b1) || !std::isfinite(b4)) throw mq::Error("experiments/28-energy/summary.json: fp32 has no batch 1 and 4 decode");
  o << "## 3. How does fp32's decode energy per token change from batch 1 to batch 4, and why?\n\n";
  o << fmt::format("It falls from {} at batch 1 to {} at batch 4, {:.2f}x less per token: a decode step reads every weight once for "
                   "all the sequences of the batch, so the bytes (and the time the static power is paid for) are shared by four tokens "
                   "instead of one, while the arithmetic per token stays the same.\n\n", mj(b1), mj(b4), b1 / b4);
  o << "## 4. Were your joules measured by a meter or modelled, and what does that mean for your answer to question 1?\n\n";
  if (s.value("measured", false))
    o << "Measured, by the CPU's own counters (RAPL or the perf power PMU): question 1's ranking is this machine's, within the "
         "paired intervals over rounds; another CPU can rank the methods differently.\n";
  else
    o << "Modelled: this machine exposes no energy counter, so each phase's joules are the labelled energy model's estimate "
         "(static power x time + bytes per memory level + operations, data/energy_model.json). Question 1's ranking is what "
         "that model says about this machine's measured times and counted work; the coefficients are published figures for "
         "another process and one assumption (the static power), so it is an estimate to confirm on a machine with RAPL.\n";
  return o.str();
}

std::string solution_05(const std::string& root) {
  const json r = read_json(root + "/experiments/27-mixed-epi/results.json");
  std::ostringstream o;
  o << solution_header("per-layer mixed precision", lab_list()[5], provenance(root, "experiments/27-mixed-epi", "results.json", "the study"));
  o << "## The reference approach\n\n"
       "| TODO block | the library | file |\n|---|---|---|\n"
       "| A quant maps | `minigpt::QuantPlan::from_json`, `recipe_for` (the last matching rule wins) | `src/minigpt/quant_plan.cpp` |\n"
       "| B sensitivity | `mqexp::kl_of_logits`, `mean_kl`, `linear_sensitivity`; the study's units measure the same on the test "
       "split (`mixed.cpp`, `divergence.h`) | `src/experiments/sensitivity.cpp` |\n"
       "| C allocation | `mqexp::allocation_frontier` (non-dominated partial sums, item by item), `best_within`; brute force "
       "`best_within_brute_force` | `src/experiments/allocate.cpp` |\n"
       "| D EPI | `mqexp::epi`, `epi_frontier` (paired intervals decide \"cheaper\"), `epi_optimal` | `src/experiments/epi.cpp` |\n"
       "| E the study | `miniquant mixed` -> units, energy rounds, `allocate_mixed`, `merge_mixed`, `annotate_mixed` | "
       "`src/experiments/mixed.cpp`, `mixed_energy.cpp`, `mixed_report.cpp` |\n\n";
  std::vector<const json*> cs;
  for (const auto& c : r.at("configs"))
    if (c.contains("epi") && c["epi"].is_number()) cs.push_back(&c);
  if (cs.empty()) throw mq::Error("experiments/27-mixed-epi/results.json: no configuration with an EPI");
  std::sort(cs.begin(), cs.end(), [](const json* a, const json* b) { return (*a)["epi"].get<double>() < (*b)["epi"].get<double>(); });
  o << "## Measured: the ten lowest EPIs\n\n| configuration | kind | Linear + embedding bytes | J/token | accuracy | EPI | on the frontier |\n"
       "|---|---|---:|---:|---:|---:|:---:|\n";
  for (size_t i = 0; i < cs.size() && i < 10; ++i) {
    const json& c = *cs[i];
    o << fmt::format("| {} | {} | {:.0f} KiB | {} | {:.4f} | {:.5g} | {} |\n", c["config_id"].get<std::string>(), c.value("kind", std::string()),
                     c.at("row").at("bytes").get<double>() / 1024.0, mj(c.value("joules_per_token", NAN)), c.value("accuracy", NAN),
                     c["epi"].get<double>(), c.value("on_epi_frontier", false) ? "yes" : "");
  }
  const json& sens = r.at("sensitivity");
  int low = 99;
  for (const auto& l : sens.at("linears")) low = std::min(low, minigpt::LinearRecipe::parse(l["recipe"].get<std::string>()).scheme.bits);
  std::vector<const json*> ls;
  for (const auto& l : sens.at("linears"))
    if (minigpt::LinearRecipe::parse(l["recipe"].get<std::string>()).scheme.bits == low) ls.push_back(&l);
  std::sort(ls.begin(), ls.end(), [](const json* a, const json* b) { return (*a)["dkl"].get<double>() > (*b)["dkl"].get<double>(); });
  o << fmt::format("\n## Measured: the five most sensitive Linears at {} bits\n\n| layer | kind | recipe | KL increase over all-fp16 |\n|---:|---|---|---:|\n", low);
  for (size_t i = 0; i < ls.size() && i < 5; ++i)
    o << fmt::format("| {} | {} | {} | {:.4g} |\n", (*ls[i])["layer"].get<int>(), (*ls[i])["kind"].get<std::string>(),
                     (*ls[i])["recipe"].get<std::string>(), (*ls[i])["dkl"].get<double>());
  const json& b = *cs.front();
  o << "\nThe four questions of the handout, answered from these numbers:\n\n";
  o << "## 1. Which configuration has the lowest EPI in your run, and what are its J/token and accuracy?\n\n";
  o << fmt::format("**{}**: EPI {:.5g} J per unit of generalization accuracy, from {} per token at accuracy {:.4f}. EPI divides the energy "
                   "by what the model still gets right, so a map that saves joules by losing slots does not win by it.\n\n",
                   b["config_id"].get<std::string>(), b["epi"].get<double>(), mj(b.value("joules_per_token", NAN)), b.value("accuracy", NAN));
  const json& top = *ls.front();
  const std::string kind = top["kind"].get<std::string>();
  const std::string module = kind == "qkv" ? "attn.c_attn" : kind == "attn_out" ? "attn.c_proj" : kind == "mlp_up" ? "mlp.c_fc" : "mlp.c_proj";
  o << "## 2. Which Linear is the most sensitive for the lowest-bit recipe of your sensitivity table, and how large is its KL increase?\n\n";
  o << fmt::format("Layer {}'s **{}** (`h.{}.{}`) in {}: quantized alone, it adds {:.4g} nats of KL divergence per token over the "
                   "all-fp16 model, the largest of the {} Linears at {} bits; protecting it buys the most accuracy per byte.\n\n",
                   top["layer"].get<int>(), kind, top["layer"].get<int>(), module, top["recipe"].get<std::string>(), top["dkl"].get<double>(),
                   ls.size(), low);
  std::string front;
  const json* f0 = nullptr;
  for (const json* c : cs)
    if (c->value("on_epi_frontier", false)) {
      front += (front.empty() ? "" : ", ") + (*c)["config_id"].get<std::string>();
      if (!f0) f0 = c;
    }
  o << "## 3. Which configurations are on the accuracy-vs-J/token frontier, and what does that say about mixed maps?\n\n";
  if (f0)
    o << fmt::format("{}. On it, no other configuration is at least as accurate and cheaper beyond the paired interval; {} is its "
                     "cheapest-EPI point ({} per token, accuracy {:.4f}). Mixed and allocated maps on it are the ones that buy accuracy "
                     "at a price no uniform map offers.\n\n", front, (*f0)["config_id"].get<std::string>(), mj(f0->value("joules_per_token", NAN)),
                     f0->value("accuracy", NAN));
  else
    o << "No configuration is flagged on the frontier in this run.\n\n";
  o << "## 4. At the bytes of your own quant map, which map did the allocator choose, and is its KL divergence lower than yours?\n\n";
  const json* pair = nullptr;
  const json avh = r.value("allocation_vs_hand", json::array());  // held: pair points into it
  for (const auto& m : avh)
    if (m["hand"] != "uniform-int4" && m["hand"] != "protect-ends") {
      pair = &m;
      break;
    }
  if (!pair) throw mq::Error("experiments/27-mixed-epi/results.json: no allocated map beside a hand-written one (allocation_vs_hand)");
  const double hk = (*pair)["hand_kl"].get<double>(), ak = (*pair)["auto_kl"].get<double>();
  o << fmt::format("In the reference study the hand-written maps are the study's own; at the bytes of **{}** the allocator chose **{}**: "
                   "KL {:.4g} against {:.4g} for the hand-written map ({}). The allocation predicted {:.4g} by adding the Linears' "
                   "sensitivities; the measured KL tells how additive they really are.\n",
                   (*pair)["hand"].get<std::string>(), (*pair)["auto"].get<std::string>(), ak, hk, ak < hk ? "lower" : "not lower",
                   (*pair)["auto_predicted_kl"].get<double>());
  return o.str();
}

}  // namespace mqexp
