// `--quant-map FILE` for the commands that quantize (quantize, export-gguf): the quant-map JSON of
// src/minigpt/quant_plan.h read with the checked parser, and the choice between it and --scheme.
#pragma once
#include <string>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/quant_plan.h"

namespace mqcli {

inline minigpt::QuantPlan read_quant_map(const std::string& path) {
  return minigpt::read_quant_map(path, "--quant-map " + path);
}

// Exactly one of --scheme / --quant-map; `command` names the subcommand in the message.
inline minigpt::QuantPlan plan_from_options(const std::string& scheme, const std::string& quant_map, const std::string& command) {
  if (!scheme.empty() && !quant_map.empty())
    throw mq::UsageError(fmt::format("{}: give --scheme or --quant-map, not both", command));
  return quant_map.empty() ? minigpt::QuantPlan::uniform(scheme) : read_quant_map(quant_map);
}

// Storage commands store weights; `+a8` / `+a16` / `+bf16` is how miniquant's kernels run them, so it has no meaning here.
inline void require_weight_only(const minigpt::QuantPlan& p, const std::string& command) {
  for (const auto& r : p.recipes())
    if (r.act != mq::ActMode::weight_only)
      throw mq::UsageError(fmt::format("{}: '{}' : '{}' is how miniquant's kernels run the weights, not how they are stored; "
                                       "drop it (miniquant sweep takes it)",
                                       command, r.name(), minigpt::act_suffix(r.act)));
}

}  // namespace mqcli
