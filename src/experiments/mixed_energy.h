// The mixed-precision study's energy, measured as 28-energy measures it: paired, interleaved rounds
// (energy_rounds.h) inside one process, every configuration of a set once per round, the fp32 baseline
// twice (the control). Identical weights measured in separate time windows differed by up to 1.56x in the
// study's previous design; in a round they share the machine's state, so their per-round ratio cancels it.
//
// A set is a list of configuration units ("configs": the baseline and the hand-written maps; "all": those and
// the allocated maps). Each round is a unit file, runs/energy/<set>/round-<k>.json, keyed by the set's
// members and the options that change what a round measures: a killed run loses at most the round in
// progress, and `--shard i/n` measures the rounds k with k % n == i (each shard runs every configuration
// of the set, so each round stays paired on whatever machine ran it).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/energy_rounds.h"
#include "experiments/mixed.h"
#include "miniquant/energy/trial_stats.h"

namespace mqexp {

// The name the control (the baseline's second copy) has in a set's rounds.
inline const std::string kMixedControl = "fp32 (control)";
// The baseline's id (the first unit of every set).
inline const std::string kMixedBase = "fp32";

struct EnergySetRun {
  int measured = 0, reused = 0, other_shards = 0;
  int added = 0;          // rounds beyond --rounds, measured because the control did not pass (control_passes)
  bool answered = true;   // false when the control still failed at the bound (one shard only)
};
// Measures the rounds of `set` this shard owns that have no up-to-date file. `units`: the set's configuration
// units (the baseline "fp32" first). Models come from the quality units' cache (out/cache/) when there, else
// are quantized again (deterministic: the same codes).
EnergySetRun run_mixed_energy(const MixedOptions& o, const std::vector<MixedUnit>& units, const std::string& set,
                              const MixedProgress& progress);

// The control's paired ratio (its second fp32 copy over fp32, J/token, the robust per-round median), and how many
// rounds to add after `have` of them: none when it passes (control_passes) or `bound` is reached, else
// min(step, bound - have). The adaptive loop of run_mixed_energy; tests/test_mixed.cpp drives it on synthetic rounds.
mq::energy::Ratio mixed_control_ratio(const RoundsResult& rounds);
int mixed_rounds_to_add(const mq::energy::Ratio& control, int have, int bound, int step);

// A set's measured rounds, from every runs folder: the planned ones found and the added ones that follow them
// without a gap (in round order), each configuration's measurements, and the machines that ran them. nullopt when no round of the set is measured.
struct EnergySetData {
  std::vector<std::string> configs;  // the baseline, the control, then the units in order
  RoundsResult rounds;               // task "generation"
  std::vector<int> round_indices;
  nlohmann::json machines;           // one entry per machine: cpu, threads, rounds
  int expected_rounds = 0;
  bool measured = false;             // joules from a real meter (else the model's, re-priceable)
  std::string energy_source;
};
std::optional<EnergySetData> read_mixed_energy(const MixedOptions& o, const std::vector<MixedUnit>& units, const std::string& set);

// The key a round file must carry: a hash of the set's members (their unit keys) and the energy options.
std::string energy_set_key(const MixedOptions& o, const std::vector<MixedUnit>& units, const std::string& checkpoint_sha256);

// Where the quality stage keeps a configuration's quantized model for the energy rounds (not tracked).
std::string cached_model_path(const MixedOptions& o, const MixedUnit& u, const std::string& key);

}  // namespace mqexp
