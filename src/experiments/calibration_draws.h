// experiments/26-quant-curve/calibration-draws: how much of a calibrated scheme's quality is the method and how
// much the text that calibrated it. Every experiment calibrates GPTQ, the imatrix search and AWQ on the same
// windows (the first `calibration` windows of the val split); the benchmark's intervals are over items, with that
// one draw held fixed. Here each calibrated scheme is quantized again on further disjoint draws of the same size
// (draw d = windows [d c, (d + 1) c) of the val split; draw 0 is the sweep's), and every row is measured against
// fp32 as the sweep measures it: KLD over the test split, the generalization benchmark's test half paired by item.
// The report restates the benchmark's targets 3 and 4 (generalization_report.h) once per draw, and on each
// calibrated scheme's mean over the draws. Deterministic: a quality measurement, not a timing.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/intervals.h"
#include "experiments/results.h"

namespace mqexp {

struct DrawsOptions {
  std::string model, lexicon;
  uint64_t seed = 42;
  std::vector<std::string> schemes;  // empty: the sweep's core schemes; fp32 is put first when missing (the reference)
  int draws = 5;                     // calibration draws of each calibrated scheme (1 .. what the val split holds)
  int calibration = 128;             // windows per draw (n_ctx tokens each), as the sweep's --calibration
  int64_t max_slots = 0;             // verb-tense slots (0: all)
  int64_t max_items = 0;             // generalization benchmark items of the test half (0: all)
  int64_t ppl_tokens = 0;            // test tokens for KLD (0: all)
};

// One quantized model. A scheme no calibration shapes has one row (draw 0): its weights do not depend on a draw.
struct DrawRow {
  int draw = 0;
  bool calibrated = false;
  SchemeRow row;  // ok, quality with divergence against fp32 and the benchmark's answers
  // This draw's KLD over draw 0's for the same scheme: the ratio of their test-split KLs, paired by window
  // (clustered_ratio). Absent for draw 0 and for a scheme without calibration.
  std::optional<MeanInterval> kl_ratio_to_draw0;
};

struct DrawsResults {
  uint64_t seed = 42;
  int draws = 0, calibration = 0;
  long long val_tokens = 0;  // the val split's tokens (the draws use draws x calibration x n_ctx of them)
  std::string reference = "fp32";
  std::vector<DrawRow> rows;  // in scheme order, a calibrated scheme's draws together
};

using DrawsProgress = std::function<void(int done, int total, const std::string& what)>;
// mq::UsageError before any work when a scheme is unknown, draws < 1, or the val split is too short for the draws.
DrawsResults run_calibration_draws(const DrawsOptions& o, const DrawsProgress& progress);

nlohmann::json to_json(const DrawsResults& r);
DrawsResults draws_results_from_json(const nlohmann::json& j, const std::string& file = "calibration draws results");

// The README's generated block: per-draw table, targets 3 and 4 per draw and on the draws' means.
std::string draws_readme_block(const DrawsResults& r, const nlohmann::json& manifest);

}  // namespace mqexp
