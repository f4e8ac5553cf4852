// libFuzzer target: a finished unit file of the mixed study (runs/<kind>/<id>.json) as `miniquant mixed`'s
// merge reads it from a runs/ folder the user names (--runs): mq::parse_json_checked -> mqexp::check_mixed_unit,
// then every field the merge, the answers and the report read of a unit that passed. A unit that passes
// the check must not reach a key or type it missed. Any exception other than mq::Error, any crash, leak
// or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "experiments/mixed.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json j = mq::parse_json_checked(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    mqexp::check_mixed_unit(j, "fuzz");
    // What the merge reads (mixed_merge.cpp): const access, so an absent key asserts (the preset keeps asserts).
    const nlohmann::json& u = j;
    (void)u["machine"].value("host", std::string());
    (void)u.value("threads", 0);
    (void)(u["date"].get<std::string>() < std::string("2026"));
    (void)u["seconds"].get<double>();
    if (u["kind"] == "sensitivity") {
      (void)(u["kl_mean"].get<double>() - u["kl_low"].get<double>() + u["kl_high"].get<double>());
      (void)u["bytes_linear"].get<int64_t>();
    } else {
      const nlohmann::json& row = u["row"];
      (void)(u["accuracy"]["accuracy"].get<double>() + u["accuracy"]["ci95"][1].get<double>());
      (void)u["accuracy"]["items"].get<int64_t>();
      (void)row["ppl"].get<double>();
      (void)row["bytes"].get<double>();
      (void)row["divergence"]["kl"]["mean"].get<double>();
      const nlohmann::json& ci = row["divergence"]["delta_ppl"]["ci95"];
      (void)(ci[0].get<double>() + ci[1].get<double>());
    }
  } catch (const mq::Error&) {
  }
  return 0;
}
