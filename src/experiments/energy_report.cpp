#include "experiments/energy_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/json_shape.h"

namespace mqexp {
namespace {

using nlohmann::json;

const char* const kModelTitles[][2] = {{"minigpt", "MiniGPT (the shipped checkpoint; weights sit in L2/L3)"},
                                       {"gpt2_small_shaped", "GPT-2-small-shaped body (random weights; fp32 weights come from DRAM)"}};

double mean(const json& s) { return s.at("mean").get<double>(); }
// "1.234 [1.200, 1.268]" in milli-units.
std::string milli_ci(const json& s) {
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", 1e3 * mean(s), 1e3 * s.at("ci95_low").get<double>(), 1e3 * s.at("ci95_high").get<double>());
}
std::string pct_ci(const json& r) {
  if (r.is_null()) return "-";
  return fmt::format("{:+.1f}% [{:+.1f}, {:+.1f}]", 100 * r.at("saving").get<double>(), 100 * r.at("saving_ci95_low").get<double>(),
                     100 * r.at("saving_ci95_high").get<double>());
}
std::string opt_num(const json& j, const char* fmtstr) {
  return j.is_number() ? fmt::format(fmt::runtime(fmtstr), j.get<double>()) : std::string("-");
}
std::string outlier_note(const json& s) {
  return s.at("outliers").empty() ? "" : fmt::format(" ({} outlier{})", s.at("outliers").size(), s.at("outliers").size() > 1 ? "s" : "");
}
const json* baseline(const json& methods) {
  for (const auto& m : methods)
    if (m.at("status") == "ok" && m.at("scheme") == "fp32") return &m;
  return nullptr;
}

std::string source_line(const json& s) {
  const bool measured = s.at("measured").get<bool>();
  return fmt::format("energy source: {} ({})", s.at("energy_source").get<std::string>(),
                     measured ? "measured by hardware counters" : "MODELLED: estimates from time, bytes and operations, not measurements");
}

// What the report and the README block read (json_shape.h): the top of a summary, a method that ran,
// and one that failed.
const json& summary_spec() {
  static const json spec = json::parse(R"({
    "measured": "bool", "energy_source": "string", "warning?": "string",
    "hardware": {"cpu_model": "string", "threads_used": "int", "kernel": "string", "governor": "string|null",
                 "meters": [{"meter": "string", "available": "bool", "reason?": "string"}]},
    "options": {"trials": "int", "warmup": "int", "prompt_tokens": "int", "gen_tokens": "int", "batch": ["int"],
                "batch_steps": "int", "batch_prompt": "int"},
    "models": {"*": {"methods": [{"status": "string", "method": "string"}]}},
    "machine?": {"cpu_model?": "string", "cpu_family?": "int", "cpu_model_number?": "int", "cpu_stepping?": "int",
                 "load_average?": {"one?": "number"}},
    "seconds?": "number", "date?": "string",
    "model_coefficients?": {"file?": "string",
                            "coefficients": {"static_watts": {"value": "number", "source": "any"},
                                             "*": {"value": "number", "source": "any"}}}
  })");
  return spec;
}
const json& method_spec() {
  static const json spec = [] {
    const json stat = {{"mean", "number"}, {"ci95_low", "number"}, {"ci95_high", "number"}, {"outliers", "array"}};
    const json phase = {{"joules_per_token", stat}, {"joules", stat}, {"watts", stat}, {"tokens_per_s", stat}, {"seconds", stat}};
    const json saving = {{"|", json::array({"null", {{"saving", "number"}, {"saving_ci95_low", "number"}, {"saving_ci95_high", "number"}}})}};
    return json{{"scheme", "any"},
                {"phases", {{"total", phase}, {"decode", phase}, {"prefill", phase}, {"post", phase}}},
                {"accuracy", "object"},
                {"peak_rss_bytes", "number"},
                {"parameter_bytes", "number"},
                {"batch", json::array({{{"batch", "int"}, {"total", {{"joules_per_token", stat}}}, {"decode", {{"tokens_per_s", stat}}}}})},
                {"savings_vs_float32?",
                 {{"energy_per_token", {{"total", saving}, {"decode", saving}, {"prefill", saving}}}, {"latency", saving}}}};
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
    const json& ms = model.at("methods");
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::string at = fmt::format("/models/{}/methods/{}", mq::clip_text(key, 40), i);
      if (ms[i].at("status") == "ok")
        mq::check_json_shape(ms[i], method_spec(), file, at);
      else
        mq::check_json_shape(ms[i], json{{"error", "string"}}, file, at);
    }
  }
}

