// The calibration-draws run: every scheme quantized (a calibrated one once per draw), evaluated, and measured
// against fp32 in one divergence pass; results to and from JSON. The report is calibration_draws_report.cpp.
#include "experiments/calibration_draws.h"

#include <algorithm>
#include <memory>

#include <fmt/core.h>

#include "experiments/evaluate.h"
#include "experiments/sweep.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/timer.h"
#include "minigpt/quantize_model.h"

namespace mqexp {

DrawsResults run_calibration_draws(const DrawsOptions& o, const DrawsProgress& progress) {
  if (o.draws < 1) throw mq::UsageError(fmt::format("calibration draws: need at least 1 draw, got {}", o.draws));
  if (o.calibration < 1) throw mq::UsageError(fmt::format("calibration draws: need at least 1 window, got {}", o.calibration));
  std::vector<std::string> names = o.schemes.empty() ? core_sweep_schemes() : o.schemes;
  if (std::find(names.begin(), names.end(), "fp32") == names.end()) names.insert(names.begin(), "fp32");
  std::vector<minigpt::QuantPlan> plans;
  for (const auto& n : names) {
    plans.push_back(minigpt::QuantPlan::uniform(n));  // an unknown name fails here, before anything runs
    plans.back().gptq.calibration_windows = o.calibration;
  }
  // The corpus and the size check come before the first progress line: a refusal is one line.
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  DrawsResults res;
  res.seed = o.seed;
  res.draws = o.draws;
  res.calibration = o.calibration;
  res.val_tokens = static_cast<long long>(minigpt::encode_split(c.tok, c.corpus.val).size());
  {
    // The draws must fit the val split: say so now, not after the first schemes ran.
    const LoadedModel probe = load_checkpoint(o.model, &c.tok);
    const long long per_draw = static_cast<long long>(o.calibration) * probe.model.config().n_ctx;
    const long long fit = per_draw > 0 ? res.val_tokens / per_draw : 0;
    if (o.draws > fit)
      throw mq::UsageError(fmt::format("calibration draws: {} draws of {} windows ({} tokens each) need {} val tokens, the "
                                       "split has {} (at most {} draws)",
                                       o.draws, o.calibration, per_draw, per_draw * o.draws, res.val_tokens, fit));
  }
  // Counted once the draws are known to fit (so at most what the val split holds, no overflow).
  int units = 0;
  for (const auto& p : plans) units += p.needs_calibration() ? o.draws : 1;
  const int total = 2 + units;
  int done = 0;
  const auto stage = [&](const std::string& what) { progress(done++, total, what); };
  stage("corpus and checkpoint");
  const EvalLimits limits{.ppl_tokens = o.ppl_tokens, .max_slots = o.max_slots, .perplexity = false, .max_items = o.max_items};

  std::vector<std::unique_ptr<LoadedModel>> kept;  // (rows) the quantized models, for the divergence pass
  std::vector<ItemScores> scores;                  // (rows) their slot margins and benchmark answers
  for (const minigpt::QuantPlan& plan : plans) {
    const bool calibrated = plan.needs_calibration();
    for (int d = 0; d < (calibrated ? o.draws : 1); ++d) {
      stage(calibrated ? fmt::format("{}: draw {}", plan.id, d) : plan.id);
      auto lm = std::make_unique<LoadedModel>(load_checkpoint(o.model, &c.tok));
      const auto calib = calibration_for(plan, c, lm->model.config().n_ctx, d);
      DrawRow dr;
      dr.draw = d;
      dr.calibrated = calibrated;
      dr.row = row_for(plan);
      const mq::Stopwatch tq;
      const minigpt::ModelQuantReport rep = minigpt::quantize_model(lm->model, plan, calib);
      dr.row.quantize_seconds = tq.seconds();
      if (plan.any_gptq())
        dr.row.gptq = GptqRecord{plan.gptq.calibration_windows, plan.gptq.options.percdamp, plan.gptq.options.block,
                                 plan.gptq.options.act_order, plan.gptq.sequential, rep.calibration_seconds};
      scores.emplace_back();
      dr.row.quality = evaluate_quality(lm->model, lm->tok, c, limits, &scores.back());
      dr.row.footprint = describe(lm->model, lm->model.config().n_ctx);
      dr.row.ok = true;
      res.rows.push_back(std::move(dr));
      kept.push_back(std::move(lm));
    }
  }
  stage("KLD against fp32, every row in one pass");
  size_t ref = res.rows.size();
  for (size_t i = 0; i < res.rows.size() && ref == res.rows.size(); ++i)
    if (res.rows[i].row.scheme == "fp32") ref = i;
  std::vector<Evaluated> ev;
  for (size_t i = 0; i < kept.size(); ++i) ev.push_back({&kept[i]->model, &*res.rows[i].row.quality, &scores[i]});
  evaluate_divergence(kept[ref]->model, "fp32", &scores[ref], ev, c.tok, c, limits);
  // Each later draw's KLD against its scheme's draw 0, paired by test window, while the windows' KLs are in memory.
  for (size_t i = 0; i < res.rows.size(); ++i) {
    DrawRow& r = res.rows[i];
    if (r.draw == 0) continue;
    const auto first = std::find_if(res.rows.begin(), res.rows.end(),
                                    [&](const DrawRow& x) { return x.draw == 0 && x.row.scheme == r.row.scheme; });
    r.kl_ratio_to_draw0 = clustered_ratio(r.row.quality->divergence->window_kl, first->row.quality->divergence->window_kl);
  }
  progress(total, total, "done");
  return res;
}

nlohmann::json to_json(const DrawsResults& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& d : r.rows) {
    nlohmann::json j = to_json(d.row);
    j["draw"] = d.draw;
    j["calibrated"] = d.calibrated;
    if (d.kl_ratio_to_draw0)
      j["kl_ratio_to_draw0"] = {{"ratio", d.kl_ratio_to_draw0->mean}, {"low", d.kl_ratio_to_draw0->low}, {"high", d.kl_ratio_to_draw0->high}};
    rows.push_back(std::move(j));
  }
  return {{"seed", r.seed}, {"draws", r.draws}, {"calibration_windows", r.calibration}, {"val_tokens", r.val_tokens},
          {"reference", r.reference}, {"rows", rows}};
}

