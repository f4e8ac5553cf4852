// libFuzzer target: the energy model's coefficients file (--coefficients, data/energy_model.json) from
// arbitrary text: mq::parse_json_checked -> mq::energy::coefficients_from_json, the in-memory half of
// load_coefficients. What loads must be usable: every coefficient finite and >= 0, the model's
// energy of some work finite, and the file's JSON form (coefficients_json) loading back to the same
// values. Any exception other than mq::Error, any crash, leak or undefined behaviour is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "miniquant/energy/model.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mq::energy::Coefficients c;
  try {
    c = mq::energy::coefficients_from_json(mq::parse_json_checked(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz"),
                                           "fuzz");
  } catch (const mq::Error&) {
    return 0;
  }
  const double all[] = {c.static_watts, c.joules_per_flop_fp32, c.joules_per_op_int8, c.joules_per_byte[0], c.joules_per_byte[1],
                        c.joules_per_byte[2], c.joules_per_byte[3]};
  for (double v : all)
    if (!std::isfinite(v) || v < 0) __builtin_trap();
  mq::energy::Work w;
  w.flops_fp32 = 1e6;
  w.ops_int8 = 1e6;
  for (double& b : w.bytes) b = 1e6;
  const double e = mq::energy::model_energy(c, 1e-3, w).total();
  if (std::isnan(e) || e < 0) __builtin_trap();  // +inf is possible: finite coefficients near 1.8e308 times 1e6
  const mq::energy::Coefficients back = mq::energy::coefficients_from_json(mq::energy::coefficients_json(c), "round trip");
  if (back.static_watts != c.static_watts || back.joules_per_byte[3] != c.joules_per_byte[3] || back.calibrated != c.calibrated)
    __builtin_trap();
  return 0;
}
