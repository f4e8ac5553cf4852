#include "experiments/mixed_detail.h"

#include <filesystem>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/json_shape.h"
#include "miniquant/util/path_name.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/safetensors.h"

namespace mqexp::mixed_detail {

namespace fs = std::filesystem;

std::string runs_dir(const std::string& out) { return out + "/runs"; }
// The id (a config_id, or made here) names the file: checked again where it becomes a path.
std::string unit_file(const std::string& dir, const MixedUnit& u) {
  mq::check_path_name(u.kind, "unit kind");
  mq::check_path_name(u.id, "unit id");
  return dir + "/" + u.kind + "/" + u.id + ".json";
}

minigpt::QuantPlan study_plan(minigpt::QuantPlan p, const MixedOptions& o) {
  p.gptq.calibration_windows = o.calibration;
  return p;
}

// fp16 everywhere: the base every sensitivity unit changes one Linear (or layer) of.
minigpt::QuantPlan all_fp16(const std::string& id) {
  minigpt::QuantPlan p = minigpt::QuantPlan::uniform("fp16");
  p.id = id;
  return p;
}

// The CPU part of a unit's machine field: units whose CPUs match ran on the same hardware, whatever the host.
json cpu_of(json machine) {
  machine.erase("host");
  return machine;
}

// A unit's file when it is there, complete and made for the same plan and options. One whose values fail
// check_mixed_unit ends the caller with that line, or, with `skip_invalid`, counts as not there.
std::optional<json> finished(const std::string& path, const std::string& key, bool skip_invalid) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  json j;
  try {
    j = read_json(path);
  } catch (const std::exception&) {
    // A truncated or foreign file (not JSON, or too large) is measured again (writes are atomic, so this is
    // not ours).
    return std::nullopt;
  }
  if (!j.is_object() || j.value("key", json()) != key || j.value("status", json()) != "ok") return std::nullopt;
  // Ours by its key and finished, yet its values are what the merge copies into results.json: a hand-edited
  // one (perplexity "abc", bytes -5) is one line naming the file and the field, not a wrong table.
  if (!skip_invalid) {
    check_mixed_unit(j, path);
    return j;
  }
  try {
    check_mixed_unit(j, path);
  } catch (const mq::Error&) {
    return std::nullopt;  // missing_name says why
  }
  return j;
}

std::vector<std::string> all_runs_dirs(const MixedOptions& o) {
  std::vector<std::string> d = {runs_dir(o.out)};
  for (const auto& e : o.extra_runs) d.push_back(e);
  return d;
}

// The unit's up-to-date file from out/runs or any extra runs folder.
std::optional<json> find_unit(const MixedOptions& o, const MixedUnit& u, const std::string& key) {
  for (const auto& dir : all_runs_dirs(o))
    if (auto j = finished(unit_file(dir, u), key, o.allow_partial)) return j;
  return std::nullopt;
}

// How the merge names a unit it lacks: kind/id, "(failed)" when a runs folder holds its failed attempt, and
// "(invalid: <reason>)" when it holds a finished one whose values check_mixed_unit refuses (--allow-partial).
std::string missing_name(const MixedOptions& o, const MixedUnit& u, const std::string& key) {
  for (const auto& dir : all_runs_dirs(o)) {
    std::error_code ec;
    if (!fs::exists(unit_file(dir, u), ec)) continue;
    json j;
    try {
      j = read_json(unit_file(dir, u));
    } catch (const std::exception&) {
      continue;  // unreadable: plainly missing
    }
    if (!j.is_object() || j.value("key", json()) != key) continue;
    if (j.value("status", json()) == "failed") return u.kind + "/" + u.id + " (failed)";
    if (j.value("status", json()) != "ok") continue;
    try {
      check_mixed_unit(j, unit_file(dir, u));
    } catch (const mq::Error& e) {
      return u.kind + "/" + u.id + " (invalid: " + e.what() + ")";
    }
  }
  return u.kind + "/" + u.id;
}

Sens read_sensitivities(const MixedOptions& o, const minigpt::ModelConfig& c) {
  const std::string sha = minigpt::content_sha256(o.model);
  Sens s;
  int missing = 0;
  for (const MixedUnit& u : sensitivity_units(o, c)) {
    auto j = find_unit(o, u, unit_key(o, u, sha));
    if (!j) {
      ++missing;
      continue;
    }
    if (u.id == "base-fp16") s.base = *j;
    s.by_id[u.id] = *j;
  }
  if (missing > 0)
    throw mq::Error(fmt::format("allocation: {} sensitivity units are not measured yet (run `miniquant mixed run` first, every shard)", missing));
  return s;
}

}  // namespace mqexp::mixed_detail

namespace mqexp {

void check_mixed_unit(const json& unit, const std::string& file) {
  // What the merge, the answers and the report read of a finished unit (mixed_merge.cpp, mixed_answers.cpp,
  // mixed_report.cpp); other keys are kept as they are.
  static const json common = {{"kind", "string"}, {"id", "string"}, {"key", "string"}, {"date", "string"},
                              {"seconds", "number"}, {"threads?", "int"}, {"plan", "object"},
                              {"machine", {{"host?", "string"}, {"cpu_model?", "string"}}}};
  static const json config = {{"accuracy", {{"accuracy", "number"}, {"ci95", json::array({"number"})}, {"items", "int64"}}},
                              {"row", {{"ppl", "number"}, {"bytes", "int64"}, {"bytes_linear?", "int64"}, {"bits_per_weight?", "number"},
                                       {"divergence", {{"kl", {{"mean", "number"}}}, {"delta_ppl", {{"value", "number"}, {"ci95", json::array({"number"})}}}}}}}};
  static const json sensitivity = {{"kl_mean", "number"}, {"kl_low", "number"}, {"kl_high", "number"}, {"top1", "number"},
                                   {"ppl", "number"}, {"dppl", "number"}, {"tokens", "int64"}, {"bytes_linear", "int64"}};
  mq::check_json_shape(unit, common, file);
  const std::string kind = unit.at("kind").get<std::string>();
  if (kind == "sensitivity") {
    mq::check_json_shape(unit, sensitivity, file);
    if (unit.at("bytes_linear").get<int64_t>() < 0 || unit.at("tokens").get<int64_t>() < 0)
      throw mq::Error(fmt::format("{}: /bytes_linear and /tokens must be >= 0", file));
  } else if (kind == "config" || kind == "auto") {
    mq::check_json_shape(unit, config, file);
    const json& row = unit.at("row");
    if (row.at("bytes").get<int64_t>() < 0 || row.value("bytes_linear", int64_t{0}) < 0)
      throw mq::Error(fmt::format("{}: /row/bytes: a size must be >= 0", file));
    const double acc = unit.at("accuracy").at("accuracy").get<double>();
    if (!(acc >= 0 && acc <= 1) || unit.at("accuracy").at("items").get<int64_t>() < 1)
      throw mq::Error(fmt::format("{}: /accuracy: an accuracy in [0, 1] over at least one item", file));
    if (row.at("divergence").at("delta_ppl").at("ci95").size() != 2)
      throw mq::Error(fmt::format("{}: /row/divergence/delta_ppl/ci95: expected two bounds", file));
  } else {
    throw mq::Error(fmt::format("{}: /kind: expected sensitivity, config or auto, found \"{}\"", file, mq::clip_text(kind)));
  }
}

}  // namespace mqexp
