#include "experiments/energy_robust.h"

#include <fmt/core.h>

namespace mqexp {

double Pricing::joules(const PhaseStats& p) const {
  if (!coefficients) return p.joules;
  return mq::energy::model_energy(*coefficients, p.seconds, p.work).total();
}

double Pricing::joules_per_token(const PhaseStats& p) const { return p.tokens > 0 ? joules(p) / p.tokens : 0.0; }

CoefficientBox make_box(const mq::energy::Coefficients& nominal) {
  CoefficientBox b;
  // Bit k of the corner index: the low (0) or high (1) end of coefficient k, in this order.
  const char* names[7] = {"static", "fp32 flop", "int8 op", "L1", "L2", "L3", "DRAM"};
  for (int corner = 0; corner < 128; ++corner) {
    mq::energy::Coefficients c = nominal;
    std::string name;
    for (int k = 0; k < 7; ++k) {
      const bool high = (corner >> k) & 1;
      const double f = k == 0 ? (high ? b.static_high : b.static_low) : (high ? b.other_high : b.other_low);
      double* v = k == 0 ? &c.static_watts : k == 1 ? &c.joules_per_flop_fp32 : k == 2 ? &c.joules_per_op_int8 : &c.joules_per_byte[k - 3];
      *v *= f;
      name += fmt::format("{}{} x{:g}", k ? ", " : "", names[k], f);
    }
    b.corners.push_back(c);
    b.names.push_back(name);
  }
  return b;
}

nlohmann::json CoefficientBox::to_json() const {
  return {{"static_watts", {static_low, static_high}},
          {"per_byte_and_per_operation", {other_low, other_high}},
          {"corners", corners.size()},
          {"note", "every coefficient of data/energy_model.json multiplied by either end of its range; a statement is "
                   "robust when it holds at all corners"}};
}

StatementResult check_statement(const Statement& s, const CoefficientBox* box) {
  StatementResult r;
  r.id = s.id;
  r.text = s.text;
  const Verdict v = s.check(Pricing{});
  r.holds = v.holds;
  r.value = v.value;
  if (!box) {
    r.measured = true;
    return r;
  }
  r.corners = static_cast<int>(box->corners.size());
  for (size_t i = 0; i < box->corners.size(); ++i) {
    const Verdict c = s.check(Pricing{&box->corners[i], box->names[i]});
    if (c.holds) {
      ++r.corners_held;
    } else if (r.breaking_corner.empty()) {
      r.breaking_corner = box->names[i];
      r.breaking_value = c.value;
    }
  }
  r.robust = r.holds && r.corners_held == r.corners;
  return r;
}

std::string StatementResult::mark() const {
  if (!holds) return "does not hold";
  if (measured) return "measured (no model coefficients to vary)";
  if (robust) return fmt::format("robust ({} of {} corners)", corners_held, corners);
  return fmt::format("NOT robust: holds at {} of {} corners; breaks at [{}] ({})", corners_held, corners, breaking_corner, breaking_value);
}

nlohmann::json StatementResult::to_json() const {
  nlohmann::json j = {{"id", id}, {"text", text}, {"holds", holds}, {"value", value}, {"robust", robust}, {"measured", measured},
                      {"corners_held", corners_held}, {"corners", corners}, {"mark", mark()}};
  if (!breaking_corner.empty()) j["breaking_corner"] = {{"coefficients", breaking_corner}, {"value", breaking_value}};
  return j;
}

}  // namespace mqexp
