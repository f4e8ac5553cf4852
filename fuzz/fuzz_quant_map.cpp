// libFuzzer target: quant maps (the per-layer / per-tensor quantization plan a user writes, and the
// plan a quantized checkpoint records) from arbitrary text: mq::parse_json_checked ->
// minigpt::QuantPlan::from_json -> validate against the shipped model's shape (data/minigpt.json,
// built here so no file is read). A plan that validates must survive its own JSON form unchanged.
// Any exception other than mq::Error, any crash, leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "minigpt/config.h"
#include "minigpt/quant_plan.h"

namespace {

// data/minigpt.json
const minigpt::ModelConfig kShipped{.vocab_size = 1963, .n_ctx = 128, .d_model = 256, .n_layer = 4, .n_head = 4, .d_ff = 1024};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  minigpt::QuantPlan plan;
  try {
    const nlohmann::json j = mq::parse_json_checked(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    plan = minigpt::QuantPlan::from_json(j, "quant map");
    plan.validate(kShipped);
  } catch (const mq::Error&) {
    return 0;
  }
  // Every Linear gets a recipe; the plan's JSON form reads back to the same plan.
  for (int l = 0; l < kShipped.n_layer; ++l)
    for (int k = 0; k < minigpt::kLinearKinds; ++k) (void)plan.recipe_for(l, static_cast<minigpt::LinearKind>(k));
  const nlohmann::json out = plan.to_json();
  const minigpt::QuantPlan back = minigpt::QuantPlan::from_json(out, "round trip");
  if (back.to_json() != out) __builtin_trap();
  back.validate(kShipped);
  return 0;
}
