// The generalization benchmark's report: pairing by stored answers, rank agreement, tables, targets.
#include "experiments/generalization_report.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/core.h>

#include "experiments/sweep.h"  // core_sweep_schemes
#include "miniquant/error.h"
#include "minigpt/corpus/generalization.h"
#include "minigpt/quant_plan.h"

namespace mqexp {

std::string diff_text(const PairedDifference& p) { return fmt::format("{:+.4f} [{:+.4f}, {:+.4f}]", p.diff, p.low, p.high); }

const char* verdict(const PairedDifference& p) { return p.high < 0 ? "below" : p.low > 0 ? "above" : "tie"; }

const std::vector<std::pair<std::string, std::string>>& gptq_twins() {
  static const std::vector<std::pair<std::string, std::string>> k = [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const std::string base : {"int4-per-channel", "int4-g64", "int3-g64", "int2-g64"})
      for (const std::string suffix : {"-gptq", "-gptq-act-order", "-imatrix-gptq"}) v.emplace_back(base, base + suffix);
    return v;
  }();
  return k;
}

namespace {

std::vector<std::string> paradigm_names(bool scored) {
  std::vector<std::string> out;
  for (int p = 0; p < minigpt::kNumParadigms; ++p)
    if (minigpt::paradigm_scored(static_cast<minigpt::Paradigm>(p)) == scored)
      out.push_back(minigpt::paradigm_name(static_cast<minigpt::Paradigm>(p)));
  return out;
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;  // ties share the mean of their ranks
    for (size_t k = i; k <= j; ++k) r[order[k]] = avg;
    i = j + 1;
  }
  return r;
}

bool has_benchmark(const SchemeRow& r) { return r.ok && r.quality && r.quality->generalization; }

const SchemeRow* find_row(const std::vector<SchemeRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (has_benchmark(r) && r.scheme == name) return &r;
  return nullptr;
}

// Why a rank correlation can miss: every pair of rows whose KLD intervals are apart, split by what the paired
// accuracy difference says (the same order, the reverse, or a tie inside its interval), and which way the answers a
// perturbation changes go (toward right or toward wrong) at small and at large KLD.
std::string resolved_pairs_text(const std::vector<SchemeRow>& rows, const SchemeRow& ref) {
  std::vector<const SchemeRow*> v;
  for (const auto& r : rows)
    if (has_benchmark(r) && r.quality->divergence) v.push_back(&r);
  int apart = 0, same = 0, reverse = 0, tie = 0;
  std::string reversed;
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = i + 1; j < v.size(); ++j) {
      const Divergence &di = *v[i]->quality->divergence, &dj = *v[j]->quality->divergence;
      const SchemeRow *lo = di.kl_high < dj.kl_low ? v[i] : dj.kl_high < di.kl_low ? v[j] : nullptr;
      if (!lo) continue;  // KLD does not resolve the pair
      const SchemeRow* hi = lo == v[i] ? v[j] : v[i];
      const auto p = paired_answers(*lo->quality->generalization, *hi->quality->generalization);
      if (!p) continue;
      ++apart;
      if (p->low > 0) {
        ++same;
      } else if (p->high < 0) {
        if (++reverse <= 3)
          reversed += fmt::format("{}{} (KLD {:.3g}) below {} (KLD {:.3g}) by {}", reversed.empty() ? "" : "; ", lo->scheme,
                                  lo->quality->divergence->kl_mean, hi->scheme, hi->quality->divergence->kl_mean, diff_text(*p));
      } else {
        ++tie;
      }
    }
  if (apart == 0) return "";
  // Against the reference: the items a row answers differently, and the share of them it gets right.
  long long small_right = 0, small_changed = 0, large_right = 0, large_changed = 0;
  int small_rows = 0, large_rows = 0;
  for (const SchemeRow* r : v) {
    if (r == &ref) continue;
    const auto p = paired_answers(*r->quality->generalization, *ref.quality->generalization);
    if (!p) continue;
    const bool small = r->quality->divergence->kl_mean < 1e-3;
    (small ? small_right : large_right) += p->only_a;
    (small ? small_changed : large_changed) += p->only_a + p->only_b;
    ++(small ? small_rows : large_rows);
  }
  const auto share = [](long long a, long long b) { return b > 0 ? fmt::format("{:.0f}%", 100.0 * static_cast<double>(a) / static_cast<double>(b)) : std::string("-"); };
  return fmt::format(
      "   - Why: of the {} pairs of schemes whose KLD intervals are apart, the paired accuracy difference orders {} as KLD "
      "does, {} the other way{}{}, and calls {} a tie (inside its interval): of the pairs accuracy resolves, {} agree with "
      "KLD. The miss is not only noise between near-equal schemes: the reversals lie beyond their intervals.\n"
      "   - A small perturbation moves answers both ways: the {} schemes with KLD below 1e-3 answer {} items differently from "
      "{}, {} of them toward the right answer; the {} at 1e-3 or above, {} items, {} toward right. Near {}'s own "
      "uncertain items (the paradigms below 0.9), accuracy measures which way a perturbation tips them as much as how "
      "large it is.\n",
      apart, same, reverse, reverse ? " (" : "", reverse ? reversed + (reverse > 3 ? "; ..." : "") + ")" : "", tie,
      share(same, same + reverse), small_rows,
      small_changed, ref.scheme, share(small_right, small_changed), large_rows, large_changed, share(large_right, large_changed),
      ref.scheme);
}

