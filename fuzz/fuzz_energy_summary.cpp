// libFuzzer target: experiments/28-energy/summary.json as `miniquant energy --report-only` reads it:
// mq::parse_json_checked -> mqexp::check_energy_summary (the shape the report needs) -> report.txt's
// text and the README block, inside mq::interpret_json as the command runs them. A summary that passes
// the shape check must never reach a missing key or a wrong type the check did not name (the fuzz
// preset builds with assertions on, so nlohmann's operator[] on an absent key traps instead of reading
// past the end). Any exception other than mq::Error, any crash, leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "experiments/energy_report.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json s = mq::parse_json_checked(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    mqexp::check_energy_summary(s, "fuzz");
    mq::interpret_json("fuzz", [&] {
      (void)mqexp::energy_report_text(s);
      (void)mqexp::energy_readme_block(s);
    });
  } catch (const mq::Error&) {
  }
  return 0;
}
