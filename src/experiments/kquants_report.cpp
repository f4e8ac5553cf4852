// The README block of experiments/29-kquants, from results.json and manifest.json alone.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/kquants.h"

namespace mqexp {
namespace {

// The goal rows of the issue: ours with the plain search against llama.cpp without importance, ours with the
// importance against llama.cpp with it (<= 1 at every type), and our GPTQ against llama.cpp with importance
// (<= 0.7 at q2_k, q3_k and q4_k).
constexpr double kGptqGoal = 0.7;
bool gptq_goal_type(const std::string& t) { return t == "q2_k" || t == "q3_k" || t == "q4_k"; }

std::string sci(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

std::string kquants_readme_block(const nlohmann::json& r, const nlohmann::json& m) {
  std::string s;
  s += fmt::format("Measured by `miniquant kquants` on {} ({} threads), {}; commit {}. Test split: {} tokens; seed {}; "
                   "importance and GPTQ calibration: {} windows of the val split. The run took {:.1f} min.\n\n",
                   m.at("machine").value("cpu_model", "?"), m.value("threads", 0), m.value("date", "?"),
                   commit_text(m.at("build")), r.at("rows").empty() ? 0 : r.at("rows")[0].value("tokens", 0LL),
                   r.value("seed", 0), r.value("calibration_windows", 0), m.at("durations_s").value("total", 0.0) / 60.0);
  const auto& g = r.at("ggml");
  s += fmt::format("llama.cpp's quantizer: `ggml_quantize_chunk` of {} (sha256 {}). Its blocks of every tensor were also "
                   "decoded by our dequantizer and by ggml's `to_float`: {} tensors, {} mismatches.\n\n",
                   g.value("library", "?"), g.value("sha256", "?").substr(0, 16), g.value("dequantized_tensors_checked", 0LL),
                   g.value("dequantizer_mismatches", 0LL));

  // (type, quantizer) -> row
  std::map<std::pair<std::string, std::string>, const nlohmann::json*> at;
  std::vector<std::string> types;
  for (const auto& row : r.at("rows")) {
    const std::string t = row.at("type");
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    at[{t, row.at("quantizer").get<std::string>()}] = &row;
  }
  auto kld = [&](const std::string& t, const std::string& q) -> double {
    const auto it = at.find({t, q});
    return it != at.end() && it->second->value("ok", false) ? it->second->at("kld").at("mean").get<double>() : NAN;
  };

  s += "### KL divergence against fp32, per type and quantizer\n\n";
  s += "| type | quantizer | bits/w (Linears) | KLD mean [95% CI] | top-1 agree | PPL | ΔPPL [95% CI] | verb-tense acc. | our recipe |\n";
  s += "|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const std::string& t : types)
    for (const auto& row : r.at("rows")) {
      if (row.at("type") != t) continue;
      if (!row.value("ok", false)) {
        s += fmt::format("| {} | {} | failed: {} | | | | | | |\n", t, row.at("quantizer").get<std::string>(), row.value("error", "?"));
        continue;
      }
      const auto& k = row.at("kld");
      const auto& d = row.at("dppl");
      s += fmt::format("| {} | {} | {:.4f} | {} [{}, {}] | {:.4f} | {:.3f} | {:+.4f} [{:+.4f}, {:+.4f}] | {:.4f} | {} |\n", t,
                       row.at("quantizer").get<std::string>(), row.at("bits_per_weight").get<double>(), sci(k.at("mean")),
                       sci(k.at("low")), sci(k.at("high")), row.at("top1").get<double>(), row.at("ppl").get<double>(),
                       d.at("mean").get<double>(), d.at("low").get<double>(), d.at("high").get<double>(),
                       row.at("verb_tense_accuracy").get<double>(),
                       row.at("quantizer").get<std::string>().starts_with("ours") ? fmt::format("`{}`", row.at("recipe").get<std::string>()) : "");
    }

  // Paired intervals of the ratios (results of runs from before they were recorded have none: point values only).
  std::map<std::tuple<std::string, std::string, std::string>, const nlohmann::json*> ratio_at;
  if (r.contains("kld_ratios"))
    for (const auto& q : r.at("kld_ratios"))
      ratio_at[{q.at("type").get<std::string>(), q.at("numerator").get<std::string>(), q.at("denominator").get<std::string>()}] = &q;
  auto ci = [&](const std::string& t, const std::string& num, const std::string& den) -> std::string {
    const auto it = ratio_at.find({t, num, den});
    return it == ratio_at.end() ? "" : fmt::format(" [{:.3f}, {:.3f}]", it->second->at("low").get<double>(), it->second->at("high").get<double>());
  };

  s += "\n### The goals: KLD ratios (ours / llama.cpp's; below 1: ours is closer to fp32)\n\n";
  if (!ratio_at.empty())
    s += "Each ratio with its 95% interval, paired by test window (both rows scored on the same windows; cluster-robust "
         "delta method).\n\n";
  s += "| type | ours / llama.cpp (no importance) | ours+imatrix / llama.cpp+imatrix | ours+fisher / llama.cpp+imatrix | "
       "ours-gptq / llama.cpp+imatrix | ours-gptq / llama.cpp | lowest KLD |\n|---|---:|---:|---:|---:|---:|---|\n";
  int search_met = 0, search_total = 0, gptq_met = 0, gptq_total = 0, fisher_met = 0, fisher_total = 0;
  std::string misses;
  for (const std::string& t : types) {
    const double plain = kld(t, "ours") / kld(t, "llama.cpp"), imp = kld(t, "ours+imatrix") / kld(t, "llama.cpp+imatrix");
    const double gptq = kld(t, "ours-gptq") / kld(t, "llama.cpp+imatrix"), gptq_plain = kld(t, "ours-gptq") / kld(t, "llama.cpp");
    const double fisher = kld(t, "ours+fisher") / kld(t, "llama.cpp+imatrix");
    std::string best = "?";
    double lo = INFINITY;
    for (const std::string& q : kquant_quantizers())
      if (kld(t, q) < lo) lo = kld(t, q), best = q;
    const bool goal = gptq_goal_type(t);
    s += fmt::format("| {} | {:.3f}{}{} | {:.3f}{}{} | {:.3f}{}{} | {:.3f}{}{} | {:.3f}{} | {} |\n", t, plain, ci(t, "ours", "llama.cpp"),
                     plain <= 1 ? "" : " (missed)", imp, ci(t, "ours+imatrix", "llama.cpp+imatrix"), imp <= 1 ? "" : " (missed)",
                     fisher, ci(t, "ours+fisher", "llama.cpp+imatrix"), std::isnan(fisher) ? " (not measured)" : fisher <= 1 ? "" : " (above)",
                     gptq, ci(t, "ours-gptq", "llama.cpp+imatrix"),
                     goal ? (gptq <= kGptqGoal ? " (goal met)" : " (goal missed)") : "", gptq_plain, ci(t, "ours-gptq", "llama.cpp"), best);
    for (const double v : {plain, imp}) {
      ++search_total;
      search_met += v <= 1;
    }
    if (plain > 1) misses += fmt::format(" {} without importance by {:.1f}%{};", t, 100 * (plain - 1), ci(t, "ours", "llama.cpp"));
    if (imp > 1) misses += fmt::format(" {} with importance by {:.1f}%{};", t, 100 * (imp - 1), ci(t, "ours+imatrix", "llama.cpp+imatrix"));
    if (!std::isnan(fisher)) {
      ++fisher_total;
      fisher_met += fisher <= 1;
    }
    if (goal) {
      ++gptq_total;
      gptq_met += gptq <= kGptqGoal;
      if (gptq > kGptqGoal) misses += fmt::format(" GPTQ at {} by {:.2f} (ratio {:.3f}, goal {});", t, gptq - kGptqGoal, gptq, kGptqGoal);
    }
  }
  s += fmt::format("\nOurs with the search at or below llama.cpp with the same importance: {} of {} comparisons. Ours with "
                   "GPTQ at most {}x llama.cpp's KLD (with importance) at q2_k, q3_k and q4_k: {} of {}.{}\n",
                   search_met, search_total, kGptqGoal, gptq_met, gptq_total,
                   misses.empty() ? "" : " Missed:" + misses.substr(0, misses.size() - 1) + ".");
  if (fisher_total > 0)
    s += fmt::format("Ours with the search weighted by the Fisher diagonal (gradients: more than the importance llama.cpp is given) at "
                     "or below llama.cpp with importance: {} of {} types.\n", fisher_met, fisher_total);
  return s;
}

}  // namespace mqexp
