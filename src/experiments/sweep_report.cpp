#include "experiments/sweep_report.h"

#include "experiments/method_compare.h"

#include "experiments/ceilings.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/generalization_report.h"
#include "experiments/intervals.h"
#include "miniquant/error.h"
#include "miniquant/format_table.h"

namespace mqexp {
namespace {

using nlohmann::json;

std::string mb(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }
std::string pct(double ratio) { return fmt::format("{:+.2f}%", 100.0 * (ratio - 1.0)); }
double decode_tps(const SchemeRow& r) { return r.speed->decode_tokens_per_s.median; }
std::string busy_mark(const SchemeRow& r) { return r.speed && r.speed->busy ? " (busy)" : ""; }

std::string results_table(const std::vector<SchemeRow>& rows, const std::string& baseline) {
  std::string s = fmt::format(
      "| scheme | PPL | vs {} | generalization acc. | in-distribution acc. | model bytes | Linear bytes | bits/w (Linear) | "
      "decode tok/s | prefill tok/s | decode FLOP/byte | quantize s | Pareto |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n",
      baseline);
  for (const auto& r : rows) {
    if (!r.ok) {
      s += fmt::format("| {} | failed: {} ||||||||||||\n", r.scheme, r.error);
      continue;
    }
    const RateStat& d = r.speed->decode_tokens_per_s;
    const RateStat& p = r.speed->prefill_tokens_per_s;
    const auto& g = r.quality->generalization;
    s += fmt::format("| {} | {:.3f} | {} | {} | {:.4f} | {} | {} | {:.3f} | {:.0f} ({:.0f}-{:.0f}){} | {:.0f} ({:.0f}-{:.0f}) | {:.3f} | {:.2f} | {} |\n",
                     r.scheme, r.quality->ppl, pct(r.vs_baseline->ppl_over_baseline),
                     g ? fmt::format("{:.4f}", g->overall.accuracy()) : std::string("-"), r.quality->verb_tense.accuracy(),
                     mb(static_cast<double>(r.footprint.bytes)), mb(static_cast<double>(r.footprint.bytes_linear)),
                     r.footprint.bits_per_weight, d.median, d.low, d.high, busy_mark(r), p.median, p.low, p.high,
                     r.footprint.decode.intensity, r.quantize_seconds, r.on_pareto_frontier ? "yes" : "");
  }
  return s;
}

// The verb-tense constructions of the first row that scored them (with slot margins, if asked): the
// columns of both construction tables, the easy four first, then the hard set, then any other name.
std::vector<std::string> construction_kinds(const std::vector<SchemeRow>& rows, bool with_margins) {
  std::vector<std::string> kinds;
  for (const auto& r : rows)
    if (r.ok && r.quality && (!with_margins || r.quality->margin.slots > 0)) {
      const auto& by = r.quality->by_construction;
      for (int k = 0; k < minigpt::kNumConstructions; ++k) {
        const std::string name = minigpt::construction_name(static_cast<minigpt::Construction>(k));
        if (by.count(name)) kinds.push_back(name);
      }
      for (const auto& [k, v] : by)
        if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
      break;
    }
  return kinds;
}

bool hard_kind(const std::string& name) {
  for (int k = minigpt::kNumEasyConstructions; k < minigpt::kNumConstructions; ++k)
    if (name == minigpt::construction_name(static_cast<minigpt::Construction>(k))) return true;
  return false;
}

// Correct / total over the hard constructions of a by-construction map.
Score hard_set(const std::map<std::string, Score>& by) {
  Score s;
  for (const auto& [k, v] : by)
    if (hard_kind(k)) s.correct += v.correct, s.total += v.total;
  return s;
}

// Per construction, the schemes and then the rule baselines (in italics) on the same slots.
std::string construction_table(const std::vector<SchemeRow>& rows, const std::vector<BaselineRow>& baselines) {
  const std::vector<std::string> kinds = construction_kinds(rows, false);
  if (kinds.empty()) return "";
  std::string s = "| scheme |";
  for (const auto& k : kinds) s += " " + k + " |";
  s += "\n|---|";
  for (size_t i = 0; i < kinds.size(); ++i) s += "---:|";
  s += "\n";
  for (const auto& r : rows) {
    if (!r.ok || !r.quality) continue;
    s += "| " + r.scheme + " |";
    for (const auto& k : kinds) {
      const Score& c = r.quality->by_construction.at(k);
      s += fmt::format(" {:.4f} ({}/{}) |", c.accuracy(), c.correct, c.total);
    }
    s += "\n";
  }
  for (const auto& b : baselines) {
    s += "| *rule: " + b.name + "* |";
    for (const auto& k : kinds) {
      const auto it = b.by_construction.find(k);
      s += it == b.by_construction.end() ? std::string(" - |")
                                         : fmt::format(" *{:.4f}* ({}/{}) |", it->second.accuracy(), it->second.correct,
                                                       it->second.total);
    }
    s += "\n";
  }
  return s;
}

// The hard set against fp32 and the rules: which schemes leave fp32's interval, and by how much the
// best rule trails the model.
std::string hard_set_answer(const std::vector<SchemeRow>& rows, const std::vector<BaselineRow>& baselines,
                            const SchemeRow* fp32) {
  if (!fp32 || !fp32->quality) return "";
  const Score f = hard_set(fp32->quality->by_construction);
  if (f.total == 0) return "";
  const Interval fw = wilson(f.correct, f.total);
  std::string names;
  for (int k = minigpt::kNumEasyConstructions; k < minigpt::kNumConstructions; ++k)
    names += fmt::format("{}{}", k > minigpt::kNumEasyConstructions ? ", " : "",
                         minigpt::construction_name(static_cast<minigpt::Construction>(k)));
  std::string s = fmt::format("**The hard constructions** ({}): fp32 {:.4f} [{:.4f}, {:.4f}] over {} slots", names,
                              f.accuracy(), fw.low, fw.high, f.total);
  const BaselineRow* best = nullptr;
  for (const auto& b : baselines)
    if (!best || hard_set(b.by_construction).accuracy() > hard_set(best->by_construction).accuracy()) best = &b;
  if (best) {
    const Score h = hard_set(best->by_construction);
    const Interval w = wilson(h.correct, h.total);
    s += fmt::format("; the best rule, {}, {:.4f} [{:.4f}, {:.4f}]", best->name, h.accuracy(), w.low, w.high);
  }
  std::vector<std::string> below, above;
  for (const auto& r : rows) {
    if (!r.ok || !r.quality || &r == fp32) continue;
    const Score h = hard_set(r.quality->by_construction);
    const Interval w = wilson(h.correct, h.total);
    if (w.high < fw.low) below.push_back(fmt::format("{} {:.4f} [{:.4f}, {:.4f}]", r.scheme, h.accuracy(), w.low, w.high));
    if (w.low > fw.high) above.push_back(fmt::format("{} {:.4f}", r.scheme, h.accuracy()));
  }
  s += ". ";
  if (below.empty()) {
    s += "No scheme's interval lies below fp32's";
  } else {
    s += "Below fp32's interval: ";
    for (size_t i = 0; i < below.size(); ++i) s += (i ? "; " : "") + below[i];
  }
  if (!above.empty()) {
    s += "; above it: ";
    for (size_t i = 0; i < above.size(); ++i) s += (i ? "; " : "") + above[i];
  }
  s += "; every other scheme's interval overlaps fp32's.\n\n";
  return s;
}

std::string traffic_table(const std::vector<SchemeRow>& rows, const std::string& title) {
  std::string s = fmt::format(
      "{}\n\n| scheme | FLOP/token | weights | embedding | KV cache | activations | other | total | FLOP/byte | "
      "decode tok/s | measured GFLOP/s | GB/s | bound | of bound |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n",
      title);
  for (const auto& r : rows) {
    if (!r.ok || !r.speed) continue;
    const Traffic& t = r.footprint.decode;
    const auto& b = r.speed->roofline;
    s += fmt::format("| {} | {:.2f} M | {} | {} | {} | {} | {} | {} | {:.3f} | {:.0f}{} | {:.1f} | {:.1f} | {} | {} |\n", r.scheme,
                     t.flops / 1e6, mb(t.weights), mb(t.embedding), mb(t.kv_cache), mb(t.activations), mb(t.other_params),
                     mb(t.total), t.intensity, decode_tps(r), busy_mark(r), r.speed->decode_gflops, r.speed->decode_gbps,
                     b ? b->ceiling : std::string("-"), b ? fmt::format("{:.0f}%", 100 * b->fraction_of_bound) : std::string("-"));
  }
  return s;
}

// Every row against the fp32 reference: divergence, paired ΔPPL, accuracy with its Wilson interval, margins.
std::string quality_table(const std::vector<SchemeRow>& rows) {
  std::string s =
      "| scheme | KLD mean [95% CI] | KLD p99 | KLD max | top-1 agree | PPL | ΔPPL [95% CI] | verb-tense acc. [Wilson 95%] | "
      "margin median / p1 | Δmargin [95% CI] | flips |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  bool any = false;
  for (const auto& r : rows) {
    if (!r.ok || !r.quality || !r.quality->divergence) continue;
    any = true;
    const Quality& q = *r.quality;
    const Divergence& d = *q.divergence;
    const Interval w = wilson(q.verb_tense.correct, q.verb_tense.total);
    s += fmt::format(
        "| {} | {:.3g} [{:.3g}, {:.3g}] | {:.3g} | {:.3g} | {:.4f} | {:.3f} | {:+.4f} [{:+.4f}, {:+.4f}] | {:.4f} [{:.4f}, {:.4f}] | "
        "{:.2f} / {:.2f} | {:+.4f} [{:+.4f}, {:+.4f}] | {} |\n",
        r.scheme, d.kl_mean, d.kl_low, d.kl_high, d.kl_p99, d.kl_max, d.top1, q.ppl, d.dppl, d.dppl_low, d.dppl_high,
        q.verb_tense.accuracy(), w.low, w.high, q.margin.median, q.margin.p1, d.dmargin_mean, d.dmargin_low, d.dmargin_high,
        d.flipped_to_wrong + d.flipped_to_right);
  }
  return any ? s : "";
}

// Per construction: accuracy with its Wilson interval, and the margin's median and 1st percentile (nats).
std::string construction_interval_table(const std::vector<SchemeRow>& rows) {
  const std::vector<std::string> kinds = construction_kinds(rows, true);
  if (kinds.empty()) return "";
  std::string s = "| scheme |";
  for (const auto& k : kinds) s += " " + k + " acc. [Wilson 95%] | margin med / p1 |";
  s += "\n|---|";
  for (size_t i = 0; i < kinds.size(); ++i) s += "---:|---:|";
  s += "\n";
  for (const auto& r : rows) {
    if (!r.ok || !r.quality) continue;
    s += "| " + r.scheme + " |";
    for (const auto& k : kinds) {
      const Score& c = r.quality->by_construction.at(k);
      const Interval w = wilson(c.correct, c.total);
      const auto m = r.quality->margin_by_construction.find(k);
      s += fmt::format(" {:.4f} [{:.4f}, {:.4f}] |", c.accuracy(), w.low, w.high);
      s += m == r.quality->margin_by_construction.end() ? std::string(" - |")
                                                        : fmt::format(" {:.2f} / {:.2f} |", m->second.median, m->second.p1);
    }
    s += "\n";
  }
  return s;
}

// GPTQ against RTN at each bit width and grouping both ran: the fraction of RTN's KLD that GPTQ removes,
// and whether the two KLD intervals overlap; then, where it ran, GPTQ with act-order against plain GPTQ.
std::string gptq_vs_rtn(const std::vector<SchemeRow>& rows) {
  const auto row = [&](const std::string& name) -> const SchemeRow* {
    for (const auto& r : rows)
      if (r.ok && r.quality && r.quality->divergence && r.scheme == name) return &r;
    return nullptr;
  };
  std::string s;
  for (const std::string base : {"int8-per-channel", "int4-per-channel", "int4-g64", "int3-g64", "int2-g64"}) {
    const SchemeRow *rtn = row(base), *gq = row(base + "-gptq");
    if (!rtn || !gq) continue;
    const Divergence &a = *rtn->quality->divergence, &b = *gq->quality->divergence;
    const bool overlap = b.kl_high >= a.kl_low && a.kl_high >= b.kl_low;
    s += fmt::format("- {}: KLD {:.3g} [{:.3g}, {:.3g}] (RTN) vs {:.3g} [{:.3g}, {:.3g}] (GPTQ): GPTQ removes {:.0f}% of RTN's KLD; "
                     "ΔPPL {:+.4f} vs {:+.4f}; top-1 agreement {:.4f} vs {:.4f}; the KLD intervals {}.\n",
                     base, a.kl_mean, a.kl_low, a.kl_high, b.kl_mean, b.kl_low, b.kl_high,
                     100 * (1 - b.kl_mean / std::max(1e-300, a.kl_mean)), a.dppl, b.dppl, a.top1, b.top1,
                     overlap ? "overlap (the difference is inside the noise)" : "do not overlap");
    if (const SchemeRow* ao = row(base + "-gptq-act-order")) {
      const Divergence& c = *ao->quality->divergence;
      const bool ov = c.kl_high >= b.kl_low && b.kl_high >= c.kl_low;
      s += fmt::format("- {}-gptq with act-order: KLD {:.3g} [{:.3g}, {:.3g}] vs {:.3g} without; ΔPPL {:+.4f} vs {:+.4f}; "
                       "top-1 agreement {:.4f} vs {:.4f}; the KLD intervals {}.\n",
                       base, c.kl_mean, c.kl_low, c.kl_high, b.kl_mean, c.dppl, b.dppl, c.top1, b.top1,
                       ov ? "overlap (the difference is inside the noise)" : "do not overlap");
    }
    // The shrink-grid scale search under GPTQ, plain (-search) or weighted by importance (-imatrix), against plain GPTQ.
    for (const std::string v : {"-search-gptq", "-search-gptq-act-order", "-imatrix-gptq", "-imatrix-gptq-act-order"})
      if (const SchemeRow* sr = row(base + v)) {
        const Divergence& c = *sr->quality->divergence;
        const bool ov = c.kl_high >= b.kl_low && b.kl_high >= c.kl_low;
        s += fmt::format("- {}{}: KLD {:.3g} [{:.3g}, {:.3g}] vs {:.3g} (GPTQ on the plain grid); ΔPPL {:+.4f} ({:+.2f}% of fp32's "
                         "perplexity) vs {:+.4f}; top-1 agreement {:.4f} vs {:.4f}; the KLD intervals {}.\n",
                         base, v, c.kl_mean, c.kl_low, c.kl_high, b.kl_mean, c.dppl, 100 * c.dppl / c.ppl_reference, b.dppl,
                         c.top1, b.top1, ov ? "overlap (the difference is inside the noise)" : "do not overlap");
      }
  }
  return s;
}

const SchemeRow* find_in(const std::vector<SchemeRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.scheme == name && r.ok) return &r;
  return nullptr;
}

// The format table's family of a row's stored weights ("int3" for int3-g64-gptq+a8), or "" for a mixed plan's row.
std::string stored_family(const SchemeRow& r) {
  try {
    return std::string(mq::traits_of(mq::Scheme::parse(r.storage_scheme)).family);
  } catch (const mq::Error&) {
    return "";
  }
}

// The kernels the +a8 rows ran, in words, from the manifest's build.int8_activation_kernel.
std::string int8_kernel_words(const std::string& k) {
  if (k == "vnni") return "VNNI kernels";
  if (k == "avx2") return "AVX2 form of the VNNI kernels (vpmaddubsw + vpmaddwd)";
  return "portable twin of the VNNI kernels (plain loops; this build has no AVX2 or VNNI path)";
}

// "INT4 buys x by the roofline, measured y" for one model's rows. int8_kernel: the manifest's
// build.int8_activation_kernel ("vnni", "avx2" or "portable").
std::string speedup_sentence(const std::vector<SchemeRow>& rows, const std::string& model, const std::string& int8_kernel) {
  const SchemeRow *f = find_in(rows, "fp32"), *q = find_in(rows, "int4-g64");
  if (!f || !q || !f->speed || !q->speed) return "";
  const Traffic &ft = f->footprint.decode, &qt = q->footprint.decode;
  const double ideal = qt.intensity / ft.intensity;
  const double measured = decode_tps(*q) / decode_tps(*f);
  const auto ceiling = [](const SchemeRow& r) { return r.speed->roofline ? r.speed->roofline->ceiling : std::string("(no ceilings)"); };
  std::string out = fmt::format(
      "- {}: one decode step of int4-g64 moves {:.2f}x fewer bytes than fp32 (intensity {:.3f} vs {:.3f} FLOP/byte), "
      "so a bandwidth-bound decode could be {:.2f}x faster; measured {:.0f} vs {:.0f} tokens/s = {:.2f}x ({:.0f}% of the "
      "intensity ratio). fp32 sits under {}, int4-g64 under {}.\n",
      model, ft.total / qt.total, qt.intensity, ft.intensity, ideal, decode_tps(*q), decode_tps(*f), measured,
      100 * measured / ideal, ceiling(*f), ceiling(*q));
  if (const SchemeRow* d = find_in(rows, "int4-g64+a8"); d && d->speed) {
    const double md = decode_tps(*d) / decode_tps(*f);
    out.pop_back();  // the newline: the sentence goes on
    out += fmt::format(" With int8 activations on the {} (int4-g64+a8, the same storage): {:.0f} tokens/s = "
                       "{:.2f}x fp32 ({:.0f}% of the intensity ratio).\n",
                       int8_kernel_words(int8_kernel),
                       decode_tps(*d), md, 100 * md / ideal);
  }
  return out;
}

}  // namespace

