// Answers checked against the energy model's coefficients. On our VMs every joule is the labelled model's
// (static watts x seconds + bytes per memory level + operations), and its coefficients are published
// figures for another process and one assumption (the static power). Every measurement keeps its seconds
// and its work (bytes by level, operations), so each statement a report makes can be re-priced with other
// coefficients without measuring again: a statement is **robust** when it holds at every corner of a box of
// plausible coefficients (static watts x0.5..x2, each per-byte and per-operation figure x0.25..x4),
// otherwise the report names the corner that breaks it. With a real meter (RAPL, perf) the joules are
// measured, there is nothing to vary, and the check says so.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/energy_phases.h"
#include "miniquant/energy/model.h"

namespace mqexp {

// How a phase's joules are counted: as recorded (the meter's reading, or the model's at the run's own
// coefficients), or re-priced by the model with `coefficients` from the phase's seconds and work.
struct Pricing {
  const mq::energy::Coefficients* coefficients = nullptr;  // null: as recorded
  std::string corner;                                      // "" for as recorded; else the multipliers
  double joules(const PhaseStats& p) const;
  double joules_per_token(const PhaseStats& p) const;
};

// The coefficient box: static watts x {0.5, 2}, every other coefficient x {0.25, 4}; one Pricing per
// corner (2^7 = 128), each with its multipliers spelled out ("static x0.5, fp32 flop x4, ..., DRAM x0.25").
struct CoefficientBox {
  double static_low = 0.5, static_high = 2.0, other_low = 0.25, other_high = 4.0;
  std::vector<mq::energy::Coefficients> corners;  // filled by make_box
  std::vector<std::string> names;
  nlohmann::json to_json() const;
};
CoefficientBox make_box(const mq::energy::Coefficients& nominal);

// A statement a report makes, and how to check it under a pricing.
struct Verdict {
  bool holds = false;
  std::string value;  // the number behind it under that pricing, for the report ("0.61 [0.60, 0.62]")
};
struct Statement {
  std::string id;    // stable key ("minigpt/int4-g64/saves")
  std::string text;  // "int4-g64 uses less energy per token than float32 (total, MiniGPT)"
  std::function<Verdict(const Pricing&)> check;
};
struct StatementResult {
  std::string id, text;
  bool holds = false;      // as recorded
  std::string value;       // as recorded
  bool robust = false;     // holds at every corner (false when it does not hold as recorded)
  bool measured = false;   // joules from a real meter: no corners to try
  std::string breaking_corner, breaking_value;  // the first corner where it fails
  int corners_held = 0, corners = 0;
  nlohmann::json to_json() const;
  std::string mark() const;  // "robust", "not robust (breaks at: ...)", "measured", "does not hold"
};
// Checks `s` as recorded, then (model joules only) at every corner of `box`.
StatementResult check_statement(const Statement& s, const CoefficientBox* box);

}  // namespace mqexp
