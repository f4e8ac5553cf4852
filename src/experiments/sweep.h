// experiments/26-quant-curve: the scheme sweep. Each scheme quantizes every Linear of the shipped
// MiniGPT (embedding fp16, LayerNorms fp32), is evaluated on the same test split and timed; the
// results are one JSON document the plots and the README are drawn from.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mqexp {

// The seven schemes of the curve, named as the format table prints them ("-gptq": GPTQ on top).
const std::vector<std::string>& default_sweep_schemes();

struct SweepOptions {
  std::string model;                // fp32 checkpoint
  std::string lexicon;
  uint64_t seed = 42;
  std::vector<std::string> schemes;  // validated before anything runs
  int calibration = 128;            // GPTQ calibration windows (val split, n_ctx tokens each)
  int64_t max_slots = 0;            // verb-tense slots (0: all)
  int64_t ppl_tokens = 0;           // perplexity over the test split's first tokens only (0: all)
  int speed_reps = 7;               // interleaved timing rounds of decode / prefill
  bool gpt2_shaped = true;          // also time the GPT-2-small-shaped body at fp32, int8, int4
  nlohmann::json ceilings;          // 01-roofline's ceilings.json (for the roofline bound of each dot)
};

// Progress: (done, total, caption) before each stage.
using SweepProgress = std::function<void(int, int, const std::string&)>;

struct SweepRun {
  nlohmann::json results;      // {"schemes": [...], "gpt2_small_shaped": {...}, ...}
  std::string corpus_sha256;   // of the generated corpus text (every split), for the manifest
  std::string vocab_hash;      // of the tokenizer built from it
};

// Runs every scheme; a scheme that fails is recorded with its error and the others go on.
// Throws mq::UsageError for names the format table does not know.
SweepRun run_sweep(const SweepOptions& o, const SweepProgress& progress);

// Marks "on_pareto_frontier" on every scheme from (bytes, ppl); failed ones are never on it.
void mark_pareto(nlohmann::json& results);

}  // namespace mqexp