DrawsResults draws_results_from_json(const nlohmann::json& j, const std::string& file) {
  DrawsResults r;
  try {
    r.seed = j.at("seed").get<uint64_t>();
    const long long draws = j.at("draws").get<long long>();
    r.calibration = j.at("calibration_windows").get<int>();
    r.val_tokens = j.at("val_tokens").get<long long>();
    r.reference = j.at("reference").get<std::string>();
    // Each draw has a row of every calibrated scheme, so a file's draws are at most its rows: the report sizes
    // its per-draw counts by it.
    if (draws < 1 || draws > static_cast<long long>(j.at("rows").size()))
      throw mq::Error(fmt::format("draws is {}, with {} rows", draws, j.at("rows").size()));
    r.draws = static_cast<int>(draws);
    for (const auto& x : j.at("rows")) {
      DrawRow d;
      d.row = scheme_row_from_json(x);
      d.draw = x.at("draw").get<int>();
      d.calibrated = x.at("calibrated").get<bool>();
      if (x.contains("kl_ratio_to_draw0")) {
        const auto& k = x.at("kl_ratio_to_draw0");
        MeanInterval m;
        m.mean = k.at("ratio").get<double>();
        m.low = k.at("low").get<double>();
        m.high = k.at("high").get<double>();
        d.kl_ratio_to_draw0 = m;
      }
      if (!d.row.ok || !d.row.quality || !d.row.quality->divergence || !d.row.quality->generalization)
        throw mq::Error(fmt::format("row {} draw {} has no quality, divergence or benchmark", mq::clip_text(d.row.scheme), d.draw));
      if (d.draw < 0 || d.draw >= r.draws) throw mq::Error(fmt::format("row {} has draw {} of {}", mq::clip_text(d.row.scheme), d.draw, r.draws));
      r.rows.push_back(std::move(d));
    }
  } catch (const nlohmann::json::exception& e) {
    throw mq::Error(fmt::format("{}: {}", file, e.what()));
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("{}: {}", file, e.what()));
  }
  return r;
}

}  // namespace mqexp
