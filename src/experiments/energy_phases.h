// One measured inference run, tagged by phase at its boundaries: prefill (the prompt), decode
// (each generated token's forward) and post (greedy sampling, detokenizing, bookkeeping). The
// meter is read at every boundary; nothing inside touches the disk or the terminal.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/energy_work.h"
#include "miniquant/energy/meter.h"
#include "minigpt/model.h"
#include "minigpt/tokenizer.h"

namespace mqexp {

inline const std::vector<std::string> kPhases = {"prefill", "decode", "post"};

struct PhaseStats {
  double joules = 0, seconds = 0;
  double tokens = 0;                  // tokens this phase is charged per (prompt tokens for prefill)
  std::map<std::string, double> zones;
  mq::energy::Work work;              // what the model is told (recorded whatever the meter)
  void add(const mq::energy::Interval& iv, const mq::energy::Work& w);
  double joules_per_token() const { return tokens > 0 ? joules / tokens : 0; }
  double watts() const { return seconds > 0 ? joules / seconds : 0; }
  double tokens_per_s() const { return seconds > 0 ? tokens / seconds : 0; }
};

struct RunResult {
  PhaseStats prefill, decode, post;
  PhaseStats total;                 // first reading to last; tokens = generated tokens
  std::vector<int32_t> generated;   // greedy ids
  std::string text;                 // detokenized (kept out of the files, its length is recorded)
  const PhaseStats& phase(const std::string& name) const;
};

// Greedy generation of `gen` tokens (>= 2): the first from the prefill's logits, then gen - 1
// decode steps, each followed by sampling. prompt.size() + gen - 1 must fit n_ctx.
RunResult run_generation(minigpt::Model& m, mq::energy::Meter& meter, const std::vector<int32_t>& prompt, int gen,
                         const minigpt::Tokenizer* tok, const WorkContext& w);

// `steps` decode steps of B sequences through minigpt::decode_batch; their caches are prefilled
// with their prompts beforehand (not measured) and rewound to `prompt_len` before each run.
struct BatchRun {
  PhaseStats decode, post, total;  // tokens = B x steps
};
class BatchDecoder {
 public:
  // Prefills `prompts` (B of them, each `prompt_len` tokens) into caches with room for the steps.
  BatchDecoder(const minigpt::Model& m, const std::vector<std::vector<int32_t>>& prompts, int steps);
  BatchRun run(mq::energy::Meter& meter, const WorkContext& w);
  int batch() const { return static_cast<int>(caches_.size()); }

 private:
  const minigpt::Model& m_;
  std::vector<minigpt::KVCache> caches_;
  std::vector<int32_t> first_;  // the greedy token after each prompt
  int prompt_len_ = 0, steps_ = 0;
};

nlohmann::json phase_json(const PhaseStats& p);
nlohmann::json work_json(const mq::energy::Work& w);

// Index of the largest of n logits (the first when tied).
int32_t argmax(const float* logits, int n);

}  // namespace mqexp
