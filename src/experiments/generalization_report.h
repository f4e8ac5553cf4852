// The generalization benchmark in reports: rows paired item by item through the answers results.json
// stores, the per-scheme and per-paradigm tables, the rank agreement with KLD, and the benchmark's targets
// (fp32 off the ceiling, RTN below fp32, GPTQ above RTN, accuracy ranked as KLD ranks).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/intervals.h"
#include "experiments/results.h"

namespace mqexp {

// A paired difference as the reports print it: "+0.0123 [+0.0045, +0.0201]".
std::string diff_text(const PairedDifference& p);
// "below" / "above" when the paired interval excludes 0, else "tie".
const char* verdict(const PairedDifference& p);
// Target 3's pairs, (RTN scheme, its GPTQ twin), in report order: int4-per-channel, int4-g64, int3-g64, int2-g64,
// each with -gptq, -gptq-act-order and -imatrix-gptq.
const std::vector<std::pair<std::string, std::string>>& gptq_twins();

// Spearman's rank correlation of a and b (average ranks for ties; Pearson's r of the ranks). NaN when a
// side has fewer than two distinct values. mq::UsageError when the sizes differ.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// Two answer strings ('1' right, '0' wrong, '-' skipped) of the same items, paired: a's accuracy minus b's
// over the items both scored. mq::UsageError when the lengths differ.
PairedDifference pair_answer_strings(const std::string& a, const std::string& b);

// The scored paradigms' answers of a row, concatenated in paradigm order ("" when one is missing).
std::string scored_answers(const Generalization& g);

// a's accuracy minus b's over the items both scored, on the scored paradigms (or on `paradigm` alone),
// paired item by item through their stored answers. nullopt when either has no answers for them or the
// answer strings of a paradigm differ in length (rows from different benchmark halves or limits).
std::optional<PairedDifference> paired_answers(const Generalization& a, const Generalization& b, const std::string& paradigm = "");

// How the benchmark's accuracy ranks the rows against how their KLD does: Spearman's rho of accuracy and
// -KLD over the rows with both (fp32 counts with KLD 0), and its 95% interval from a bootstrap over items
// (1000 resamples, seed 42: the same items resampled for every row; KLD held fixed).
struct RankAgreement {
  int rows = 0;
  double rho = 0, low = 0, high = 0;
};
std::optional<RankAgreement> rank_agreement(const std::vector<SchemeRow>& rows);
// The same over groups of rows: a group's accuracy is the mean of its rows' accuracies on the (resampled) items and
// its KLD the mean of theirs, so a scheme with one row is that row, and a calibrated scheme's rows over several
// calibration draws (calibration_draws.h) give the method's expected place. rows counts the groups. nullopt with
// fewer than 3 groups, a row without the benchmark or a divergence, or answers of different lengths.
std::optional<RankAgreement> group_rank_agreement(const std::vector<std::vector<const SchemeRow*>>& groups);

// The README section: targets, per-scheme table, per-paradigm table. Empty when no row has the benchmark.
std::string generalization_section(const std::vector<SchemeRow>& rows, const std::string& reference, unsigned long long seed);

}  // namespace mqexp
