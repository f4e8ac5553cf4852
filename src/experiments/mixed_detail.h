// What the mixed study's files share inside src/experiments: where unit files live, how a finished one is
// found (in out/runs or another shard's runs folder), how a missing one is named, the plans every unit
// starts from, and the sensitivity units read back. Not an interface for anything outside mixed*.cpp.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/mixed.h"
#include "minigpt/quant_plan.h"

namespace mqexp::mixed_detail {

using json = nlohmann::json;

std::string runs_dir(const std::string& out);
std::string unit_file(const std::string& dir, const MixedUnit& u);
// The study's GPTQ settings on a plan.
minigpt::QuantPlan study_plan(minigpt::QuantPlan p, const MixedOptions& o);
// fp16 everywhere: the base every sensitivity unit changes one Linear (or layer) of.
minigpt::QuantPlan all_fp16(const std::string& id);
// The CPU part of a unit's machine field: units whose CPUs match ran on the same hardware, whatever the host.
json cpu_of(json machine);
// A unit's file when it is there, complete and made for the same plan and options.
std::optional<json> finished(const std::string& path, const std::string& key);
std::vector<std::string> all_runs_dirs(const MixedOptions& o);
// The unit's up-to-date file from out/runs or any extra runs folder.
std::optional<json> find_unit(const MixedOptions& o, const MixedUnit& u, const std::string& key);
// How the merge names a unit it lacks: kind/id, and "(failed)" when a runs folder holds its failed attempt.
std::string missing_name(const MixedOptions& o, const MixedUnit& u, const std::string& key);

struct Sens {
  json base;
  std::map<std::string, json> by_id;
};
// Every sensitivity unit of a model of shape `c`; mq::Error naming how many are missing.
Sens read_sensitivities(const MixedOptions& o, const minigpt::ModelConfig& c);

}  // namespace mqexp::mixed_detail
