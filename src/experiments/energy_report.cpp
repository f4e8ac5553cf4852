#include "experiments/energy_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "experiments/generalization_report.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/json_shape.h"

namespace mqexp {
namespace {

using nlohmann::json;

const char* const kModels[] = {"minigpt", "gpt2_small_shaped"};

double mean(const json& s) { return s.at("mean").get<double>(); }
// "1.234 [1.200, 1.268]" in milli-units.
std::string milli_ci(const json& s) {
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", 1e3 * mean(s), 1e3 * s.at("ci95_low").get<double>(), 1e3 * s.at("ci95_high").get<double>());
}
// A paired ratio as "0.612 [0.605, 0.619]".
std::string ratio(const json& r) {
  if (r.is_null()) return "-";
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", r.at("ratio").get<double>(), r.at("ratio_ci95_low").get<double>(), r.at("ratio_ci95_high").get<double>());
}
// The saving 1 - ratio as "+38.8% [+38.1, +39.5]".
std::string pct(const json& r) {
  if (r.is_null()) return "-";
  return fmt::format("{:+.1f}% [{:+.1f}, {:+.1f}]", 100 * r.at("saving").get<double>(), 100 * r.at("saving_ci95_low").get<double>(),
                     100 * r.at("saving_ci95_high").get<double>());
}
std::string num(const json& j, const char* f) { return j.is_number() ? fmt::format(fmt::runtime(f), j.get<double>()) : std::string("-"); }
bool ok(const json& m) { return m.at("status") == "ok"; }
std::string name_of(const json& m) { return m.at("name").get<std::string>(); }
// A configuration's name (its scheme), with the source documents' name for it where they have one
// ("int8-per-channel+a8 (int8_dynamic)"); a summary written before the names were schemes shows its scheme instead.
std::string names(const json& m) {
  const std::string n = name_of(m), sch = m.value("scheme", std::string()), doc = m.value("source_name", std::string());
  if (m.value("role", "") == "control" || n.find('[') != std::string::npos) return n;
  if (!doc.empty() && doc != n) return fmt::format("{} ({})", n, doc);
  const bool plain = sch.empty() || sch == n || sch == "mixed";
  return plain ? n : fmt::format("{} ({})", n, sch);
}

std::string source_line(const json& s) {
  return fmt::format("energy source: {} ({})", s.at("energy_source").get<std::string>(),
                     s.at("measured").get<bool>() ? "measured by hardware counters"
                                                  : "MODELLED: estimates from time, bytes and operations, not measurements");
}

std::string control_line(const json& model) {
  if (!model.contains("control")) return "control: not measured (--no-control)";
  const json& c = model["control"];
  // How many rounds the answer took (summaries written before the adaptive rounds have no count).
  std::string rounds;
  if (c.contains("rounds")) {
    const int n = c["rounds"].get<int>(), added = c.value("added_rounds", 0);
    const size_t disturbed = c.value("disturbed_rounds", json::array()).size();
    rounds = fmt::format(" ({} rounds{}; {} disturbed)", n, added > 0 ? fmt::format(", {} added while the control did not pass", added) : "",
                         disturbed == 0 ? std::string("none") : fmt::format("{}", disturbed));
  }
  return fmt::format("control: {} / {} = {:.4f} [{:.4f}, {:.4f}] in total J/token over the rounds{}: {}", c["name"].get<std::string>(),
                     c["of"].get<std::string>(), c["ratio"].get<double>(), c["low"].get<double>(), c["high"].get<double>(), rounds,
                     c["passes"].get<bool>() ? "PASS (contains 1.00, inside +-3%)"
                                             : fmt::format("FAIL ({}): the comparisons below are not to be trusted at this resolution",
                                                           !c["contains_one"].get<bool>() ? "excludes 1.00" : "wider than +-3%"));
}

std::string statements_of(const json& s, const std::string& prefix, const std::string& bullet) {
  std::string t;
  for (const auto& st : s.value("statements", json::array()))
    if (st["id"].get<std::string>().rfind(prefix, 0) == 0)
      t += fmt::format("{}{}: {} [{}]\n", bullet, st["text"].get<std::string>(), st["value"].get<std::string>(), st["mark"].get<std::string>());
  return t;
}

std::string model_text(const json& s, const json& md) {
  const json& ms = md.at("methods");
  std::string t = "\n== " + md.value("title", std::string("model")) + " ==\n";
  t += control_line(md) + "\n";
  t += fmt::format("{:<44} {:>30} {:>30} {:>30} {:>9} {:>8} {:>7} {:>6} {:>6}\n", "configuration", "total mJ/token", "decode mJ/token",
                   "prefill mJ/token", "post mJ/t", "dec W", "PPL", "acc", "agree");
  for (const auto& m : ms) {
    if (!ok(m)) {
      t += fmt::format("{:<44} FAILED: {}\n", names(m), m.at("error").get<std::string>());
      continue;
    }
    const json& p = m.at("phases");
    const json& a = m.at("accuracy");
    t += fmt::format("{:<44} {:>30} {:>30} {:>30} {:>9.5f} {:>8.1f} {:>7} {:>6} {:>6}\n", names(m), milli_ci(p["total"]["joules_per_token"]),
                     milli_ci(p["decode"]["joules_per_token"]), milli_ci(p["prefill"]["joules_per_token"]), 1e3 * mean(p["post"]["joules_per_token"]),
                     mean(p["decode"]["watts"]), num(a.value("ppl", json()), "{:.3f}"), num(a.value("accuracy", json()), "{:.3f}"),
                     num(a.value("greedy_agreement_with_fp32", json()), "{:.3f}"));
  }
  t += "\nPaired ratios to fp32 (energy per token by phase, latency of a generation), median over rounds [95% sign-test CI]:\n";
  t += fmt::format("{:<44} {:>24} {:>24} {:>24} {:>24} {:>24}\n", "configuration", "total", "decode", "prefill", "latency", "total saving");
  for (const auto& m : ms)
    if (ok(m) && m.contains("savings_vs_fp32")) {
      const json& sv = m["savings_vs_fp32"];
      t += fmt::format("{:<44} {:>24} {:>24} {:>24} {:>24} {:>24}\n", names(m), ratio(sv["energy_per_token"]["total"]), ratio(sv["energy_per_token"]["decode"]),
                       ratio(sv["energy_per_token"]["prefill"]), ratio(sv["latency"]), pct(sv["energy_per_token"]["total"]));
    }
  if (!md.value("splits", json::array()).empty()) {
    t += "\nPrecision per inference phase: each split against the two uniform modes it mixes (total J/token, paired):\n";
    for (const auto& sp : md["splits"])
      t += fmt::format("  {}: vs {} {}, vs {} {} -> {}\n", sp["split"].get<std::string>(), sp["prefill_uniform"].get<std::string>(),
                       ratio(sp["vs_prefill_uniform"]), sp["decode_uniform"].get<std::string>(), ratio(sp["vs_decode_uniform"]),
                       sp["beats_both"].get<bool>() ? "beats both" : "does not beat both");
  }
  const json& rk = md.at("ranking");
  t += fmt::format("\nRanking by total J/token (lowest first); the winner stays on top in {:.0f}% of bootstrap resamples of the rounds:\n  ",
                   100 * rk["winner_stays_on_top"].get<double>());
  for (size_t i = 0; i < rk["order"].size(); ++i)
    t += fmt::format("{}{} {:.4f}", i ? ", " : "", rk["order"][i]["name"].get<std::string>(), 1e3 * rk["order"][i]["mean_joules_per_token"].get<double>());
  t += "\n\nBatch curve: mJ per generated token (decode + post) and decode tokens/s by batch size B; speed-up over B=1 (paired):\n";
  for (const auto& m : ms) {
    if (!ok(m)) continue;
    t += fmt::format("{:<44}", names(m));
    for (const auto& b : m["batch"]) {
      const std::string B = std::to_string(b["batch"].get<int>());
      const json& sp = m["batch_speedup_vs_b1"];
      t += fmt::format(" B={}: {:.4f} ({:.0f}/s{})", B, 1e3 * mean(b["total"]["joules_per_token"]), mean(b["decode"]["tokens_per_s"]),
                       sp.contains(B) ? fmt::format(", x{:.2f}", sp[B]["ratio"].get<double>()) : "");
    }
    t += "\n";
  }
  if (md.contains("prompt_curve")) {
    const json& pc = md["prompt_curve"];
    t += fmt::format("\nPrompt-length curve ({} generated tokens after each prompt, {} rounds): prefill / decode mJ per token and prefill's share "
                     "of the request's energy:\n", pc["gen_tokens"].get<int>(), pc["rounds"].get<int>());
    for (const auto& [m, pts] : pc["methods"].items()) {
      t += fmt::format("{:<20}", m);
      for (const auto& p : pts)
        t += fmt::format(" L={}: {:.4f}/{:.4f} ({:.0f}%)", p["prompt"].get<int>(), 1e3 * p["prefill_joules_per_token"].get<double>(),
                         1e3 * p["decode_joules_per_token"].get<double>(), 100 * p["prefill_share"].get<double>());
      const json& x = pc["crossover"][m];
      t += x.contains("never") ? "; prefill never overtakes decode\n"
           : x.value("at", json()).is_number() ? fmt::format("; prefill overtakes decode at ~{:.0f} tokens\n", x["at"].get<double>())
                                               : "; prefill already outweighs decode at the shortest prompt\n";
    }
  }
  (void)s;
  return t;
}

// What the report and the README block read (json_shape.h): the top of a summary, a model, a method that
// ran, and one that failed. Every key below is one energy_report_text or energy_readme_block reads.
const json& summary_spec() {
  static const json spec = json::parse(R"({
    "measured": "bool", "energy_source": "string", "warning?": "string",
    "hardware": {"cpu_model": "string", "threads_used": "int", "kernel": "string", "governor": "string|null"},
    "options": {"rounds": "int", "warmup": "int", "prompt_tokens": "int", "gen_tokens": "int", "batch": ["int"],
                "batch_steps": "int", "batch_prompt": "int", "batch_rounds?": "int"},
    "models": {"*": "object"},
    "fp32_kernel_check?": {"rows": [{"out": "int", "in": "int", "batch": "int", "ours_us": "number", "eigen_us": "number",
                                     "eigen_over_ours": "number", "low": "number", "high": "number"}]},
    "statements?": [{"id": "string", "text": "string", "value": "string", "mark": "string"}],
    "machine?": {"cpu_model?": "string", "cpu_family?": "int", "cpu_model_number?": "int", "cpu_stepping?": "int",
                 "load_average?": {"one?": "number"}, "omp_wait_policy?": {"policy": "string", "chosen_by": "string"}},
    "seconds?": "number", "date?": "string",
    "model_coefficients?": {"file?": "string", "coefficients": {"*": {"value": "number", "source": "any"}}}
  })");
  return spec;
}
// A paired ratio as ratio() prints it (null: not computed); a saving adds what pct() prints.
json ratio_spec(bool saving) {
  json r = {{"ratio", "number"}, {"ratio_ci95_low", "number"}, {"ratio_ci95_high", "number"}};
  if (saving) r.update(json{{"saving", "number"}, {"saving_ci95_low", "number"}, {"saving_ci95_high", "number"}});
  return {{"|", json::array({"null", r})}};
}
const json& model_spec() {
  static const json spec = [] {
    const json ratio = ratio_spec(false);
    return json{{"title?", "string"},
                {"methods", json::array({{{"status", "string"}, {"name", "string"}, {"scheme?", "string"}, {"role?", "string"}}})},
                {"control?", {{"name", "string"}, {"of", "string"}, {"ratio", "number"}, {"low", "number"}, {"high", "number"},
                              {"passes", "bool"}, {"contains_one", "bool"}, {"rounds?", "int"}, {"added_rounds?", "int"},
                              {"disturbed_rounds?", json::array({"int"})}}},
                {"splits?", json::array({{{"split", "string"}, {"prefill_uniform", "string"}, {"decode_uniform", "string"},
                                          {"vs_prefill_uniform", ratio}, {"vs_decode_uniform", ratio}, {"beats_both", "bool"}}})},
                {"ranking", {{"winner", "string"}, {"winner_stays_on_top", "number"},
                             {"order", json::array({{{"name", "string"}, {"mean_joules_per_token", "number"}}})}}},
                {"prompt_curve?", {{"gen_tokens", "int"}, {"rounds", "int"},
                                   {"methods", {{"*", json::array({{{"prompt", "int"}, {"prefill_joules_per_token", "number"},
                                                                    {"decode_joules_per_token", "number"}, {"prefill_share", "number"}}})}}},
                                   {"crossover", {{"*", {{"never?", "any"}, {"at?", "number|null"}, {"longest?", "int"}}}}}}}};
  }();
  return spec;
}
const json& method_spec() {
  static const json spec = [] {
    const json mean = {{"mean", "number"}};
    const json stat = {{"mean", "number"}, {"ci95_low", "number"}, {"ci95_high", "number"}};
    const json ratio = ratio_spec(false), saving = ratio_spec(true);
    return json{{"role", "string"},
                {"phases", {{"total", {{"joules_per_token", stat}}},
                            {"decode", {{"joules_per_token", stat}, {"watts", mean}, {"tokens_per_s", mean}}},
                            {"prefill", {{"joules_per_token", stat}}},
                            {"post", {{"joules_per_token", mean}}}}},
                {"accuracy", "object"},
                {"batch", json::array({{{"batch", "int"}, {"total", {{"joules_per_token", mean}}}, {"decode", {{"tokens_per_s", mean}}}}})},
                {"batch_speedup_vs_b1", {{"*", {{"ratio", "number"}, {"ratio_ci95_low", "number"}, {"ratio_ci95_high", "number"}}}}},
                {"savings_vs_fp32?", {{"energy_per_token", {{"total", saving}, {"decode", ratio}, {"prefill", ratio}}}, {"latency", ratio}}}};
  }();
  return spec;
}

}  // namespace