std::string sweep_readme_block(const SweepResults& res, const json& manifest) {
  const std::vector<SchemeRow>& rows = res.schemes;
  const SchemeRow* base = res.find(res.baseline);
  const json& machine = manifest.at("machine");
  // Manifests from before the field was recorded came from AVX-512 VNNI machines.
  const std::string int8_kernel = manifest.at("build").value("int8_activation_kernel", std::string("vnni"));
  std::string s = fmt::format(
      "Measured by `{}` on {}{} ({} threads), {}; commit {}. Test split: {} tokens; seed {}.\n\n",
      manifest.at("command").get<std::string>(), machine.at("cpu_model").get<std::string>(),
      machine.contains("cpu_family") ? fmt::format(" (family {}, model {}, stepping {})", machine.at("cpu_family").get<int>(),
                                                   machine.at("cpu_model_number").get<int>(), machine.at("cpu_stepping").get<int>())
                                     : std::string(),
      manifest.at("threads").get<int>(), manifest.at("date").get<std::string>(),
      commit_text(manifest.at("build")),
      base && base->quality ? base->quality->test_tokens : 0LL, res.seed);
  if (manifest.contains("durations_s"))
    s += fmt::format("The whole sweep took {:.1f} min on that machine; on another, or with other work running, it takes "
                     "longer or shorter.\n\n", manifest.at("durations_s").value("total", 0.0) / 60);
  const std::string ceil_warning = ceilings_warning(manifest.value("ceilings_compared", json()));
  if (!ceil_warning.empty()) s += "**Warning: " + ceil_warning + ".**\n\n";
  if (int8_kernel != "vnni")
    s += "**This CPU has no AVX-512 VNNI: the `+a8` rows ran the " + int8_kernel_words(int8_kernel) +
         " (the same integer arithmetic, bit for bit), so their speeds are this machine's, not the `vpdpbusd` kernels'.**\n\n";
  // A family whose +a8 path on this build is not the others' (kernels.h dynamic_kernel_name: int3's decode needs VBMI
  // besides): say so where rows stored in that family ran with dynamic activations.
  const json per_family = manifest.at("build").value("int8_activation_kernel_per_family", json::object());
  for (const auto& [family, kernel] : per_family.items()) {
    if (kernel == int8_kernel) continue;
    const bool ran = std::any_of(rows.begin(), rows.end(), [&family = family](const SchemeRow& r) {
      return r.scheme.find("+a") != std::string::npos && stored_family(r) == family;
    });
    if (ran)
      s += fmt::format("**The {} `+a8` rows ran the {}{}, so their speeds are not those of the {}.**\n\n", family,
                       int8_kernel_words(kernel.get<std::string>()), family == "int3" ? " (this CPU has no VBMI, which int3's decode needs)" : "",
                       int8_kernel_words(int8_kernel));
  }
  std::vector<std::string> busy;
  for (const auto* list : {&res.schemes, &res.gpt2_schemes})
    for (const auto& r : *list)
      if (r.ok && r.speed && r.speed->busy) busy.push_back(r.scheme);
  if (!busy.empty())
    s += fmt::format("**Warning: the machine was busy while {} of the rows were timed (load average above its {} logical "
                     "CPUs; marked \"(busy)\"). Their speeds are not results; re-run on a quiet machine.**\n\n",
                     busy.size(), machine.at("logical_cpus").get<int>());
  s += "### Results\n\n" + results_table(rows, res.baseline);
  if (base && base->speed) {
    const Speed& sp = *base->speed;
    s += fmt::format(
        "\nModel bytes = Linear weights (codes + fp16 scales + zero-points) + the tied embedding (fp16; {} in the {} "
        "row, which is the unmodified checkpoint) + biases, LayerNorms and positions (fp32). Speeds: median over {} "
        "interleaved rounds (slowest-fastest in brackets), decode from a {}-token prompt to the full context of {}, "
        "prefill of the {}-token prompt. The traffic and intensity are those of a decode step at the mean cache "
        "length of the timed decode ({} positions).\n\n",
        base->footprint.embedding_format, base->scheme, sp.decode_tokens_per_s.reps, sp.prefill_prompt_tokens,
        sp.prefill_prompt_tokens + sp.decode_tokens_per_rep, sp.prefill_prompt_tokens, base->footprint.decode.context);
  }
  s += generalization_section(rows, res.baseline, res.seed);
  s += "### In-distribution constructions: the corpus's own verb slots, per construction\n\n"
       "The test split's verb slots are constructions the training grammar writes (the model has learned them all); they "
       "show a scheme that breaks, while the generalization benchmark above shows what a scheme costs before that.\n\n" +
       construction_table(rows, res.baselines) + "\n";
  if (!res.baselines.empty()) {
    s += "The first four constructions are decided by a two-line rule; the last three (the hard set) are built so that "
         "it, or the nearest noun, reads the wrong word. The rows in italics pick a form without a model, on the same "
         "slots:\n\n";
    for (const auto& b : res.baselines) s += fmt::format("- *{}*: {}.\n", b.name, b.rule);
    s += "\n";
    s += hard_set_answer(rows, res.baselines, find_in(rows, "fp32"));
  }
  if (const std::string qt = quality_table(rows); !qt.empty()) {
    const Divergence& d0 = *std::find_if(rows.begin(), rows.end(), [](const SchemeRow& r) {
                              return r.ok && r.quality && r.quality->divergence;
                            })->quality->divergence;
    s += fmt::format(
        "### Against {}: divergence, paired ΔPPL, intervals and margins\n\n{}\nKLD = KL({} ‖ scheme) of the next-token "
        "distributions, nats per token, over the {} test tokens ({} windows); its interval and ΔPPL's are 95%, with the "
        "variance clustered by window (tokens of a window are correlated). ΔPPL is paired token by token against the "
        "reference's PPL {:.3f}. Margin = log p(sentence with the true verb form) - the best wrong form (nats); Δmargin "
        "is the mean paired change per slot; flips: slots whose correctness changed.\n\n",
        d0.reference, qt, d0.reference, d0.tokens, d0.windows, d0.ppl_reference);
    s += "### Per construction: accuracy intervals and margins\n\n" + construction_interval_table(rows) + "\n";
    if (const std::string gr = gptq_vs_rtn(rows); !gr.empty()) s += "**GPTQ against RTN at each bit width:**\n\n" + gr + "\n";
    if (const std::string mc = method_comparison_section(res.method_comparisons, res.activation_outliers); !mc.empty())
      s += "**Activation-aware transforms against the same recipe without them** (AWQ, SmoothQuant; paired on the same test "
           "windows, the KLD ratio's 95% interval clustered by window, accuracy paired item by item):\n\n" + mc + "\n";
  }
  s += traffic_table(rows, "### One MiniGPT decode step: traffic, intensity and roofline bound") + "\n";
  if (res.gpt2_config) {
    const ModelShape& g = *res.gpt2_config;
    const SchemeRow* gb = find_in(res.gpt2_schemes, "fp32");
    s += traffic_table(res.gpt2_schemes,
                       fmt::format("### The same for the GPT-2-small-shaped body ({} wide, {} layers, {} MLP, {} weights, "
                                   "vocabulary {}; decode from {} to {} cached tokens)",
                                   g.d_model, g.n_layer, g.d_ff, res.gpt2_weights, g.vocab_size,
                                   gb && gb->speed ? gb->speed->prefill_prompt_tokens : 0, g.n_ctx)) +
         "\n";
  }

  s += "### Answers\n\n";
  std::vector<std::string> front;
  for (const auto& r : rows)
    if (r.on_pareto_frontier) front.push_back(r.scheme);
  s += "**Pareto frontier (bytes vs PPL, lower-left):** ";
  for (size_t i = 0; i < front.size(); ++i) s += (i ? ", " : "") + front[i];
  s += ". Every other scheme is beaten on both size and perplexity by one of these.\n\n";

  const SchemeRow *f = find_in(rows, "fp32"), *g = find_in(rows, "int4-g64-gptq"), *n = find_in(rows, "int4-g64");
  if (f && g) {
    const double fp = f->quality->ppl, gp = g->quality->ppl;
    const double gap = gp / fp - 1.0;
    s += fmt::format("**INT4 g64 + GPTQ against FP32:** PPL {:.3f} vs {:.3f}, a gap of {:.2f}% ({} the lab's 15% bar, {} "
                     "the 5% goal)",
                     gp, fp, 100 * gap, gap < 0.15 ? "inside" : "outside", gap < 0.05 ? "inside" : "outside");
    if (n) {
      const double np = n->quality->ppl;
      s += fmt::format("; round-to-nearest INT4 g64 gives {:.3f} ({:.2f}%), so GPTQ {} {:.1f}% of the RTN gap", np,
                       100 * (np / fp - 1.0), gp < np ? "closes" : "does not close; it changes by",
                       100 * (1.0 - (gp - fp) / std::max(1e-12, np - fp)));
    }
    s += fmt::format(". In-distribution verb-tense accuracy {:.4f} vs {:.4f}", g->quality->verb_tense.accuracy(),
                     f->quality->verb_tense.accuracy());
    if (g->quality->generalization && f->quality->generalization)
      if (const auto p = paired_answers(*g->quality->generalization, *f->quality->generalization))
        s += fmt::format("; generalization accuracy {:.4f} vs {:.4f}, {:+.4f} [{:+.4f}, {:+.4f}] paired ({})",
                         g->quality->generalization->overall.accuracy(), f->quality->generalization->overall.accuracy(), p->diff,
                         p->low, p->high, p->high < 0 ? "below fp32" : p->low > 0 ? "above fp32" : "a tie");
    s += ".\n\n";
  }

  s += "**What INT4 buys by the roofline, and what was measured:**\n\n" + speedup_sentence(rows, "MiniGPT", int8_kernel);
  if (res.gpt2_config) s += speedup_sentence(res.gpt2_schemes, "GPT-2-small-shaped body", int8_kernel);
  s += "\n";

  // The Raspberry Pi pick: the smallest model whose PPL is within 5% of fp32 and whose generalization accuracy
  // is not below fp32's beyond the paired interval (without the benchmark: verb-tense accuracy within half a point).
  if (f) {
    const SchemeRow* pick = nullptr;
    const double fp = f->quality->ppl, fa = f->quality->verb_tense.accuracy();
    const auto accurate = [&](const SchemeRow& r) {
      if (r.quality->generalization && f->quality->generalization)
        if (const auto p = paired_answers(*r.quality->generalization, *f->quality->generalization)) return p->high >= 0;
      return r.quality->verb_tense.accuracy() >= fa - 0.005;
    };
    for (const auto& r : rows) {
      if (!r.ok || !r.quality) continue;
      const bool good = r.quality->ppl <= 1.05 * fp && accurate(r);
      if (good && (!pick || r.footprint.bytes < pick->footprint.bytes ||
                   (r.footprint.bytes == pick->footprint.bytes && r.quality->ppl < pick->quality->ppl)))
        pick = &r;
    }
    if (pick) {
      const std::string fp32_level = f->speed && f->speed->roofline ? f->speed->roofline->level : std::string("?");
      s += fmt::format(
          "**On a Raspberry Pi I would ship {}.** It is the smallest scheme here whose perplexity stays within 5% of "
          "FP32 ({:.3f} vs {:.3f}) and whose accuracy does not fall below FP32's beyond its paired interval (generalization "
          "{}, in-distribution {:.4f}), at {} against {} for FP32 "
          "({:.2f}x smaller). A Pi's decode is bound by its few GB/s of DRAM bandwidth far more than this machine's, so "
          "the bytes saved per token turn into tokens/s there more directly than here ({:.2f}x measured on this machine, "
          "where MiniGPT's fp32 decode step is bounded by the {} read bandwidth). No Pi has run it: the test command "
          "cross-builds the kernels for a Pi 4's Cortex-A72 and runs their tests under qemu-user (scripts/test_aarch64.sh), "
          "where the weight-only kernels (every scheme without +a8 / +a16) run on xsimd's NEON backend and the "
          "int8-activation kernels (+a8, +a16) on their portable loops, held to the same bounds against their scalar "
          "references as on x86.\n",
          pick->scheme, pick->quality->ppl, fp,
          pick->quality->generalization ? fmt::format("{:.4f}", pick->quality->generalization->overall.accuracy()) : std::string("-"),
          pick->quality->verb_tense.accuracy(), mb(static_cast<double>(pick->footprint.bytes)),
          mb(static_cast<double>(f->footprint.bytes)), static_cast<double>(f->footprint.bytes) / static_cast<double>(pick->footprint.bytes),
          pick->vs_baseline->decode_speedup, fp32_level);
    }
  }
  std::string failed;
  for (const auto& r : rows)
    if (!r.ok) failed += fmt::format("- {}: {}\n", r.scheme, r.error);
  if (!failed.empty()) s += "\n### Failed schemes\n\n" + failed;
  return s;
}

}  // namespace mqexp
