// experiments/28-energy: energy per token of each quantization method, by inference phase, on the
// shipped MiniGPT and the GPT-2-small-shaped body. Every configuration is measured in the same interleaved
// rounds (energy_rounds.h), so every comparison is a paired ratio with an interval over rounds; the fp32
// baseline is measured twice (the control, whose ratio must contain 1); phase splits (a recipe per inference
// phase) are compared with both uniform modes they mix; the batch curve and the prompt-length curve run in
// the same rounds; and each answer is re-priced over the energy model's coefficient box (energy_robust.h).
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

// The methods, by their format-table scheme names (the source documents' names in brackets): fp32 (float32),
// fp16 (float16), bf16 (bfloat16), int8-per-channel (int8), int8-per-channel+a8 (int8_dynamic), int4-g64,
// int4-g64+a8, int4-g64+bf16.
const std::vector<std::string>& default_energy_methods();
// The GPT-2-small-shaped body is ~40x MiniGPT's work per token: fewer methods by default.
const std::vector<std::string>& default_gpt2_energy_methods();
// Phase splits run by default (each compared with the two uniform modes it mixes).
const std::vector<std::string>& default_phase_splits();
const std::vector<std::string>& default_gpt2_phase_splits();
// Methods of the prompt-length curve.
const std::vector<std::string>& default_curve_methods();
// A method name as the format table / QuantPlan::uniform takes it: the source documents' float32 -> fp32, float16 -> fp16,
// bfloat16 -> bf16, int8 -> int8-per-channel, int8_dynamic -> int8-per-channel+a8; any other name unchanged.
// The study names every configuration by its scheme; the documents' names are accepted as input (use_scheme_names)
// and recorded beside each configuration (its "source_name").
std::string scheme_for_method(const std::string& method);
// The source documents' name of a scheme, where they have one (fp32 -> float32, ...), else "".
std::string method_for_scheme(const std::string& scheme);
bool method_is_baseline(const std::string& method);  // its scheme is fp32
// How the configured model's Linears take their activations, as the energy model charges them: "fp32",
// "int8 (dynamic, per token)", "16-bit (dynamic, per token, two int8 halves)", or a mix with counts. In the
// model's current phase (a phase split runs another mode in each).
std::string activations_of(const minigpt::Model& m);

struct EnergyOptions;
// Rewrites the documents' names in the scheme lists (--schemes, --gpt2-schemes, --curve-schemes) to scheme names
// and returns one note line per name rewritten ("note: --schemes float32: the source documents' name of fp32; use fp32").
std::vector<std::string> use_scheme_names(EnergyOptions& o);

struct EnergyOptions {
  std::vector<std::string> methods;       // empty: default_energy_methods()
  // Extra MiniGPT methods after `methods`, each named by its config_id and quantized as its map says
  // (its own GPTQ settings and calibration windows; `calibration` is for the scheme methods).
  std::vector<minigpt::QuantPlan> quant_maps;
  std::vector<std::string> gpt2_methods;  // empty: default_gpt2_energy_methods()
  std::vector<std::string> splits;        // phase splits on MiniGPT; empty: default_phase_splits(); "none": no splits
  std::vector<std::string> gpt2_splits;   // the same on the GPT-2-small-shaped body
  bool gpt2 = true;                       // also run the GPT-2-small-shaped body
  bool control = true;                    // measure the fp32 baseline twice (the control)
  // Interleaved rounds of the generation task (energy_rounds.h), which every comparison, the control and the
  // ranking read. A round is one generation per configuration (MiniGPT ~0.4 s, the GPT-2-small-shaped body ~4 s):
  // the baseline and its control run at most a round apart, so the VM's drift over seconds lands on both. With
  // the batch curve inside the same rounds a GPT-2 round took ~27 s and the control's interval was +-3.2%.
  int rounds = 30, warmup = 1;
  // Adaptive rounds (energy_rounds.h): while the control's robust interval is not inside +-3% (or does not hold
  // 1), `add_rounds` more, up to `max_rounds` in all (a shared machine's disturbed rounds need more of them to
  // pin a 3% answer). max_rounds 0: 3 x rounds (the bound the quiet duration allows: under one competing
  // process per core a round takes about twice as long); == rounds: exactly `rounds`, as with --no-control.
  int max_rounds = 0, add_rounds = 15;
  int round_bound() const { return max_rounds > 0 ? max_rounds : 3 * rounds; }
  int batch_rounds = 4;                   // the batch curve's own rounds (it answers speed-ups of 2-10x)
  int prompt_tokens = 64, gen_tokens = 64;
  std::vector<int> batch = {1, 4, 16, 64};
  int batch_prompt = 16, batch_steps = 16;  // the batch curve's prompt length and decode steps
  // The prompt-length curve: each length's prefill, then curve_gen decode steps; lengths past a model's
  // context are dropped for it, and its last point is the longest prompt that fits (n_ctx - curve_gen + 1).
  std::vector<int> curve_lengths = {4, 16, 64, 128};
  int curve_gen = 32;
  int curve_rounds = 4;                   // the curve's rounds (it answers a shape, not a 1% difference)
  std::vector<std::string> curve_methods;  // empty: default_curve_methods()
  std::string meter = "auto";
  mq::energy::MeterRoots roots;             // roots.coefficients: the model's file
  std::string model, lexicon;
  uint64_t seed = 42;
  int64_t ppl_tokens = 8192;  // perplexity and next-token accuracy over the test split's first tokens
  int64_t max_slots = 600;    // verb-tense slots
  int64_t max_items = 0;      // generalization benchmark items of the test half (0: all)
  int calibration = 32;       // GPTQ calibration windows
  bool calibrate = false;     // fit the model's coefficients from the real meter's measurements
  bool fp32_check = true;     // time the fp32 kernels against Eigen's GEMM on the models' shapes
};

// Checks sizes and names that do not need the model (mq::UsageError), among them that no quant map's
// config_id is another method's name and that every split names a valid phase split.
void validate(const EnergyOptions& o);

using EnergyProgress = std::function<void(const std::string& line)>;

struct EnergyRun {
  nlohmann::json summary;   // {"energy_source", "measured", "warning", "hardware", "models": {...}, "statements"}
  std::string rounds_csv;   // every measurement of every round (energy_rounds.h rounds_csv), both models
  int failed = 0;           // methods that failed to build (recorded in the summary)
  int methods = 0;
  nlohmann::json calibration;  // with calibrate: the fitted coefficients file contents
};
// `started` (when given) is called once every check that needs the meter, the corpus or the model has passed,
// before the first model is built: a command prints its banner there, so a refused option is the only line.
EnergyRun run_energy(const EnergyOptions& o, const EnergyProgress& progress, const std::function<void()>& started = {});

}  // namespace mqexp