// Rank agreement within each kind of error: the rows whose weights are rounded alone (no calibration: RTN at any
// width, +a8, +bf16) and the rows a calibration shaped (GPTQ, -imatrix, -fisher, AWQ, SmoothQuant), each with the
// reference as its zero. Rows that are not recipes (a quant map's config_id) are left out. The text states the split,
// not a cause. A side run (2026-12-01, a scratch program; the 18 core rows quantized as the sweep quantizes them)
// measured each row's KL from fp32 on the benchmark's own test items instead of the test split. Accuracy ranks as that
// KL does with rho 0.749 [0.555, 0.802] over the items' tokens and 0.774 [0.591, 0.832] at the verb slot alone
// (bootstrap over items, 300 resamples), against 0.712 with the test split's KLD. Of the pairs whose slot KL and
// accuracy both differ beyond their paired intervals, 104 agree and 14 reverse (96 and 23 with the test split's KLD);
// 8 of the 14 hold int2-g64-gptq, whose slot KL is 14x int4-g64's while its accuracy is 0.019 higher: it gains on
// the paradigms where fp32 follows a wrong rule what it loses on the unseen ones. Calibration text against benchmark
// text explains a part of the miss, not all of it. A second side run (2026-12-03, the same 18 rows' item margins; the
// decision's own divergence, KL between fp32's and the row's two-way choice of form, mean over the scored items):
// over all 18 rows rho 0.777 (bootstrap [0.582, 0.832]) against 0.712, over the 12 rounded rows 0.954 against 0.856,
// but over fp32 and the 6 calibrated rows 0.536 with either divergence: how far a calibrated row moves the benchmark's
// decisions ranks its accuracy no better than its test-split KLD. So the text below states the split, not a cause.
std::string error_kinds_text(const std::vector<SchemeRow>& rows, const SchemeRow& ref) {
  std::vector<SchemeRow> plain, calibrated;
  for (const auto& r : rows) {
    bool cal = false;
    try {
      cal = minigpt::QuantPlan::uniform(r.scheme).needs_calibration();  // "-act-order", K mixes, phase splits too
    } catch (const mq::UsageError&) {
      continue;
    }
    if (cal) calibrated.push_back(r);
    else plain.push_back(r);
  }
  if (!calibrated.empty()) calibrated.insert(calibrated.begin(), ref);
  const auto rp = rank_agreement(plain), rc = rank_agreement(calibrated);
  if (!rp || !rc) return "";
  std::string s = fmt::format(
      "   - By kind of error: over the {} rows whose weights are rounded alone (no calibration: round-to-nearest at any "
      "width, `+a8`, `+bf16`; {} among them) accuracy ranks as KLD does with rho {:.3f} [{:.3f}, {:.3f}]; over the {} "
      "rows a calibration shaped (GPTQ, `-imatrix`, AWQ, SmoothQuant; {} added) rho {:.3f} [{:.3f}, {:.3f}].",
      rp->rows, ref.scheme, rp->rho, rp->low, rp->high, rc->rows, ref.scheme, rc->rho, rc->low, rc->high);
  if (rp->low >= 0.8 - 1e-12 && rc->high < 0.8)
    s += " The rounding errors alone meet the 0.8 at their interval's low end; the calibrated rows miss it at its high "
         "end.";
  return s + "\n";
}

