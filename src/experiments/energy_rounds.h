// Paired, interleaved measurement. A VM's speed drifts over minutes (one binary, four runs of the old
// method-after-method design gave int4's saving as 37%, 56%, 52% and 65%), so a comparison of two
// configurations measured in separate time windows measures the drift. Here every round runs every task on
// every configuration once, inside one process, each task's configurations back to back in an order drawn at
// random each round from seed 42 (round_order: no configuration always follows the same one). A
// comparison is then a per-round ratio (energy_compare.h): the drift lands on both sides of it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/energy_phases.h"
#include "miniquant/energy/meter.h"
#include "minigpt/model.h"

namespace mqexp {

// One measured piece of work: its phases ("prefill", "decode", "post", "total"; a batch decode has no
// prefill), each with joules, seconds, tokens and the work the energy model charges (re-priceable).
struct Measurement {
  std::map<std::string, PhaseStats> phases;
  std::vector<int32_t> generated;  // greedy ids of a generation (empty for batch runs)
  const PhaseStats& phase(const std::string& name) const;  // mq::Error naming a missing phase
};
Measurement from_run(const RunResult& r);
Measurement from_batch(const BatchRun& r);

// A kind of measured work, run on each of its configurations once per round.
struct RoundTask {
  std::string key;                  // "generation", "batch4", "prompt64", ...
  std::vector<std::string> configs; // the configurations it runs on (names of RoundConfig), in listed order
  // Runs the task on configuration `config` in round `round` (< 0: the warm-up rounds, -1, -2, ...).
  std::function<Measurement(const std::string& config, int round)> run;
};

struct RoundsResult;

struct RoundsOptions {
  int rounds = 10;  // measured rounds (>= 1; an interval needs two, so the callers ask for >= 2 in all)
  int warmup = 1;   // rounds run first and discarded (caches, page faults, the CPU's clock ramp)
  int first = 0;    // index of the first measured round (its order): a resumed study runs round k alone
  // Adaptive rounds: after the `rounds` planned ones, while `enough` says the result cannot answer yet (a
  // control that does not pass, on a machine other processes share), run `step` more, up to `max_rounds` in all.
  // Unset `enough` or max_rounds <= rounds: exactly `rounds`.
  int max_rounds = 0, step = 0;
  std::function<bool(const RoundsResult&)> enough{};
  // Called as each round (warm-up ones too) begins, before anything of it is measured: the energy study
  // relocates every configuration's model here (minigpt::Model::relocate), so that which memory an instance
  // got is drawn again each round instead of biasing every round the same way.
  std::function<void(int round)> before_round{};
};

// results[task][config]: one Measurement per measured round, in round order; order[round][task]: the
// configurations in the order that round ran them.
struct RoundsResult {
  std::map<std::string, std::map<std::string, std::vector<Measurement>>> results;
  std::vector<std::map<std::string, std::vector<std::string>>> order;
  int rounds = 0, warmup = 0;
  int planned = 0;            // rounds asked for; rounds - planned were added because `enough` said no
  bool answered = true;       // false when `enough` still said no at max_rounds
  std::vector<double> load;   // the 1-minute load average as each measured round began (-1: not available)
  double seconds = 0;
  // The values of `metric` ("joules_per_token", "seconds", "tokens_per_s", "watts", "joules") of one phase,
  // one per round. mq::Error when the task, configuration or phase is unknown.
  std::vector<double> series(const std::string& task, const std::string& config, const std::string& phase,
                             const std::string& metric) const;
  const std::vector<Measurement>& of(const std::string& task, const std::string& config) const;
};

// The order round `round` runs `n` configurations in: a permutation drawn from seed 42 and the round. Random,
// not rotated: a rotation keeps every configuration between the same two neighbours in every round, so what
// one leaves behind (caches, the scheduler's view of the threads) always lands on the same next one. Under
// load that carry-over made the 28-energy control 1.047 [1.015, 1.070] in 90 rotated rounds (decode +6.8%).
std::vector<int> round_order(int n, int round);

using RoundsProgress = std::function<void(const std::string& line)>;
// Runs warm-up rounds, then the measured ones, then (adaptive) added ones. mq::UsageError for no rounds, a
// task without configurations, duplicate task keys, or a step < 1 with max_rounds > rounds.
RoundsResult run_rounds(const std::vector<RoundTask>& tasks, const RoundsOptions& o, const RoundsProgress& progress);

// One CSV row per (task, configuration, round, phase): the raw material every joule in a report is
// derived from, with the seconds and the work a re-pricing needs (energy_robust.h). Header first unless `header`
// is false (a file that joins several models' round sets has one header).
std::string rounds_csv(const std::string& model, const RoundsResult& r, bool header = true);

// A measurement as a unit file stores it (phases with tokens, seconds, joules and work) and back; the
// reader checks every field (mq::Error naming what is missing or not a finite number).
nlohmann::json measurement_json(const Measurement& m);
Measurement measurement_from_json(const nlohmann::json& j, const std::string& where);
// Several measurements of one configuration added phase by phase (e.g. a round's generations).
void accumulate(Measurement& into, const Measurement& m);

// A CSV cell: quoted (with doubled quotes) when it holds a comma, a quote or a newline, as a phase split's
// name does ("int4-g64[prefill=+a8,decode=+bf16]").
std::string csv_field(const std::string& cell);

// The value of `metric` for one phase (as RoundsResult::series reads it).
double phase_metric(const PhaseStats& p, const std::string& metric);

}  // namespace mqexp
