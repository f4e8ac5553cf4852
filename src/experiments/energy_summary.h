// What 28-energy's rounds answer, per model: each configuration's J/token and speed by phase, every
// comparison as a paired ratio with its 95% interval over rounds (the control first), the phase-split
// answers, the ranking's stability, the batch and prompt-length curves, and the statements the report makes
// with a check of each under any pricing (energy_robust.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/energy_robust.h"
#include "experiments/energy_rounds.h"
#include "miniquant/energy/trial_stats.h"

namespace mqexp {

// A phase split and the two uniform modes it mixes (its prefill recipe and its decode recipe, each run in
// both phases).
struct SplitDef {
  std::string name, prefill_uniform, decode_uniform;
};

struct SubjectData {
  std::string key;                             // "minigpt", "gpt2_small_shaped"
  std::string title;                           // for the report
  std::vector<std::string> configs;            // every measured configuration, in listed order
  std::map<std::string, nlohmann::json> info;  // per configuration: role, method, scheme, bytes, accuracy, ...
  std::string baseline, control;               // control: "" when not measured
  std::vector<SplitDef> splits;
  std::vector<int> batch;                      // the batch curve's sizes (tasks "batch<B>")
  std::vector<int> curve_lengths;              // the prompt-length curve's prompts (tasks "prompt<L>")
  std::vector<std::string> curve_methods;      // the curve's methods; both lists empty when no curve was measured
  int curve_gen = 0;
  RoundsResult main, batches, curve;  // generation; the batch curve (tasks "batch<B>"); the prompt-length curve
};

// One value per round of a configuration's phase: J/token or joules under `price`, else the metric as recorded.
std::vector<double> priced_series(const RoundsResult& r, const std::string& task, const std::string& config, const std::string& phase,
                                  const Pricing& price = {}, const std::string& metric = "joules_per_token");

// Paired ratio of configuration a to b (J/token unless `metric` says otherwise) of one task and phase: the
// robust one (mq::energy::robust_paired_ratio: the median of the per-round ratios with the sign-test interval), so a round a
// competing process disturbed cannot drag it.
mq::energy::Ratio paired(const RoundsResult& r, const std::string& task, const std::string& a, const std::string& b,
                         const std::string& phase, const Pricing& price = {}, const std::string& metric = "joules_per_token");

// The control's verdict: its interval holds 1.00 and lies inside +-3% (the adaptive rounds' stopping rule).
inline bool control_passes(const mq::energy::Ratio& r) { return r.low <= 1.0 && r.high >= 1.0 && r.low >= 0.97 && r.high <= 1.03; }

// The per-configuration records (info + phases, batch, paired comparisons, agreement), the control, the
// splits, the ranking, the batch scaling and the prompt-length curve, as summary.json holds them.
nlohmann::json summarize_subject(const SubjectData& d);

// The statements the report makes about this model (savings, the ranking's winner, each split's answer, the
// prompt-length crossover), each checkable under any pricing. They refer to `d`, which must outlive them.
std::vector<Statement> subject_statements(const SubjectData& d);

// Where prefill's share of a request's energy (L prompt tokens + curve_gen generated) overtakes decode's, per
// method: {"between": [L_i, L_j], "at": linear interpolation} or {"never": true} within the measured lengths.
nlohmann::json prompt_crossover(const SubjectData& d, const std::string& method, const Pricing& price = {});

}  // namespace mqexp