std::string targets(const std::vector<SchemeRow>& rows, const SchemeRow& ref) {
  const Generalization& fg = *ref.quality->generalization;
  const double fa = fg.overall.accuracy();
  const Interval fw = wilson(fg.overall.correct, fg.overall.total);
  std::string s = "**Targets** (the benchmark's test half; a difference is paired by item, Newcombe's 95% interval; "
                  "inside its interval it is a tie):\n\n";
  s += fmt::format("1. {} scores between 70% and 95%: {:.4f} [{:.4f}, {:.4f}] over {} items: **{}**.\n", ref.scheme, fa, fw.low,
                   fw.high, fg.overall.total, fa >= 0.70 && fa <= 0.95 ? "met" : "missed");
  std::string rtn;
  bool all_below = true;
  int present = 0;
  for (const std::string name : {"int2-g64", "int3-g64", "int4-per-channel"}) {
    const SchemeRow* r = find_row(rows, name);
    const auto p = r ? paired_answers(*r->quality->generalization, fg) : std::nullopt;
    if (!p) {
      rtn += fmt::format("{}{} not in this run", rtn.empty() ? "" : "; ", name);
      all_below = false;
      continue;
    }
    ++present;
    all_below = all_below && p->high < 0;
    rtn += fmt::format("{}{} {} ({})", rtn.empty() ? "" : "; ", name, diff_text(*p), verdict(*p));
  }
  s += fmt::format("2. int2-g64, int3-g64 and int4-per-channel RTN each below {} beyond the interval: {}: **{}**.\n", ref.scheme,
                   rtn, present == 3 && all_below ? "met" : "missed");
  std::string twins;
  bool twins_ok = true;
  int judged = 0;
  for (const auto& [base, twin] : gptq_twins()) {
    const SchemeRow* r = find_row(rows, base);
    if (!r || !r->quality->divergence) continue;
    const SchemeRow* g = find_row(rows, twin);
    if (!g || !g->quality->divergence) continue;
    const Divergence &dr = *r->quality->divergence, &dg = *g->quality->divergence;
    const auto p = paired_answers(*g->quality->generalization, *r->quality->generalization);
    if (!p) continue;
    const bool kld_better = dg.kl_high < dr.kl_low;
    twins += fmt::format("\n   - {} against {}: KLD {:.3g} vs {:.3g} ({}); accuracy {} ({})", twin, base, dg.kl_mean,
                         dr.kl_mean, kld_better ? "KLD says better" : "KLD intervals overlap", diff_text(*p), verdict(*p));
    if (kld_better) {
      ++judged;
      twins_ok = twins_ok && p->low > 0;
    }
  }
  s += fmt::format("3. each GPTQ twin above its RTN twin beyond the interval where the KLD says it is better: **{}**.{}\n",
                   judged > 0 && twins_ok ? "met" : judged == 0 ? "not judged (no such pair in this run)" : "missed", twins);
  // The target names the core schemes (the sweep's defaults before its method comparisons); the run's other rows
  // are ranked beside them.
  std::vector<SchemeRow> core;
  for (const std::string& name : core_sweep_schemes())
    if (const SchemeRow* r = find_row(rows, name)) core.push_back(*r);
  const auto rc = core.size() == core_sweep_schemes().size() ? rank_agreement(core) : std::nullopt;
  const auto ra = rank_agreement(rows);
  if (rc) {
    s += fmt::format("4. accuracy ranks the {} core schemes (the sweep's defaults before its method comparisons) as KLD does, "
                     "Spearman's rho >= 0.8: rho {:.3f}, 95% bootstrap over items [{:.3f}, {:.3f}]: **{}**.",
                     rc->rows, rc->rho, rc->low, rc->high, rc->rho >= 0.8 ? "met" : "missed");
    if (ra && ra->rows > rc->rows)
      s += fmt::format(" Over all {} schemes of this run: rho {:.3f} [{:.3f}, {:.3f}].", ra->rows, ra->rho, ra->low, ra->high);
    s += "\n";
  } else if (ra) {
    s += fmt::format("4. accuracy ranks the {} schemes of this run as KLD does (the target names the {} core schemes, not all "
                     "in this run), Spearman's rho >= 0.8: rho {:.3f}, 95% bootstrap over items [{:.3f}, {:.3f}]: **{}**.\n",
                     ra->rows, core_sweep_schemes().size(), ra->rho, ra->low, ra->high, ra->rho >= 0.8 ? "met" : "missed");
  }
  if (ra) s += resolved_pairs_text(rows, ref) + error_kinds_text(rows, ref);
  return s + "\n";
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw mq::UsageError(fmt::format("spearman: {} values against {}", a.size(), b.size()));
  const size_t n = a.size();
  if (n < 2) return std::nan("");
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = 0.5 * static_cast<double>(n + 1);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : std::nan("");
}

