// libFuzzer target: experiments/01-roofline/ceilings.json as `miniquant sweep --ceilings` and
// `miniquant roofline` (the previous run) read it: mq::parse_json_checked -> mqexp::check_ceilings ->
// the roofline bound of a decode step for every thread count and datatype, the level of a working set,
// and the comparison with itself (as with a previous run) and its warning. A file that passes the shape
// check must not reach an access the check did not cover. Any exception other than mq::Error, any
// crash, leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "experiments/ceilings.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json c = mq::parse_json_checked(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    mqexp::check_ceilings(c, "fuzz");
    mq::interpret_json("fuzz", [&] {
      for (int threads : {1, 2, 7})
        for (double bytes : {1e3, 3e6, 1e12}) {
          (void)mqexp::level_for(c, bytes, threads);
          for (const char* dt : {"fp32", "int8", "bf16"}) {
            try {
              (void)mqexp::roofline_bound(c, 0.5, bytes, threads, dt);
            } catch (const mq::Error&) {  // no peak or bandwidth for this case: a message, not a bound
            }
          }
        }
      (void)mqexp::ceilings_warning(mqexp::compare_ceilings(c, c));
    });
  } catch (const mq::Error&) {
  }
  return 0;
}
