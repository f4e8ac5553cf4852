// The calibration-draws experiment's pure pieces: later draws are the next disjoint windows, the rank agreement
// over groups of draws (one row per group is the benchmark's own rank agreement; several are averaged), the
// results' JSON round trip, and the report's per-draw verdicts on hand-made rows.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/calibration_draws.h"
#include "experiments/experiment_io.h"
#include "experiments/sweep.h"
#include "experiments/generalization_report.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "minigpt/calibrate.h"
#include "minigpt/quant_plan.h"
#include "minigpt/corpus/generalization.h"

using namespace mqexp;

namespace {

// A row whose every benchmark paradigm holds `answers` and whose KLD is kl (interval +-10%).
SchemeRow row(const std::string& scheme, const std::string& answers, double kl) {
  SchemeRow r;
  r.scheme = scheme;
  r.ok = true;
  r.method = "rtn";
  r.quality = Quality{};
  Generalization g;
  g.split = "test";
  long long right = 0, total = 0;
  for (int p = 0; p < minigpt::kNumParadigms; ++p) {
    g.answers[minigpt::paradigm_name(static_cast<minigpt::Paradigm>(p))] = answers;
    if (!minigpt::paradigm_scored(static_cast<minigpt::Paradigm>(p))) continue;
    for (char c : answers) {
      right += c == '1';
      total += c != '-';
    }
  }
  g.overall.correct = right;
  g.overall.total = total;
  r.quality->generalization = g;
  Divergence d;
  d.reference = "fp32";
  d.kl_mean = kl;
  d.kl_low = 0.9 * kl;
  d.kl_high = 1.1 * kl;
  r.quality->divergence = d;
  return r;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// A committed calibration-draws folder: its README's generated block is the rendering of its results.json, which
// round-trips through the typed results.
DrawsResults committed_run(const std::string& dir) {
  REQUIRE(std::filesystem::exists(dir + "/results.json"));
  const nlohmann::json results = read_json(dir + "/results.json"), manifest = read_json(dir + "/manifest.json");
  const DrawsResults typed = draws_results_from_json(results);
  CHECK(generated_block(mq::read_file(dir + "/README.md")) == draws_readme_block(typed, manifest));
  CHECK(to_json(typed) == results);
  return typed;
}

}  // namespace

TEST_CASE("calibration draws: draw d is the next disjoint windows; a draw past the split's end is refused") {
  std::vector<int32_t> s(100);
  for (int i = 0; i < 100; ++i) s[i] = i;
  const auto w0 = minigpt::calibration_windows(s, 2, 10), w1 = minigpt::calibration_windows(s, 2, 10, 2);
  REQUIRE(w1.size() == 2);
  CHECK(w0 == minigpt::calibration_windows(s, 2, 10, 0));
  CHECK(w1[0].front() == 20);
  CHECK(w1[1].back() == 39);
  CHECK_THROWS_WITH_AS(minigpt::calibration_windows(s, 3, 30, 1),
                       "calibration: 3 windows of 30 tokens from window 1 need 120 tokens, the split has 100", mq::UsageError);
  CHECK_THROWS_AS(minigpt::calibration_windows(s, 1, 10, -1), mq::UsageError);
}

TEST_CASE("group rank agreement: single rows are the benchmark's rank agreement; a group is its rows' mean") {
  // Four schemes, 40 items each; accuracy falls as KLD rises except between b and c.
  const std::vector<SchemeRow> rows = {row("a", repeat("1111111111", 4), 0.0), row("b", repeat("1111111110", 4), 1e-4),
                                       row("c", repeat("1111111100", 4), 1e-5), row("d", repeat("1100000000", 4), 1e-1)};
  std::vector<std::vector<const SchemeRow*>> singles;
  for (const auto& r : rows) singles.push_back({&r});
  const auto ra = rank_agreement(rows);
  const auto ga = group_rank_agreement(singles);
  REQUIRE(ra);
  REQUIRE(ga);
  CHECK(ga->rows == 4);
  CHECK(ga->rho == ra->rho);  // the same statistic, the same resamples
  CHECK(ga->low == ra->low);
  CHECK(ga->high == ra->high);
  CHECK(ga->rho == doctest::Approx(0.8));  // ranks (4,3,2,1) against (4,2,3,1)

  // c's second draw: KLD 3e-4, accuracy 0.5 -> c's mean (accuracy 0.65, KLD 1.55e-4) now ranks below b on both axes.
  const SchemeRow c2 = row("c", repeat("1111100000", 4), 3e-4);
  std::vector<std::vector<const SchemeRow*>> groups = {{&rows[0]}, {&rows[1]}, {&rows[2], &c2}, {&rows[3]}};
  const auto gm = group_rank_agreement(groups);
  REQUIRE(gm);
  CHECK(gm->rho == doctest::Approx(1.0));
  CHECK(gm->low <= gm->rho);
  CHECK(gm->high >= gm->rho);

  // Rows of different items, or fewer than three groups: no answer.
  const SchemeRow other = row("e", "10", 1e-3);
  groups.push_back({&other});
  CHECK_FALSE(group_rank_agreement(groups));
  CHECK_FALSE(group_rank_agreement({{&rows[0]}, {&rows[1]}}));
}

TEST_CASE("calibration draws: results round-trip through JSON, and the report judges target 3 draw by draw") {
  DrawsResults r;
  r.draws = 2;
  r.calibration = 4;
  r.val_tokens = 1000;
  const std::string all = repeat("1111111111", 20);
  r.rows.push_back({0, false, row("fp32", all, 0.0), std::nullopt});
  r.rows.push_back({0, false, row("int3-g64", repeat("1111111000", 20), 1e-2), std::nullopt});
  // Draw 0 gets 3 of 10 items back in every paradigm (beyond the interval); draw 1 one item back and another lost (a tie).
  r.rows.push_back({0, true, row("int3-g64-gptq", all, 1e-3), std::nullopt});
  MeanInterval m;
  m.mean = 1.2;
  m.low = 1.1;
  m.high = 1.3;
  r.rows.push_back({1, true, row("int3-g64-gptq", repeat("1111110100", 20), 2e-3), m});
  const DrawsResults back = draws_results_from_json(to_json(r));
  REQUIRE(back.rows.size() == 4);
  CHECK(to_json(back) == to_json(r));
  CHECK(back.rows[3].kl_ratio_to_draw0->low == 1.1);

  const std::string text = draws_readme_block(back, {{"date", "2026-12-02T00:00:00Z"}, {"machine", {{"cpu_model", "test CPU"}}}});
  CAPTURE(text);
  CHECK(text.find("test CPU") != std::string::npos);
  CHECK(text.find("int3-g64-gptq against int3-g64: above beyond the interval in 1 of the 2 draws where KLD says it is better") !=
        std::string::npos);
  CHECK(text.find("Target 3 (each GPTQ twin above its RTN twin beyond the interval where KLD says it is better) is met in 1 of 2 draws") !=
        std::string::npos);
  CHECK(text.find("- int3-g64-gptq: accuracy 0.7000-1.0000 (range 0.3000); KLD 0.001-0.002 (2.00x); 1 of 1 later draws answer "
                  "differently from draw 0 beyond the paired interval, 1 of 1 have a KLD apart from draw 0's.") != std::string::npos);

  nlohmann::json bad = to_json(r);
  bad["rows"][1]["draw"] = 5;
  CHECK_THROWS_AS(draws_results_from_json(bad), mq::Error);
  bad = to_json(r);
  bad["rows"][0].erase("divergence");
  CHECK_THROWS_AS(draws_results_from_json(bad), mq::Error);
  bad = to_json(r);
  bad["draws"] = 2000000000;  // sizes the report's per-draw counts: refused, not allocated
  CHECK_THROWS_AS(draws_results_from_json(bad), mq::Error);
  // A calibrated scheme without its last draw (a file cut short): the report leaves that draw out, no crash.
  DrawsResults cut = back;
  cut.rows.pop_back();
  CHECK_NOTHROW((void)draws_readme_block(cut, nlohmann::json::object()));
}

TEST_CASE("calibration draws: one draw (another calibration size) reads as one verdict, not as a spread over zero draws") {
  DrawsResults r;
  r.draws = 1;
  r.calibration = 384;  // not the sweep's 128: draw 0 is not the other experiments' calibration
  r.val_tokens = 50001;
  const std::string all = repeat("1111111111", 20);
  r.rows.push_back({0, false, row("fp32", all, 0.0), std::nullopt});
  r.rows.push_back({0, false, row("int3-g64", repeat("1111111000", 20), 1e-2), std::nullopt});
  r.rows.push_back({0, true, row("int3-g64-gptq", all, 1e-3), std::nullopt});
  const std::string text = draws_readme_block(r, {{"date", "2026-12-03T00:00:00Z"}, {"machine", {{"cpu_model", "test CPU"}}}});
  CAPTURE(text);
  CHECK(text.find("quantized on one draw of 384 windows from the val split (50001 tokens; the first 384 windows; every other "
                  "experiment calibrates on the first 128 windows, so draw 0 is not theirs)") != std::string::npos);
  CHECK(text.find("How far a draw moves") == std::string::npos);  // no spread over one draw
  CHECK(text.find("0 of 0") == std::string::npos);
  CHECK(text.find("draw 0 [95%") == std::string::npos);  // no columns against draw 0
  CHECK(text.find("Target 3 (each GPTQ twin above its RTN twin beyond the interval where KLD says it is better): **met**.") !=
        std::string::npos);
  CHECK(text.find("- int3-g64-gptq against int3-g64: KLD 0.001 vs 0.01 (KLD says better); accuracy +0.3000") != std::string::npos);
  // Target 4 on the one draw (fp32 and the GPTQ row tie on accuracy: rho 0.866), and no "mean" over one draw.
  CHECK(text.find("over the 3 of the core schemes, at least 0.8; bootstrap over items): rho 0.866 [0.866, 0.866]: **met**.") !=
        std::string::npos);
  CHECK(text.find("mean over its") == std::string::npos);
}

TEST_CASE("the committed calibration-draws README is the rendering of its results.json, and draw 0 is the sweep's") {
  const DrawsResults typed = committed_run(MQ_SOURCE_DIR "/experiments/26-quant-curve/calibration-draws");
  // Draw 0 calibrates on the sweep's windows: each of its rows is the sweep's row of that scheme (KLD to 6 digits
  // across CPUs, accuracy within an item of 5,500, should the sweep have been measured again on another CPU).
  const SweepResults sweep = sweep_results_from_json(read_json(MQ_SOURCE_DIR "/experiments/26-quant-curve/results.json"));
  int compared = 0;
  for (const auto& d : typed.rows) {
    if (d.draw != 0) continue;
    for (const auto& s : sweep.schemes) {
      if (s.scheme != d.row.scheme || !s.ok || !s.quality || !s.quality->divergence || !s.quality->generalization) continue;
      CAPTURE(s.scheme);
      ++compared;
      CHECK(d.row.quality->divergence->kl_mean == doctest::Approx(s.quality->divergence->kl_mean).epsilon(1e-5));
      CHECK(std::abs(d.row.quality->generalization->overall.accuracy() - s.quality->generalization->overall.accuracy()) <= 2.0 / 5500);
    }
  }
  CHECK(compared == static_cast<int>(core_sweep_schemes().size()));
}

TEST_CASE("the committed calibration-size README is the rendering of its results.json") {
  const DrawsResults typed = committed_run(MQ_SOURCE_DIR "/experiments/26-quant-curve/calibration-size");
  CHECK(typed.draws == 1);
  CHECK(typed.calibration == 3 * minigpt::GptqSettings{}.calibration_windows);  // draws 0-2 of calibration-draws together
}