std::string scored_answers(const Generalization& g) {
  std::string s;
  for (const auto& name : paradigm_names(true)) {
    const auto it = g.answers.find(name);
    if (it == g.answers.end()) return "";
    s += it->second;
  }
  return s;
}

PairedDifference pair_answer_strings(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) throw mq::UsageError(fmt::format("paired answers: {} items against {}", a.size(), b.size()));
  long long both = 0, only_a = 0, only_b = 0, neither = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i], y = b[i];
    if (x == '-' || y == '-') continue;
    both += x == '1' && y == '1';
    only_a += x == '1' && y == '0';
    only_b += x == '0' && y == '1';
    neither += x == '0' && y == '0';
  }
  return paired_difference(both, only_a, only_b, neither);
}

std::optional<PairedDifference> paired_answers(const Generalization& a, const Generalization& b, const std::string& paradigm) {
  const std::vector<std::string> names = paradigm.empty() ? paradigm_names(true) : std::vector<std::string>{paradigm};
  std::string sa, sb;  // the paradigms' answers end to end, each paradigm checked to hold the same items
  for (const auto& name : names) {
    const auto ia = a.answers.find(name), ib = b.answers.find(name);
    if (ia == a.answers.end() || ib == b.answers.end() || ia->second.size() != ib->second.size()) return std::nullopt;
    sa += ia->second;
    sb += ib->second;
  }
  return pair_answer_strings(sa, sb);
}

std::optional<RankAgreement> rank_agreement(const std::vector<SchemeRow>& rows) {
  std::vector<std::vector<const SchemeRow*>> groups;
  for (const auto& r : rows)
    if (has_benchmark(r) && r.quality->divergence) groups.push_back({&r});
  return group_rank_agreement(groups);
}

std::optional<RankAgreement> group_rank_agreement(const std::vector<std::vector<const SchemeRow*>>& groups) {
  std::vector<std::vector<std::string>> answers;  // (groups, rows of the group) scored answers
  std::vector<double> neg_kld;                    // (groups) minus the mean KLD of the group's rows
  size_t n = 0;
  for (const auto& g : groups) {
    if (g.empty()) continue;
    answers.emplace_back();
    double kl = 0;
    for (const SchemeRow* r : g) {
      if (!r || !has_benchmark(*r) || !r->quality->divergence) return std::nullopt;
      answers.back().push_back(scored_answers(*r->quality->generalization));
      kl += r->quality->divergence->kl_mean;
      if (n == 0) n = answers.back().back().size();
      if (answers.back().back().empty() || answers.back().back().size() != n) return std::nullopt;
    }
    neg_kld.push_back(-kl / static_cast<double>(g.size()));
  }
  if (answers.size() < 3 || n == 0) return std::nullopt;
  const auto accuracy = [](const std::string& s, const std::vector<size_t>* idx) {
    long long right = 0, scored = 0;
    const size_t m = idx ? idx->size() : s.size();
    for (size_t k = 0; k < m; ++k) {
      const char c = s[idx ? (*idx)[k] : k];
      scored += c != '-';
      right += c == '1';
    }
    return scored > 0 ? static_cast<double>(right) / static_cast<double>(scored) : 0.0;
  };
  const auto group_accuracy = [&](size_t i, const std::vector<size_t>* idx) {
    double sum = 0;
    for (const auto& a : answers[i]) sum += accuracy(a, idx);
    return sum / static_cast<double>(answers[i].size());
  };
  std::vector<double> acc(answers.size());
  for (size_t i = 0; i < answers.size(); ++i) acc[i] = group_accuracy(i, nullptr);
  RankAgreement ra;
  ra.rows = static_cast<int>(answers.size());
  ra.rho = spearman(acc, neg_kld);
  std::mt19937_64 rng(42);
  std::vector<size_t> idx(n);
  std::vector<double> rhos;
  for (int b = 0; b < 1000; ++b) {
    for (auto& k : idx) k = static_cast<size_t>(rng() % n);
    for (size_t i = 0; i < answers.size(); ++i) acc[i] = group_accuracy(i, &idx);
    const double r = spearman(acc, neg_kld);
    if (std::isfinite(r)) rhos.push_back(r);
  }
  if (rhos.empty() || !std::isfinite(ra.rho)) return std::nullopt;
  ra.low = quantile(rhos, 0.025);
  ra.high = quantile(rhos, 0.975);
  return ra;
}

