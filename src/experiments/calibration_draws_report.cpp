// The calibration-draws report: each calibrated scheme's rows over its draws, and the benchmark's targets 3
// (GPTQ twin above its RTN twin) and 4 (accuracy ranks the core schemes as KLD does) restated per draw and on
// the draws' means.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/calibration_draws.h"
#include "experiments/generalization_report.h"
#include "experiments/sweep.h"
#include "minigpt/quant_plan.h"

namespace mqexp {
namespace {

// The row of `scheme` at `draw`; a scheme no calibration shapes answers with its one row for every draw.
const SchemeRow* at(const DrawsResults& r, const std::string& scheme, int draw) {
  for (const auto& d : r.rows)
    if (d.row.scheme == scheme && (d.draw == draw || !d.calibrated)) return &d.row;
  return nullptr;
}

std::vector<std::string> scheme_order(const DrawsResults& r) {
  std::vector<std::string> names;
  for (const auto& d : r.rows)
    if (names.empty() || names.back() != d.row.scheme) names.push_back(d.row.scheme);
  return names;
}

bool is_calibrated(const DrawsResults& r, const std::string& scheme) {
  for (const auto& d : r.rows)
    if (d.row.scheme == scheme) return d.calibrated;
  return false;
}

std::string rows_table(const DrawsResults& r) {
  const SchemeRow* ref = at(r, r.reference, 0);
  const bool later = r.draws > 1;  // one draw: nothing to compare with draw 0, so no such columns
  std::string s = fmt::format("| scheme | draw | KLD [95%] |{} accuracy [Wilson 95%] | vs fp32 [95%, paired] |{}\n|---|---:|---:|{}---:|---:|{}\n",
                              later ? " KLD / draw 0 [95%, paired by window] |" : "", later ? " vs draw 0 [95%, paired] |" : "",
                              later ? "---:|" : "", later ? "---:|" : "");
  for (const auto& d : r.rows) {
    const Quality& q = *d.row.quality;
    const Divergence& dv = *q.divergence;
    const Interval w = wilson(q.generalization->overall.correct, q.generalization->overall.total);
    const auto vs_ref = ref ? paired_answers(*q.generalization, *ref->quality->generalization) : std::nullopt;
    s += fmt::format("| {} | {} | {:.3g} [{:.3g}, {:.3g}] |", d.row.scheme, d.calibrated ? std::to_string(d.draw) : "-", dv.kl_mean,
                     dv.kl_low, dv.kl_high);
    if (later)
      s += fmt::format(" {} |", d.kl_ratio_to_draw0 ? fmt::format("{:.3f} [{:.3f}, {:.3f}]", d.kl_ratio_to_draw0->mean,
                                                                  d.kl_ratio_to_draw0->low, d.kl_ratio_to_draw0->high)
                                                    : "");
    s += fmt::format(" {:.4f} [{:.4f}, {:.4f}] | {} |", q.generalization->overall.accuracy(), w.low, w.high,
                     vs_ref ? diff_text(*vs_ref) : "");
    if (later) {
      const SchemeRow* first = d.draw > 0 ? at(r, d.row.scheme, 0) : nullptr;
      const auto vs_first = first ? paired_answers(*q.generalization, *first->quality->generalization) : std::nullopt;
      s += fmt::format(" {} |", vs_first ? fmt::format("{} ({})", diff_text(*vs_first), verdict(*vs_first)) : "");
    }
    s += "\n";
  }
  return s;
}

// Per calibrated scheme: the accuracy and KLD ranges over the draws, and how many later draws answer differently
// from draw 0 beyond the paired interval.
std::string spread_text(const DrawsResults& r) {
  std::string s;
  for (const auto& name : scheme_order(r)) {
    if (!is_calibrated(r, name)) continue;
    double amin = 1e300, amax = -1e300, kmin = 1e300, kmax = -1e300;
    int apart = 0, later = 0, kl_apart = 0;
    const SchemeRow* first = at(r, name, 0);
    for (const auto& d : r.rows) {
      if (d.row.scheme != name) continue;
      const double a = d.row.quality->generalization->overall.accuracy(), k = d.row.quality->divergence->kl_mean;
      amin = std::min(amin, a);
      amax = std::max(amax, a);
      kmin = std::min(kmin, k);
      kmax = std::max(kmax, k);
      if (d.draw == 0 || !first) continue;
      ++later;
      const auto p = paired_answers(*d.row.quality->generalization, *first->quality->generalization);
      apart += p && (p->low > 0 || p->high < 0);
      kl_apart += d.kl_ratio_to_draw0 && (d.kl_ratio_to_draw0->low > 1 || d.kl_ratio_to_draw0->high < 1);
    }
    s += fmt::format("- {}: accuracy {:.4f}-{:.4f} (range {:.4f}); KLD {:.3g}-{:.3g} ({:.2f}x); {} of {} later draws answer "
                     "differently from draw 0 beyond the paired interval, {} of {} have a KLD apart from draw 0's.\n",
                     name, amin, amax, amax - amin, kmin, kmax, kmin > 0 ? kmax / kmin : 0.0, apart, later, kl_apart, later);
  }
  return s;
}

// Target 3 per draw: each GPTQ twin against its RTN twin, judged where the KLD says the twin is better.
std::string twins_text(const DrawsResults& r) {
  std::string s;
  std::vector<int> met(static_cast<size_t>(r.draws), 1), judged(static_cast<size_t>(r.draws), 0);
  for (const auto& [base, twin] : gptq_twins()) {
    if (!at(r, base, 0) || !at(r, twin, 0)) continue;
    std::string cells, single;  // single: the one draw's comparison, when there is one draw
    int above = 0, kld_better = 0;
    for (int d = 0; d < r.draws; ++d) {
      const SchemeRow *b = at(r, base, d), *g = at(r, twin, d);
      if (!b || !g) continue;
      const auto p = paired_answers(*g->quality->generalization, *b->quality->generalization);
      if (!p) continue;
      const bool better = g->quality->divergence->kl_high < b->quality->divergence->kl_low;
      kld_better += better;
      above += better && p->low > 0;
      if (better) {
        ++judged[static_cast<size_t>(d)];
        met[static_cast<size_t>(d)] = met[static_cast<size_t>(d)] && p->low > 0;
      }
      const std::string cell = fmt::format("{} ({})", diff_text(*p), verdict(*p));
      cells += fmt::format("{}{}: {}", cells.empty() ? "" : "; ", d, cell);
      if (r.draws == 1)
        single = fmt::format("KLD {:.3g} vs {:.3g} (KLD says {}); accuracy {}", g->quality->divergence->kl_mean,
                             b->quality->divergence->kl_mean, better ? "better" : "not better", cell);
    }
    if (r.draws == 1) {
      if (!single.empty()) s += fmt::format("- {} against {}: {}\n", twin, base, single);
      continue;
    }
    s += fmt::format("- {} against {}: above beyond the interval in {} of the {} draws where KLD says it is better. Per "
                     "draw: {}\n",
                     twin, base, above, kld_better, cells);
  }
  int draws_met = 0;
  for (int d = 0; d < r.draws; ++d) draws_met += judged[static_cast<size_t>(d)] > 0 && met[static_cast<size_t>(d)];
  if (r.draws == 1)
    return fmt::format("Target 3 (each GPTQ twin above its RTN twin beyond the interval where KLD says it is better): "
                       "**{}**.\n\n",
                       draws_met == 1 ? "met" : "missed") +
           s;
  return fmt::format("Target 3 (each GPTQ twin above its RTN twin beyond the interval where KLD says it is better) is met "
                     "in {} of {} draws.\n\n",
                     draws_met, r.draws) +
         s;
}

// Target 4 per draw over the core schemes present, and on the calibrated schemes' means over the draws.
std::string rank_text(const DrawsResults& r) {
  std::vector<std::string> core;
  for (const auto& n : core_sweep_schemes())
    if (at(r, n, 0)) core.push_back(n);
  const bool all_core = core.size() == core_sweep_schemes().size();
  std::string s, cells;
  int reach = 0, counted = 0;
  double lo = 1e300, hi = -1e300;
  std::optional<RankAgreement> first;  // draw 0's
  for (int d = 0; d < r.draws; ++d) {
    std::vector<SchemeRow> rows;
    for (const auto& n : core)
      if (const SchemeRow* x = at(r, n, d)) rows.push_back(*x);
    if (rows.size() != core.size()) continue;  // a scheme without this draw (a results file cut short)
    const auto ra = rank_agreement(rows);
    if (!ra) continue;
    if (d == 0) first = ra;
    ++counted;
    reach += ra->rho >= 0.8;
    lo = std::min(lo, ra->rho);
    hi = std::max(hi, ra->rho);
    cells += fmt::format("{}{}: {:.3f} [{:.3f}, {:.3f}]", cells.empty() ? "" : "; ", d, ra->rho, ra->low, ra->high);
  }
  const auto verdict_text = [](const RankAgreement& a) {
    return fmt::format("**{}**{}", a.rho >= 0.8 ? "met" : "missed",
                       a.rho >= 0.8 && a.low < 0.8   ? " at its point value (the interval reaches below 0.8)"
                       : a.rho < 0.8 && a.high >= 0.8 ? " at its point value (the interval reaches 0.8)"
                                                      : "");
  };
  if (r.draws == 1) {  // one draw: its rho is the answer, and a mean over one draw would repeat it
    if (first)
      s += fmt::format("Target 4 (Spearman's rho of accuracy and KLD over the {} {}core schemes, at least 0.8; bootstrap over "
                       "items): rho {:.3f} [{:.3f}, {:.3f}]: {}.\n",
                       core.size(), all_core ? "" : "of the ", first->rho, first->low, first->high, verdict_text(*first));
    return s;
  }
  std::vector<std::vector<const SchemeRow*>> groups;
  for (const auto& n : core) {
    groups.emplace_back();
    for (const auto& d : r.rows)
      if (d.row.scheme == n) groups.back().push_back(&d.row);
  }
  const auto gm = group_rank_agreement(groups);
  s += fmt::format("Target 4 (Spearman's rho of accuracy and KLD over the {} {}core schemes, at least 0.8; bootstrap over "
                   "items): rho {:.3f}-{:.3f} over the {} draws, at least 0.8 in {}. Per draw: {}.\n",
                   core.size(), all_core ? "" : "of the ", lo, hi, counted, reach, cells);
  if (gm)
    s += fmt::format("\nOn each calibrated scheme's mean over its {} draws (accuracy and KLD both averaged; the method's "
                     "expected place rather than one draw's): rho {:.3f} [{:.3f}, {:.3f}]: {}.\n",
                     r.draws, gm->rho, gm->low, gm->high, verdict_text(*gm));
  return s;
}

}  // namespace

std::string draws_readme_block(const DrawsResults& r, const nlohmann::json& manifest) {
  int calibrated = 0;
  for (const auto& name : scheme_order(r)) calibrated += is_calibrated(r, name);
  // The other experiments calibrate on the first `sweep_windows` windows: draw 0 is theirs only at that size.
  const int sweep_windows = minigpt::GptqSettings{}.calibration_windows;
  const std::string draw0 =
      r.calibration == sweep_windows
          ? "draw 0 is what every other experiment calibrates on"
          : fmt::format("every other experiment calibrates on the first {} windows, so draw 0 is not theirs", sweep_windows);
  const std::string draws =
      r.draws == 1 ? fmt::format("one draw of {} windows from the val split ({} tokens; the first {} windows; {})", r.calibration,
                                 r.val_tokens, r.calibration, draw0)
                   : fmt::format("{} disjoint draws of {} windows from the val split ({} tokens; draw d is windows [{} d, {} (d + "
                                 "1)); {})",
                                 r.draws, r.calibration, r.val_tokens, r.calibration, r.calibration, draw0);
  std::string s = fmt::format(
      "Measured {} ({}), seed {}: {} rows, {} calibrated schemes each quantized on {}. "
      "KLD is over the test split against {}; accuracy is the generalization benchmark's test half, paired by item. "
      "A row without a draw number is not calibrated{}.\n\n",
      manifest.value("date", std::string("?")), manifest.value("/machine/cpu_model"_json_pointer, std::string("?")), r.seed, r.rows.size(),
      calibrated, draws, r.reference, r.draws > 1 ? ": it is the same model in every draw" : "");
  if (r.draws > 1) s += "### How far a draw moves each calibrated scheme\n\n" + spread_text(r) + "\n";
  s += rows_table(r) + "\n";
  s += std::string(r.draws > 1 ? "### The benchmark's targets 3 and 4, once per draw" : "### The benchmark's targets 3 and 4") +
       "\n\n" + twins_text(r) + "\n" + rank_text(r);
  return s;
}

}  // namespace mqexp