std::string energy_report_text(const json& s) {
  std::string t = "miniquant energy: energy per token by inference phase\n";
  t += source_line(s) + "\n";
  if (!s.value("warning", std::string()).empty()) t += "WARNING: " + s["warning"].get<std::string>() + "\n";
  const json& hw = s.at("hardware");
  t += fmt::format("machine: {}, {} threads, kernel {}, governor {}\n", hw.at("cpu_model").get<std::string>(), hw.at("threads_used").get<int>(),
                   hw.at("kernel").get<std::string>(), hw.at("governor").is_null() ? "unreadable" : hw.at("governor").get<std::string>());
  for (const auto& m : hw.at("meters"))
    t += fmt::format("  meter {}: {}\n", m.at("meter").get<std::string>(),
                     m.at("available").get<bool>() ? "available" : "not available: " + m.at("reason").get<std::string>());
  const json& o = s.at("options");
  t += fmt::format("runs: {} trials after {} warm-ups; prompt {} tokens, {} generated; batch curve B = {} ({} decode steps after a {}-token prompt)\n",
                   o.at("trials").get<int>(), o.at("warmup").get<int>(), o.at("prompt_tokens").get<int>(), o.at("gen_tokens").get<int>(),
                   o.at("batch").dump(), o.at("batch_steps").get<int>(), o.at("batch_prompt").get<int>());
  t += "Units: mJ per token, mean [95% CI]. prefill: per prompt token; decode: per decode step; post and total: per generated token.\n";
  for (const auto& [key, title] : kModelTitles) {
    if (!s.at("models").contains(key)) continue;
    const json& ms = s["models"][key]["methods"];
    t += fmt::format("\n== {} ==\n", title);
    t += fmt::format("{:<14} {:>30} {:>30} {:>30} {:>10} {:>9} {:>7} {:>7} {:>6} {:>8}\n", "method", "total mJ/token", "decode mJ/token",
                     "prefill mJ/token", "post mJ/t", "decode W", "PPL", "verb", "agree", "RSS MB");
    for (const auto& m : ms) {
      if (m.at("status") != "ok") {
        t += fmt::format("{:<14} FAILED: {}\n", m.at("method").get<std::string>(), m.at("error").get<std::string>());
        continue;
      }
      const json& p = m.at("phases");
      const json& a = m.at("accuracy");
      t += fmt::format("{:<14} {:>30} {:>30} {:>30} {:>10.5f} {:>9.1f} {:>7} {:>7} {:>6} {:>8.0f}{}\n", m.at("method").get<std::string>(),
                       milli_ci(p["total"]["joules_per_token"]), milli_ci(p["decode"]["joules_per_token"]),
                       milli_ci(p["prefill"]["joules_per_token"]), 1e3 * mean(p["post"]["joules_per_token"]), mean(p["decode"]["watts"]),
                       opt_num(a.value("ppl", json()), "{:.3f}"), opt_num(a.value("verb_tense_accuracy", json()), "{:.3f}"),
                       opt_num(a.value("greedy_agreement_with_float32", json()), "{:.3f}"), m.at("peak_rss_bytes").get<double>() / 1e6,
                       outlier_note(p["total"]["joules_per_token"]));
    }
    if (baseline(ms)) {
      t += "\nSavings vs float32 (energy per token by phase; latency of a whole run), 95% CI:\n";
      t += fmt::format("{:<14} {:>26} {:>26} {:>26} {:>26}\n", "method", "total energy", "decode", "prefill", "latency");
      for (const auto& m : ms) {
        if (m.at("status") != "ok" || !m.contains("savings_vs_float32")) continue;
        const json& sv = m["savings_vs_float32"];
        t += fmt::format("{:<14} {:>26} {:>26} {:>26} {:>26}\n", m["method"].get<std::string>(), pct_ci(sv["energy_per_token"]["total"]),
                         pct_ci(sv["energy_per_token"]["decode"]), pct_ci(sv["energy_per_token"]["prefill"]), pct_ci(sv["latency"]));
      }
    }
    t += "\nPhase breakdown of one run's energy (share of total) and time:\n";
    t += fmt::format("{:<14} {:>9} {:>9} {:>9} {:>12} {:>14} {:>14}\n", "method", "prefill", "decode", "post", "total mJ", "decode tok/s", "prefill tok/s");
    for (const auto& m : ms) {
      if (m.at("status") != "ok") continue;
      const json& p = m["phases"];
      const double tot = mean(p["total"]["joules"]);
      t += fmt::format("{:<14} {:>8.1f}% {:>8.1f}% {:>8.1f}% {:>12.3f} {:>14.1f} {:>14.1f}\n", m["method"].get<std::string>(),
                       100 * mean(p["prefill"]["joules"]) / tot, 100 * mean(p["decode"]["joules"]) / tot, 100 * mean(p["post"]["joules"]) / tot,
                       1e3 * tot, mean(p["decode"]["tokens_per_s"]), mean(p["prefill"]["tokens_per_s"]));
    }
    t += "\nBatch curve: mJ per generated token (decode + post) by batch size B, and decode tokens/s:\n";
    t += fmt::format("{:<14}", "method");
    for (const auto& b : o.at("batch")) t += fmt::format(" {:>22}", fmt::format("B={}", b.get<int>()));
    t += "\n";
    for (const auto& m : ms) {
      if (m.at("status") != "ok") continue;
      t += fmt::format("{:<14}", m["method"].get<std::string>());
      for (const auto& b : m["batch"])
        t += fmt::format(" {:>22}", fmt::format("{:.4f} ({:.0f}/s)", 1e3 * mean(b["total"]["joules_per_token"]), mean(b["decode"]["tokens_per_s"])));
      t += "\n";
    }
  }
  return t;
}