std::string generalization_section(const std::vector<SchemeRow>& rows, const std::string& reference, unsigned long long seed) {
  const SchemeRow* ref = find_row(rows, reference);
  if (!ref) return "";
  const Generalization& fg = *ref->quality->generalization;
  std::string s = fmt::format(
      "### Generalization benchmark ({} half): verb-form minimal pairs in constructions training never wrote\n\n"
      "Built from the lexicon with seed {} (`src/minigpt/corpus/generalization.h`); every item is decided by the words "
      "before the verb and scored as the slots are (the sentence's log-probability with each form). Accuracy is over the "
      "{} scored paradigms; the diagnostics (where the fp32 model follows a wrong rule, below chance) are shown beside it, "
      "never averaged in. Each row is paired with {} item by item.\n\n",
      fg.split, seed, paradigm_names(true).size(), reference);
  s += targets(rows, *ref);
  s += fmt::format("| scheme | KLD | accuracy [Wilson 95%] | vs {} [95%, paired] | McNemar p | right only in {} / only in scheme "
                   "| diagnostics |\n|---|---:|---:|---:|---:|---:|---:|\n",
                   reference, reference);
  for (const auto& r : rows) {
    if (!has_benchmark(r)) continue;
    const Generalization& g = *r.quality->generalization;
    const Interval w = wilson(g.overall.correct, g.overall.total);
    const auto p = paired_answers(g, fg);
    s += fmt::format("| {} | {} | {:.4f} [{:.4f}, {:.4f}] | {} | {} | {} | {:.4f} |\n", r.scheme,
                     r.quality->divergence ? fmt::format("{:.3g}", r.quality->divergence->kl_mean) : std::string("-"),
                     g.overall.accuracy(), w.low, w.high, p ? diff_text(*p) : "-", p ? fmt::format("{:.2g}", p->p_value) : "-",
                     p ? fmt::format("{} / {}", p->only_b, p->only_a) : "-", g.diagnostic.accuracy());
  }
  std::vector<std::string> cols = paradigm_names(true);
  const std::vector<std::string> diag = paradigm_names(false);
  cols.insert(cols.end(), diag.begin(), diag.end());
  s += fmt::format("\n**Per paradigm** (accuracy; ↓ / ↑: below / above {} beyond the paired interval; the last {} columns are "
                   "the diagnostics):\n\n| scheme |",
                   reference, diag.size());
  for (const auto& c : cols) s += " " + c + " |";
  s += "\n|---|";
  for (size_t i = 0; i < cols.size(); ++i) s += "---:|";
  s += "\n";
  for (const auto& r : rows) {
    if (!has_benchmark(r)) continue;
    const Generalization& g = *r.quality->generalization;
    s += "| " + r.scheme + " |";
    for (const auto& c : cols) {
      const auto it = g.by_paradigm.find(c);
      if (it == g.by_paradigm.end()) {
        s += " - |";
        continue;
      }
      const auto p = &r == ref ? std::nullopt : paired_answers(g, fg, c);
      s += fmt::format(" {:.3f}{} |", it->second.accuracy(), !p ? "" : p->high < 0 ? " ↓" : p->low > 0 ? " ↑" : "");
    }
    s += "\n";
  }
  s += "\nThe paradigms:\n\n";
  for (int p = 0; p < minigpt::kNumParadigms; ++p)
    s += fmt::format("- `{}`: {}.\n", minigpt::paradigm_name(static_cast<minigpt::Paradigm>(p)),
                     minigpt::paradigm_description(static_cast<minigpt::Paradigm>(p)));
  return s + "\n";
}

}  // namespace mqexp
