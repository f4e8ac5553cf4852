// experiments/28-energy: energy per token of each quantization method, by inference phase, on the
// shipped MiniGPT and the GPT-2-small-shaped body, with a batch-size curve, accuracy beside it and
// per-trial statistics. Every joule carries its source (a real meter, or the labelled model).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "miniquant/energy/select.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"

namespace mqexp {

// The method names, then format-table schemes: float32, float16, bfloat16, int8
// (weight-only per channel), int8_dynamic (per channel, +a8), int4-g64, int4-g64+a8.
const std::vector<std::string>& default_energy_methods();
// The GPT-2-small-shaped body is ~40x MiniGPT's work per token: fewer methods by default.
const std::vector<std::string>& default_gpt2_energy_methods();
// A method name as the format table / quantize_options_for takes it: float32 -> fp32, float16 ->
// fp16, bfloat16 -> bf16, int8 -> int8-per-channel, int8_dynamic -> int8-per-channel+a8; any other
// name unchanged.
std::string scheme_for_method(const std::string& method);
bool method_is_baseline(const std::string& method);  // its scheme is fp32
// How the configured model's Linears take their activations, as the energy model charges them: "fp32",
// "int8 (dynamic, per token)", "16-bit (dynamic, per token, two int8 halves)", or a mix with counts.
std::string activations_of(const minigpt::Model& m);

struct EnergyOptions {
  std::vector<std::string> methods;       // empty: default_energy_methods()
  // Extra MiniGPT methods after `methods`, each named by its config_id and quantized as its map says
  // (its own GPTQ settings and calibration windows; `calibration` is for the scheme methods).
  std::vector<minigpt::QuantPlan> quant_maps;
  std::vector<std::string> gpt2_methods;  // empty: default_gpt2_energy_methods()
  bool gpt2 = true;                       // also run the GPT-2-small-shaped body
  int trials = 5, warmup = 2;
  int prompt_tokens = 64, gen_tokens = 64;
  std::vector<int> batch = {1, 4, 16, 64};
  int batch_prompt = 16, batch_steps = 16;  // the batch curve's prompt length and decode steps
  std::string meter = "auto";
  mq::energy::MeterRoots roots;             // roots.coefficients: the model's file
  std::string model, lexicon;
  uint64_t seed = 42;
  int64_t ppl_tokens = 8192;  // perplexity over the test split's first tokens
  int64_t max_slots = 300;    // verb-tense slots
  int calibration = 32;       // GPTQ calibration windows
  bool calibrate = false;     // fit the model's coefficients from the real meter's trials
  // Called for each finished trial (or warm-up) with its model, method, kind and index and its JSON.
  std::function<void(const std::string&, const std::string&, const std::string&, int, const nlohmann::json&)> on_trial;
};

// Checks sizes and names that do not need the model (mq::UsageError), among them that no quant map's
// config_id is another method's name.
void validate(const EnergyOptions& o);

using EnergyProgress = std::function<void(const std::string& line)>;

struct EnergyRun {
  nlohmann::json summary;   // {"energy_source", "measured", "warning", "hardware", "models": {...}}
  int failed = 0;           // methods that failed (recorded in the summary)
  int methods = 0;
  nlohmann::json calibration;  // with calibrate: the fitted coefficients file contents
};
EnergyRun run_energy(const EnergyOptions& o, const EnergyProgress& progress);

// The flat fields of one trial: what its CSV row holds, in column order; its JSON holds them too.
std::vector<std::pair<std::string, nlohmann::json>> trial_fields(const nlohmann::json& trial);
std::string trial_csv(const nlohmann::json& trial);  // header line + one row

}  // namespace mqexp
