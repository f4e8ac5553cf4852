// experiments/27-mixed-epi: per-layer mixed precision judged by energy per intelligence (EPI = joules per
// token / verb-tense accuracy). The work is cut into units, each written to its own file as soon as it is
// measured, so a run resumes after a crash and can be sharded over machines:
//   config       one quant map (configs/*.json, and the fp32 baseline): quality against fp32 and bytes;
//                its quantized model is cached (out/cache/, not tracked) for the energy rounds
//   sensitivity  one Linear (or one layer) quantized, everything else fp16: the KL divergence it adds
//   auto         a map chosen by the allocation solver (allocate.h) from the measured sensitivities,
//                measured like a config
//   energy round every configuration of a set once, interleaved (mixed_energy.h): speed and joules are
//                paired per round, the fp32 baseline measured twice (the control)
// merge_mixed() reads every unit file and writes the study's results (mixed_report.h draws them).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "miniquant/energy/select.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"

namespace mqexp {

struct MixedOptions {
  std::string model, lexicon;      // fp32 checkpoint, corpus lexicon
  uint64_t seed = 42;
  std::string configs_dir;         // the hand-written quant maps, one per *.json file
  std::string out;                 // the study's folder; units go to out/runs/<kind>/<id>.json
  int rounds = 30;                  // energy rounds (mixed_energy.h; ~2 s each here); quality is deterministic, measured once
  // Adaptive rounds (one shard): while the control does not pass after the planned rounds (its
  // interval must hold 1.00 and lie inside +-3%), `add_rounds` more, up to
  // `max_rounds` in all (0: 3 x rounds), as 28-energy does; a sharded run measures exactly `rounds`.
  int max_rounds = 0, add_rounds = 15;
  int round_bound() const { return max_rounds > 0 ? max_rounds : 3 * rounds; }
  int gens = 2;                    // generations per configuration per round (one measurement: their sum)
  int64_t ppl_tokens = 32768;      // perplexity and KLD over the test split's first tokens (0: all)
  int64_t max_slots = 3000;        // verb-tense slots (0: all); the sweep scores all 7,089
  int64_t max_items = 0;           // generalization benchmark items of the test half (0: all 7,000)
  int64_t sensitivity_tokens = 8192;  // KLD tokens of each sensitivity unit
  int calibration = 128;           // GPTQ calibration windows, for every map of the study
  std::string meter = "auto";
  mq::energy::MeterRoots roots;    // roots.coefficients: the energy model's file
  int prompt_tokens = 64, gen_tokens = 64;  // one generation: prefill of the prompt, then decode
  int shard = 0, shards = 1;       // this process measures the units whose index % shards == shard
  // Sensitivity: every Linear alone in each of these; whole layers in those of them below 8 bits.
  std::vector<std::string> sensitivity_recipes = {"int2-g64-gptq", "int3-g64-gptq", "int4-g64-gptq", "int8-per-channel-gptq"};
  // What the allocation may give a Linear: fp16 (no added KLD) and the sensitivity recipes.
  std::vector<std::string> extra_runs;  // merge: further runs/ folders (other shards' outputs)
  // merge --allow-partial: write the results although units are missing, and count a finished unit whose values
  // fail check_mixed_unit (a hand-edited file) as missing, named with its reason, instead of ending the merge.
  bool allow_partial = false;
};

// Checks options that need no model (mq::UsageError).
void validate(const MixedOptions& o);
// Checks a finished unit file (runs/<kind>/<id>.json, status "ok") against what the merge reads of it:
// mq::Error "<file>: <path>: <what is wrong>" (a hand-edited perplexity "abc", bytes -5, a missing field).
void check_mixed_unit(const nlohmann::json& unit, const std::string& file);

// The hand-written maps of `dir`, by file name; config_ids must be unique and usable as file names.
std::vector<minigpt::QuantPlan> load_mixed_configs(const std::string& dir);

struct MixedUnit {
  std::string kind;  // "config", "sensitivity", "auto"
  std::string id;    // file name without .json
  minigpt::QuantPlan plan;
};

// Every config unit: the fp32 baseline, then the maps of configs_dir.
std::vector<MixedUnit> config_units(const MixedOptions& o);
// Every sensitivity unit for a model of `c`: the all-fp16 base, each Linear x recipe, each layer x recipe
// below 8 bits.
std::vector<MixedUnit> sensitivity_units(const MixedOptions& o, const minigpt::ModelConfig& c);

using MixedProgress = std::function<void(const std::string& line)>;

struct UnitsRun {
  int measured = 0, reused = 0, other_shards = 0, failed = 0;
};
// Measures the units of this shard that have no up-to-date file (same plan and options) in out/runs.
UnitsRun run_mixed_units(const MixedOptions& o, const std::vector<MixedUnit>& units, const MixedProgress& progress);

// The model's shape (for sensitivity_units) without loading the corpus.
minigpt::ModelConfig mixed_model_config(const MixedOptions& o);

// From the complete sensitivity units: the predicted (bytes, KLD) frontier and the auto maps to measure
// (budgets: the bytes of every uniform config; and frontier points spread over its byte range, for the
// EPI search). mq::Error naming how many units are missing when sensitivities are incomplete. Writes
// the maps to out/configs_auto/ and the frontier to out/allocation.json.
std::vector<MixedUnit> allocate_mixed(const MixedOptions& o);

// Joules per token as a linear function of how many Linear weights each recipe stores:
//   J = sum_r joules_per_weight[r] * weights[r]
// fitted by least squares over measured configurations. There is no intercept: every map stores all
// Linear weights, so a constant column would equal the weights' sum; the per-token overhead is spread
// over the prices, which shifts every allocation's total by the same amount. It prices a Linear in each recipe by what the
// measured runs cost (with the labelled energy model on a VM, mostly the kernel's time); an estimate,
// used to give the allocation an energy budget.
struct EnergyFit {
  std::map<std::string, double> joules_per_weight;
  double r2 = 0, max_abs_residual = 0;  // of the fit over its own measurements
  int configs = 0;
  nlohmann::json to_json() const;
};
// weights[i]: recipe name -> weights stored that way in measurement i; joules[i] its J/token. nullopt when
// there are fewer than (recipes + 2) measurements or two recipes cannot be told apart (rank-deficient).
std::optional<EnergyFit> fit_energy_per_weight(const std::vector<std::map<std::string, double>>& weights,
                                               const std::vector<double>& joules);

// Reads every unit file (out/runs and extra_runs), derives EPI, frontiers, perplexity-matched pairs and
// the sensitivity table, and returns the study's results.json. "missing" names (kind/id) every unit the
// study lacks: configurations, allocated maps of out/configs_auto, and sensitivities when some but not all
// are there; "measured_on" lists each machine (host and CPU) with its units, "machines" counts distinct
// CPUs and "hosts" distinct hosts. With `only_machine` (one measured_on entry's "machine") only the
// configurations measured there are kept (the per-machine report); "measured_elsewhere" counts the rest.
nlohmann::json merge_mixed(const MixedOptions& o, const nlohmann::json& only_machine = nullptr);

// The key a unit file must carry to be reused: a hash of its plan and of every option that changes
// what it measures. `checkpoint_sha256` is minigpt::content_sha256 of the checkpoint: its content, not
// the checksums it records, so adding checksums to a checkpoint keeps its units' keys.
std::string unit_key(const MixedOptions& o, const MixedUnit& u, const std::string& checkpoint_sha256);

// What a unit file's machine field says: enough to tell two machines apart when shards are merged.
nlohmann::json machine_brief();

// The units the study measures energy for: the baseline, the hand-written maps, and (with_auto) the allocated
// maps of configs_auto/ that exist.
std::vector<MixedUnit> energy_units(const MixedOptions& o, bool with_auto);

}  // namespace mqexp