void check_energy_summary(const json& s, const std::string& file) {
  mq::check_json_shape(s, summary_spec(), file);
  if (!s.at("measured").get<bool>() && !s.contains("model_coefficients"))
    throw mq::Error(fmt::format("{}: /: key \"model_coefficients\" is missing (a modelled run records its coefficients); the file is "
                                "corrupt or not the one meant",
                                file));
  for (const auto& [key, model] : s.at("models").items()) {
    const std::string at_model = fmt::format("/models/{}", mq::clip_text(key, 40));
    mq::check_json_shape(model, model_spec(), file, at_model);
    const json& ms = model.at("methods");
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::string at = fmt::format("{}/methods/{}", at_model, i);
      if (ms[i].at("status") == "ok")
        mq::check_json_shape(ms[i], method_spec(), file, at);
      else
        mq::check_json_shape(ms[i], json{{"error", "string"}}, file, at);
    }
    // The README's line on small batches reads the baseline's speed-ups; the curve's text reads each
    // method's crossover, and "never" names the longest prompt tried.
    if (model.contains("prompt_curve")) {
      const json& pc = model.at("prompt_curve");
      for (const auto& [m, pts] : pc.at("methods").items())
        if (!pc.at("crossover").contains(m))
          throw mq::Error(fmt::format("{}: {}/prompt_curve/crossover: key \"{}\" is missing (every curve method has its crossover)", file,
                                      at_model, mq::clip_text(m, 40)));
      for (const auto& [m, x] : pc.at("crossover").items())
        if (x.contains("never") && !x.contains("longest"))
          throw mq::Error(fmt::format("{}: {}/prompt_curve/crossover/{}: key \"longest\" is missing (a crossover that never happens "
                                      "names the longest prompt)",
                                      file, at_model, mq::clip_text(m, 40)));
    }
  }
}