std::string energy_readme_block(const json& s) {
  std::string t;
  const bool measured = s.at("measured").get<bool>();
  t += fmt::format("**{}.**\n\n", source_line(s));
  if (s.contains("machine") && s.contains("seconds")) {
    const json& m = s.at("machine");
    t += fmt::format("Run on {} (family {}, model {}, stepping {}; load average {:.2f} at the start), {}; it took {:.1f} min "
                     "there.\n\n",
                     m.value("cpu_model", std::string("an unknown CPU")), m.value("cpu_family", -1), m.value("cpu_model_number", -1),
                     m.value("cpu_stepping", -1), m.value("load_average", json::object()).value("one", 0.0),
                     s.value("date", std::string("unknown date")), s.at("seconds").get<double>() / 60);
  }
  if (!measured)
    t += "Every joule below is an estimate from the model, labelled `model:` in every file; no hardware counter was readable on the "
         "machine that ran this (see `hardware.meters` in summary.json for why).\n\n";
  for (const auto& [key, title] : kModelTitles) {
    if (!s.at("models").contains(key)) continue;
    const json& ms = s["models"][key]["methods"];
    const json* b = baseline(ms);
    t += fmt::format("### {}\n\n", title);
    if (!b) {
      t += "float32 did not run or failed: no savings to report.\n\n";
      continue;
    }
    // Which method saves most energy per generated token, and in which phase the joules went.
    const json* best = nullptr;
    for (const auto& m : ms)
      if (m["status"] == "ok" && m.contains("savings_vs_float32") && m["scheme"] != "fp32" &&
          (!best || m["savings_vs_float32"]["energy_per_token"]["total"]["saving"].get<double>() >
                        (*best)["savings_vs_float32"]["energy_per_token"]["total"]["saving"].get<double>()))
        best = &m;
    if (best) {
      const json& sv = (*best)["savings_vs_float32"];
      std::string phase = "decode";
      double most = -1e300;
      for (const std::string ph : {"prefill", "decode", "post"}) {
        const double saved = mean((*b)["phases"][ph]["joules"]) - mean((*best)["phases"][ph]["joules"]);
        if (saved > most) most = saved, phase = ph;
      }
      t += fmt::format("- **Most energy saved per token: {}**, saving {} of float32's total energy per generated token ({} in "
                       "decode, {} in prefill; 95% CI); the largest absolute saving is in **{}** ({:.3f} mJ of float32's {:.3f} mJ run).\n",
                       (*best)["method"].get<std::string>(), pct_ci(sv["energy_per_token"]["total"]), pct_ci(sv["energy_per_token"]["decode"]),
                       pct_ci(sv["energy_per_token"]["prefill"]), phase, 1e3 * most, 1e3 * mean((*b)["phases"]["total"]["joules"]));
    }
    // Bytes or arithmetic: each method's decode energy ratio next to its parameter-bytes ratio, and
    // its prefill energy ratio next to its prefill time ratio.
    t += "- **Bytes or arithmetic?** Ratios to float32 (decode energy follows bytes if its column tracks the bytes column; prefill "
         "follows arithmetic throughput if its energy tracks its time):\n\n";
    t += "  | method | parameter bytes | decode energy/token | decode time/token | prefill energy/token | prefill time |\n"
         "  |---|---|---|---|---|---|\n";
    for (const auto& m : ms) {
      if (m["status"] != "ok") continue;
      const auto ratio = [&](const char* ph, const char* f) { return mean(m["phases"][ph][f]) / mean((*b)["phases"][ph][f]); };
      t += fmt::format("  | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |\n", m["method"].get<std::string>(),
                       m["parameter_bytes"].get<double>() / (*b)["parameter_bytes"].get<double>(), ratio("decode", "joules_per_token"),
                       1.0 / ratio("decode", "tokens_per_s"), ratio("prefill", "joules_per_token"), ratio("prefill", "seconds"));
    }
    // Which ratio does the energy follow: the largest gap between the energy ratio and the bytes
    // ratio (decode) or the time ratio, over the quantized methods.
    double gap_bytes = 0, gap_time = 0, gap_pre_time = 0;
    int n = 0;
    for (const auto& m : ms) {
      if (m["status"] != "ok" || m["scheme"] == "fp32") continue;
      const auto ratio = [&](const char* ph, const char* f) { return mean(m["phases"][ph][f]) / mean((*b)["phases"][ph][f]); };
      const double e = ratio("decode", "joules_per_token");
      gap_bytes = std::max(gap_bytes, std::abs(e - m["parameter_bytes"].get<double>() / (*b)["parameter_bytes"].get<double>()));
      gap_time = std::max(gap_time, std::abs(e - 1.0 / ratio("decode", "tokens_per_s")));
      gap_pre_time = std::max(gap_pre_time, std::abs(ratio("prefill", "joules_per_token") - ratio("prefill", "seconds")));
      ++n;
    }
    std::vector<std::string> pre_saves, pre_costs;
    for (const auto& m : ms) {
      if (m["status"] != "ok" || m["scheme"] == "fp32" || !m.contains("savings_vs_float32")) continue;
      const json& r = m["savings_vs_float32"]["energy_per_token"]["prefill"];
      if (r.is_null()) continue;
      if (r["saving_ci95_low"].get<double>() > 0) pre_saves.push_back(m["method"].get<std::string>());
      if (r["saving_ci95_high"].get<double>() < 0) pre_costs.push_back(m["method"].get<std::string>());
    }
    const auto list = [](const std::vector<std::string>& v) {
      std::string j;
      for (size_t i = 0; i < v.size(); ++i) j += (i ? ", " : "") + v[i];
      return v.empty() ? std::string("none") : j;
    };
    if (n > 0)
      t += fmt::format("\n  Decode energy ratios are within {:.2f} of the decode time ratios and within {:.2f} of the "
                       "parameter-bytes ratios; prefill energy ratios are within {:.2f} of the prefill time ratios. So decode savings "
                       "here follow {}. Prefill (many tokens per weight read) follows how fast the kernels do the arithmetic: "
                       "it saves energy (CI above 0) for {} and costs more than float32 (CI below 0) for {}.\n",
                       gap_time, gap_bytes, gap_pre_time,
                       gap_bytes < gap_time ? "the bytes moved"
                                            : "the time per token more closely than the bytes moved (bytes set the floor; "
                                              "dequantization and kernel overheads decide how close each method gets to it)",
                       list(pre_saves), list(pre_costs));
    t += "\n";
    // Batching: energy per token at the smallest and largest batch.
    t += "- **Batching:** ";
    std::vector<std::string> parts;
    for (const auto& m : ms) {
      if (m["status"] != "ok" || m["batch"].size() < 2) continue;
      const json& lo = m["batch"].front();
      const json& hi = m["batch"].back();
      parts.push_back(fmt::format("{} {:.4f} -> {:.4f} mJ/token (x{:.2f}) from B={} to B={}", m["method"].get<std::string>(),
                                  1e3 * mean(lo["total"]["joules_per_token"]), 1e3 * mean(hi["total"]["joules_per_token"]),
                                  mean(hi["total"]["joules_per_token"]) / mean(lo["total"]["joules_per_token"]), lo["batch"].get<int>(),
                                  hi["batch"].get<int>()));
    }
    for (size_t i = 0; i < parts.size(); ++i) t += (i ? "; " : "") + parts[i];
    std::vector<std::string> fell, rose;
    for (const auto& m : ms) {
      if (m["status"] != "ok" || m["batch"].size() < 2) continue;
      const double r = mean(m["batch"].back()["total"]["joules_per_token"]) / mean(m["batch"].front()["total"]["joules_per_token"]);
      (r < 1 ? fell : rose).push_back(m["method"].get<std::string>());
    }
    const auto join = [](const std::vector<std::string>& v) {
      std::string j;
      for (size_t i = 0; i < v.size(); ++i) j += (i ? ", " : "") + v[i];
      return j;
    };
    t += ". A decode step reads the parameters once for the whole batch, so their traffic per token divides by B";
    if (!fell.empty()) t += "; energy per token fell with B for " + join(fell);
    if (!rose.empty())
      t += "; it rose for " + join(rose) + ", whose batched path runs slower per row than its single-row path (decode tokens/s "
           "in report.txt), and modelled energy follows time";
    t += ".\n\n";
    // Where the modelled joules come from.
    if (!measured) {
      const json& z = (*b)["phases"]["total"];
      (void)z;
      double st = 0, tot = 0;
      for (const auto& m : ms)
        if (m["status"] == "ok") {
          // zones are in the trial files; the summary keeps the work, so take the static share from the coefficients.
          const double w = s["model_coefficients"]["coefficients"]["static_watts"]["value"].get<double>();
          st += w * mean(m["phases"]["total"]["seconds"]);
          tot += mean(m["phases"]["total"]["joules"]);
        }
      t += fmt::format("- **What the model assumes:** static power x measured time makes up {:.0f}% of the modelled joules over these "
                       "methods, so on this machine modelled energy mostly ranks methods by their speed; the per-byte and per-operation "
                       "terms add what moving fewer bytes and doing cheaper operations saves at published 45 nm energies.\n\n",
                       tot > 0 ? 100 * st / tot : 0.0);
    }
  }
  if (!measured) {
    t += "### The model and how far to trust it\n\n";
    t += "E = static W x measured seconds + sum over levels (bytes from that level x J/byte) + fp32 flops x J/flop + int8 ops x J/op. "
         "Bytes are the sweep's decode traffic terms (weights as stored with scales, embedding, fp32 parameters, activations, KV cache), "
         "each charged to the cache level its working set fits in on this CPU. Coefficients (`" +
         s["model_coefficients"].value("file", std::string()) + "`):\n\n";
    for (const auto& [k, v] : s["model_coefficients"]["coefficients"].items())
      t += fmt::format("- `{}` = {:.4g}: {}\n", k, v["value"].get<double>(), v["source"].is_string() ? v["source"].get<std::string>() : v["source"].dump());
    t += "\nTrust: the ranking of methods within a phase is as good as the time measurements and the byte counts (both real); the "
         "absolute joules are order-of-magnitude estimates, because the static term is an assumption and the per-access energies are "
         "45 nm figures that leave out instruction overhead. `miniquant energy --calibrate` on a machine with RAPL replaces them with "
         "fitted values.\n";
  }
  return t;
}

}  // namespace mqexp
