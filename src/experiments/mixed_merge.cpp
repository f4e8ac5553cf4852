// The mixed-precision study's merge: every unit file and energy round read back into results.json, with the
// machines they came from, what is missing, the sensitivities and the answers.
#include "experiments/mixed.h"
#include "experiments/mixed_detail.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <Eigen/Dense>
#include <fmt/core.h>

#include "experiments/allocate.h"
#include "experiments/energy_phases.h"
#include "experiments/evaluate.h"
#include "experiments/experiment_io.h"
#include "experiments/mixed_answers.h"
#include "experiments/mixed_energy.h"
#include "experiments/sweep.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "minigpt/safetensors.h"
#include "minigpt/calibrate.h"
#include "minigpt/checkpoint.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/throughput.h"

namespace mqexp {

using namespace mixed_detail;
namespace fs = std::filesystem;

json merge_mixed(const MixedOptions& o, const json& only_machine) {
  const std::string sha = minigpt::content_sha256(o.model);
  const minigpt::ModelConfig c = mixed_model_config(o);
  json res = {{"seed", o.seed}, {"checkpoint_sha256", sha}};
  const std::vector<MixedUnit> units = energy_units(o, true);
  json configs = json::array();
  int missing = 0, elsewhere = 0;
  json missing_names = json::array();  // every unit the study needs and no runs folder has finished
  // The machines the units were measured on (not the merging one), each with its units' dates.
  std::map<std::string, json> machines;
  std::set<std::string> cpus, hosts;
  for (const MixedUnit& u : units) {
    const std::string key = unit_key(o, u, sha);
    auto j = find_unit(o, u, key);
    if (!j) {
      ++missing;
      missing_names.push_back(missing_name(o, u, key));
      continue;
    }
    if (!only_machine.is_null() && (*j)["machine"] != only_machine) {
      ++elsewhere;
      continue;
    }
    cpus.insert(cpu_of((*j)["machine"]).dump());
    hosts.insert((*j)["machine"].value("host", ""));
    // "uniform": one recipe everywhere, or a map the source study names uniform (its Q4_K_M / Q5_K_M maps are
    // llama.cpp's uniform types, whose rules give qkv and mlp_down a higher K type: configs_k/uniform-*).
    const bool uniform = u.plan.rules.empty() || u.id.rfind("uniform-", 0) == 0;
    json e = {{"config_id", u.id},
              {"kind", u.kind == "auto" ? "auto" : u.id == "fp32" ? "baseline" : uniform ? "uniform" : "mixed"},
              {"plan", u.plan.to_json()}, {"row", (*j)["row"]}, {"accuracy_detail", (*j)["accuracy"]}, {"machine", (*j)["machine"]},
              {"seconds", (*j)["seconds"]}};
    json& mach = machines[(*j)["machine"].dump()];
    if (mach.is_null()) mach = {{"machine", (*j)["machine"]}, {"threads", (*j).value("threads", 0)}, {"units", 0},
                                {"first_date", (*j)["date"]}, {"last_date", (*j)["date"]}};
    mach["units"] = mach["units"].get<int>() + 1;
    // ISO 8601 UTC strings order as text
    if ((*j)["date"].get<std::string>() < mach["first_date"].get<std::string>()) mach["first_date"] = (*j)["date"];
    if ((*j)["date"].get<std::string>() > mach["last_date"].get<std::string>()) mach["last_date"] = (*j)["date"];
    e["accuracy"] = e["accuracy_detail"]["accuracy"];
    configs.push_back(e);
  }
  // Energy from the rounds: the set of every configuration when it is measured, else the hand-written ones'.
  std::optional<EnergySetData> energy = read_mixed_energy(o, units, "all");
  std::string set = "all";
  if (!energy) {
    energy = read_mixed_energy(o, energy_units(o, false), "configs");
    set = "configs";
  }
  if (energy) {
    res["energy"] = mixed_energy_json(*energy, set, configs);
    // Rounds a shard did not run are missing units too: the merge names them like the others.
    for (int k = 0; k < o.rounds; ++k)
      if (std::find(energy->round_indices.begin(), energy->round_indices.end(), k) == energy->round_indices.end()) {
        ++missing;
        missing_names.push_back(fmt::format("energy/{}/round-{:03d}", set, k));
      }
  } else {
    res["energy"] = {{"note", "no energy rounds measured yet: run --stage energy"}};
  }
  // Sensitivities are all or nothing: none is a study run without them (--stage configs); some but not
  // all is a shard that did not finish, and the merge must say so.
  {
    json absent = json::array();
    size_t total = 0;
    for (const MixedUnit& u : sensitivity_units(o, c)) {
      ++total;
      const std::string key = unit_key(o, u, sha);
      if (!find_unit(o, u, key)) absent.push_back(missing_name(o, u, key));
    }
    if (!absent.empty() && absent.size() < total)
      for (auto& n : absent) missing_names.push_back(std::move(n));
  }
  res["configs"] = configs;
  res["missing_units"] = missing;
  res["missing"] = missing_names;
  if (!only_machine.is_null()) {
    res["only_machine"] = only_machine;
    res["measured_elsewhere"] = elsewhere;
  }
  res["machines"] = cpus.size();  // distinct CPUs: speeds and joules of different ones do not compare
  res["hosts"] = hosts.size();
  res["measured_on"] = json::array();
  for (auto& [k, v] : machines) res["measured_on"].push_back(std::move(v));
  // Sensitivities, when complete.
  try {
    const Sens s = read_sensitivities(o, c);
    json lin = json::array(), lay = json::array();
    const double base = s.base.at("kl_mean").get<double>();
    for (const auto& [id, j] : s.by_id) {
      if (id == "base-fp16") continue;
      const minigpt::QuantPlan& p = minigpt::QuantPlan::from_json(j.at("plan"));
      const minigpt::PlanRule& r = p.rules.at(0);
      json e = {{"layer", r.layers.at(0)}, {"recipe", r.recipe.name()}, {"kl_mean", j["kl_mean"]}, {"kl_low", j["kl_low"]},
                {"kl_high", j["kl_high"]}, {"dkl", j["kl_mean"].get<double>() - base}, {"bytes_linear", j["bytes_linear"]}};
      if (r.kind) {
        e["kind"] = minigpt::linear_kind_name(*r.kind);
        lin.push_back(e);
      } else {
        lay.push_back(e);
      }
    }
    res["sensitivity"] = {{"base_fp16", {{"kl_mean", base}, {"kl_low", s.base["kl_low"]}, {"kl_high", s.base["kl_high"]}, {"tokens", s.base["tokens"]}}},
                          {"linears", lin}, {"layers", lay}, {"tokens", o.sensitivity_tokens}};
  } catch (const mq::Error& e) {
    res["sensitivity"] = {{"error", e.what()}};
  }
  std::error_code ec;
  if (fs::exists(o.out + "/allocation.json", ec)) res["allocation"] = read_json(o.out + "/allocation.json");
  if (energy) {
    const std::optional<mq::energy::Coefficients> coeffs = energy_coefficients(o);
    res["answers"] = mixed_answers(res["configs"], *energy, coeffs ? &*coeffs : nullptr, res["sensitivity"], c.n_layer);
  }
  res["options"] = {{"rounds", o.rounds}, {"gens", o.gens}, {"ppl_tokens", o.ppl_tokens}, {"max_slots", o.max_slots},
                    {"sensitivity_tokens", o.sensitivity_tokens}, {"calibration_windows", o.calibration},
                    {"prompt_tokens", o.prompt_tokens}, {"gen_tokens", o.gen_tokens}, {"meter", o.meter},
                    {"sensitivity_recipes", o.sensitivity_recipes}};
  return res;
}

}  // namespace mqexp