std::string energy_report_text(const json& s) {
  std::string t = "miniquant energy: energy per token by inference phase, measured in paired interleaved rounds\n";
  t += source_line(s) + "\n";
  if (!s.value("warning", std::string()).empty()) t += "WARNING: " + s["warning"].get<std::string>() + "\n";
  const json& hw = s.at("hardware");
  t += fmt::format("machine: {}, {} threads, kernel {}, governor {}\n", hw.at("cpu_model").get<std::string>(), hw.at("threads_used").get<int>(),
                   hw.at("kernel").get<std::string>(), hw.at("governor").is_null() ? "unreadable" : hw.at("governor").get<std::string>());
  const json& o = s.at("options");
  t += fmt::format("design: {} rounds after {} warm-up; each round runs one generation on every configuration back to back, in an order "
                   "drawn at random each round (seed 42), every configuration's model moved to new memory as the round begins (where an "
                   "instance's pages land is drawn again each round); prompt {} tokens, {} generated; batch curve B = {} ({} decode steps "
                   "after a {}-token prompt) in {} rounds of its own after 1 warm-up\n",
                   o.at("rounds").get<int>(), o.at("warmup").get<int>(), o.at("prompt_tokens").get<int>(), o.at("gen_tokens").get<int>(),
                   o.at("batch").dump(), o.at("batch_steps").get<int>(), o.at("batch_prompt").get<int>(), o.value("batch_rounds", o.at("rounds").get<int>()));
  t += "Units: mJ per token, mean [95% CI]. prefill: per prompt token; decode: per decode step; post and total: per generated token.\n";
  // The controls first: whether the rest can be read at all.
  for (const char* k : kModels)
    if (s.at("models").contains(k)) t += s["models"][k].value("title", std::string(k)) + " " + control_line(s["models"][k]) + "\n";
  for (const char* k : kModels)
    if (s.at("models").contains(k)) t += model_text(s, s["models"][k]);
  if (s.contains("fp32_kernel_check")) {
    t += "\nfp32 baseline check: mq::gemm_fp32 against Eigen's product on each Linear shape (out x in), paired ratio Eigen time / ours:\n";
    for (const auto& r : s["fp32_kernel_check"]["rows"])
      t += fmt::format("  {}x{} B={}: ours {:.1f} us, Eigen {:.1f} us, x{:.2f} [{:.2f}, {:.2f}]\n", r["out"].get<int>(), r["in"].get<int>(),
                       r["batch"].get<int>(), r["ours_us"].get<double>(), r["eigen_us"].get<double>(), r["eigen_over_ours"].get<double>(),
                       r["low"].get<double>(), r["high"].get<double>());
  }
  t += "\nStatements and their robustness to the energy model's coefficients (static W x0.5..x2, every other coefficient x0.25..x4):\n";
  t += statements_of(s, "", "  ");
  return t;
}

