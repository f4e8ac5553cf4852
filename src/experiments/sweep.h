// experiments/26-quant-curve: the scheme sweep. Each scheme is a uniform quantization plan (and each
// quant map a mixed one) applied to the shipped MiniGPT by minigpt::quantize_model (embedding fp16,
// LayerNorms fp32), evaluated on the same test split and timed; the typed results become one JSON document the plots and the README read.
// Stages: evaluate (quantize + quality + bytes per scheme), time (interleaved rounds), compare (against
// the baseline, Pareto frontier); the report is sweep_report.h.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/results.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"

namespace mqexp {

// The eighteen core schemes: the seven of the original curve, named as the format table prints them ("-gptq": GPTQ
// on top), then three in other activation modes (+a8, +bf16), then the breaking region (int4 per channel, int3 and
// int2, RTN against GPTQ, int3 GPTQ with act-order, int2 GPTQ on the imatrix search). The accuracy benchmark's
// rank target is stated over these (generalization_report.h).
const std::vector<std::string>& core_sweep_schemes();
// The default schemes: the core ones, then the method comparisons (AWQ against RTN and GPTQ at each width, their
// partners, SmoothQuant against plain +a8).
const std::vector<std::string>& default_sweep_schemes();
// Named scheme sets `--schemes` takes in place of a list: "default" (default_sweep_schemes) and "lab02" (the
// seven schemes of lab 02's table: fp32, fp16, int8-per-tensor, int8-per-channel, int4-g64, int4-g128,
// int4-g64-gptq). Every name that is not a set stays as it is.
std::vector<std::string> expand_scheme_sets(const std::vector<std::string>& names);

// A row named by its plan, before anything is measured: the plan's id, what its recipes store (the scheme's
// name, or "mixed") and how they quantize ("none", "rtn", "gptq" or "mixed").
SchemeRow row_for(const minigpt::QuantPlan& plan);

struct SweepOptions {
  std::string model;                // fp32 checkpoint
  std::string lexicon;
  uint64_t seed = 42;
  std::vector<std::string> schemes;  // validated before anything runs
  // Extra rows after the schemes, each named by its config_id and quantized as its map says (its own
  // GPTQ settings and calibration windows; `calibration` is for the scheme rows).
  std::vector<minigpt::QuantPlan> quant_maps;
  int calibration = 128;            // GPTQ calibration windows (val split, n_ctx tokens each)
  int64_t max_slots = 0;            // verb-tense slots (0: all)
  int64_t max_items = 0;            // generalization benchmark items of the test half (0: all)
  int64_t ppl_tokens = 0;           // perplexity over the test split's first tokens only (0: all)
  int speed_reps = 7;               // interleaved timing rounds of decode / prefill
  bool gpt2_shaped = true;          // also time the GPT-2-small-shaped body
  nlohmann::json ceilings;          // 01-roofline's ceilings.json (for the roofline bound of each dot)
};

// Progress: (done, total, caption) before each stage.
using SweepProgress = std::function<void(int, int, const std::string&)>;

struct SweepRun {
  SweepResults results;
  std::string corpus_sha256;   // of the generated corpus text (every split), for the manifest
  std::string vocab_hash;      // of the tokenizer built from it
};

// The plan of every row, in row order: a uniform plan per scheme name (GPTQ on `calibration` windows),
// then the quant maps. mq::UsageError for an unknown name, no rows, or two rows with one name (the
// results, the report and the figures find rows by name).
std::vector<minigpt::QuantPlan> sweep_plans(const SweepOptions& o);

// Runs every row of sweep_plans(o); a row that fails is recorded with its error and the others go on.
// Throws mq::UsageError as sweep_plans does, before anything runs.
SweepRun run_sweep(const SweepOptions& o, const SweepProgress& progress);

// The GPT-2-small-shaped body: GPT-2-small's Linears (768 wide, 12 layers, 12 heads, 3072 MLP) with
// random weights and MiniGPT's vocabulary (GPT-2's 50257-token tied head alone would be 77 MB of fp16
// and dominate decode); its fp32 Linears (340 MB) fit in no cache. Also timed by vs_llama.h.
minigpt::ModelConfig gpt2_shape(int vocab_size);

// Bytes of a configured model and the traffic of one decode step at `context` cached positions.
Footprint describe(const minigpt::Model& m, int context);

// Decode and prefill speed of configured models in interleaved rounds; fills rows[i].speed for every
// model that is not null. The load average is read before and after; rows measured while the machine
// ran more than its cores' worth of other work are flagged busy.
void time_models(const std::vector<minigpt::Model*>& models, std::vector<SchemeRow>& rows, const SweepOptions& o);

// Ratios against the baseline (the first row that succeeded) and the (bytes, PPL) Pareto frontier.
void compare(SweepResults& r);
// Marks on_pareto_frontier from (bytes, ppl); failed rows are never on it.
void mark_pareto(std::vector<SchemeRow>& rows);

}  // namespace mqexp