std::string energy_readme_block(const json& s) {
  std::string t;
  const bool measured = s.at("measured").get<bool>();
  t += fmt::format("**{}.**\n\n", source_line(s));
  for (const char* k : kModels)
    if (s.at("models").contains(k)) t += "**" + s["models"][k].value("title", std::string(k)) + " " + control_line(s["models"][k]) + "**\n\n";
  if (s.contains("machine") && s.contains("seconds")) {
    const json& m = s.at("machine");
    const json wait = m.value("omp_wait_policy", json{{"policy", "default (spin, then sleep)"}, {"chosen_by", "not recorded"}});
    t += fmt::format("Run on {} (family {}, model {}, stepping {}; load average {:.2f} at the end; OpenMP threads waiting {}, chosen by {}), {}; "
                     "it took {:.1f} min there. "
                     "Design: {} paired rounds of one generation (every configuration in every round, in a seeded random order; up to {} while a "
                     "control does not pass), {} warm-up; comparisons are medians of the per-round ratios with sign-test 95% "
                     "intervals; the batch curve in {} rounds of its own.\n\n",
                     m.value("cpu_model", std::string("an unknown CPU")), m.value("cpu_family", -1), m.value("cpu_model_number", -1),
                     m.value("cpu_stepping", -1), m.value("load_average", json::object()).value("one", 0.0),
                     wait.at("policy").get<std::string>(), wait.at("chosen_by").get<std::string>(), s.value("date", std::string("unknown date")), s.at("seconds").get<double>() / 60, s["options"]["rounds"].get<int>(),
                     s["options"].value("max_rounds", s["options"]["rounds"].get<int>()), s["options"]["warmup"].get<int>(), s["options"].value("batch_rounds", s["options"]["rounds"].get<int>()));
  }
  if (!measured)
    t += "Every joule below is an estimate from the model, labelled `model:` in every file; no hardware counter was readable on the "
         "machine that ran this (see `hardware.meters` in summary.json for why). Each statement carries its robustness over the "
         "coefficient box.\n\n";
  for (const char* key : kModels) {
    if (!s.at("models").contains(key)) continue;
    const json& md = s["models"][key];
    const json& ms = md["methods"];
    t += fmt::format("### {}\n\n", md.value("title", std::string(key)));
    t += "| configuration | total mJ/token [95% CI] | ratio to fp32, total (paired) | decode | prefill | generalization accuracy "
         "[Wilson 95%] | vs fp32 (paired by item) | decode tok/s |\n"
         "|---|---|---|---|---|---|---|---:|\n";
    const json* base_acc = nullptr;  // fp32's benchmark answers, to pair every configuration with
    for (const auto& m : ms)
      if (ok(m) && m["role"] == "baseline" && m["accuracy"].contains("generalization")) base_acc = &m["accuracy"]["generalization"];
    for (const auto& m : ms) {
      if (!ok(m)) {
        t += fmt::format("| {} | failed: {} | | | | | | |\n", names(m), m["error"].get<std::string>());
        continue;
      }
      const json sv = m.value("savings_vs_fp32", json());
      const json& a = m["accuracy"];
      std::string acc = num(a.value("accuracy", json()), "{:.4f}"), vs;
      if (a.contains("accuracy_ci95")) acc += fmt::format(" [{:.4f}, {:.4f}]", a["accuracy_ci95"][0].get<double>(), a["accuracy_ci95"][1].get<double>());
      if (base_acc && a.contains("generalization") && m["role"] != "baseline")
        if (const auto p = paired_answers(generalization_from_json(a["generalization"]), generalization_from_json(*base_acc)))
          vs = fmt::format("{:+.4f} [{:+.4f}, {:+.4f}]{}", p->diff, p->low, p->high, p->high < 0 ? " below" : p->low > 0 ? " above" : " tie");
      t += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.0f} |\n", names(m), milli_ci(m["phases"]["total"]["joules_per_token"]),
                       sv.is_null() ? "1 (baseline)" : ratio(sv["energy_per_token"]["total"]), sv.is_null() ? "" : ratio(sv["energy_per_token"]["decode"]),
                       sv.is_null() ? "" : ratio(sv["energy_per_token"]["prefill"]), acc, vs, mean(m["phases"]["decode"]["tokens_per_s"]));
    }
    t += "\n";
    for (const auto& sp : md.value("splits", json::array()))
      t += fmt::format("- **Precision per phase, {}**: {} both uniform modes: against {} {}, against {} {} (total J/token, paired).\n",
                       sp["split"].get<std::string>(), sp["beats_both"].get<bool>() ? "beats" : "does not beat", sp["prefill_uniform"].get<std::string>(),
                       ratio(sp["vs_prefill_uniform"]), sp["decode_uniform"].get<std::string>(), ratio(sp["vs_decode_uniform"]));
    for (const auto& m : ms)
      if (ok(m) && m["role"] == "baseline") {
        const json& sp = m["batch_speedup_vs_b1"];
        std::string parts;
        for (const auto& [B, r] : sp.items()) parts += fmt::format("{}B={} x{}", parts.empty() ? "" : ", ", B, ratio(r));
        t += fmt::format("- **fp32 baseline at small batches**: decode tokens/s against B=1 (paired): {}.\n", parts);
      }
    if (md.contains("prompt_curve"))
      for (const auto& [m, x] : md["prompt_curve"]["crossover"].items())
        t += fmt::format("- **Prompt length, {}**: {}.\n", m,
                         x.contains("never") ? fmt::format("prefill's share of a request never overtakes decode's up to {} prompt tokens",
                                                           x["longest"].get<int>())
                         : x.value("at", json()).is_number()
                             ? fmt::format("prefill's share overtakes decode's at about {:.0f} prompt tokens", x["at"].get<double>())
                             : std::string("prefill's share already exceeds decode's at the shortest prompt"));
    t += fmt::format("- **Ranking** (lowest total J/token first): {}, which stays on top in {:.0f}% of resamples of the rounds.\n\n",
                     md["ranking"]["winner"].get<std::string>(), 100 * md["ranking"]["winner_stays_on_top"].get<double>());
    t += "Statements, re-priced over the coefficient box:\n\n" + statements_of(s, std::string(key) + "/", "- ") + "\n";
  }
  if (!measured) {
    t += "### The model and how far to trust it\n\n";
    t += "E = static W x measured seconds + sum over levels (bytes from that level x J/byte) + fp32 flops x J/flop + int8 ops x J/op. "
         "Bytes are the sweep's decode traffic terms (weights as stored with scales, embedding, fp32 parameters, activations, KV cache), "
         "each charged to the cache level its working set fits in on this CPU. Coefficients (`" +
         s["model_coefficients"].value("file", std::string()) + "`):\n\n";
    for (const auto& [k, v] : s["model_coefficients"]["coefficients"].items())
      t += fmt::format("- `{}` = {:.4g}: {}\n", k, v["value"].get<double>(), v["source"].is_string() ? v["source"].get<std::string>() : v["source"].dump());
    t += "\nTrust: a ratio within one run is as good as the paired time measurements and the byte counts (both real); the absolute "
         "joules are order-of-magnitude estimates, because the static term is an assumption and the per-access energies are 45 nm "
         "figures that leave out instruction overhead. A statement marked robust holds for every corner of the coefficient box; one "
         "marked NOT robust names the corner that overturns it. `miniquant energy --calibrate` on a machine with RAPL replaces the "
         "coefficients with fitted values.\n";
  }
  return t;
}

}  // namespace mqexp
