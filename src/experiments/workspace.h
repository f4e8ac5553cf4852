// What several subcommands load the same way: the corpus with its tokenizer, and a checkpoint
// together with the vocabulary it was trained on.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "minigpt/checkpoint.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/corpus/generalization.h"
#include "minigpt/model.h"
#include "minigpt/quant_plan.h"
#include "minigpt/tokenizer.h"

namespace mqexp {

inline const std::string kDefaultLexicon = MQ_SOURCE_DIR "/data/lexicon";
inline const std::string kDefaultModel = MQ_SOURCE_DIR "/data/minigpt.safetensors";

struct CorpusBundle {
  minigpt::Corpus corpus;
  minigpt::Tokenizer tok;  // built from corpus.train
  minigpt::Lexicon lex;    // what the corpus was generated from (the rule baselines read it)
  // The generalization benchmark from the same lexicon and seed, both halves (corpus/generalization.h).
  std::vector<minigpt::BenchmarkItem> benchmark;
  double seconds = 0.0;    // generation time (corpus and benchmark)
};
// Regenerates the corpus and the benchmark from `seed` (errors: UsageError when the lexicon folder is missing).
CorpusBundle load_corpus(const std::string& lexicon_dir, uint64_t seed);

std::string hash_hex(uint64_t h);

struct LoadedModel {
  minigpt::Model model;
  minigpt::Tokenizer tok;  // the vocabulary stored in the checkpoint
  minigpt::CheckpointMeta meta;
  minigpt::QuantPlan plan;  // the plan a quantized checkpoint records (the identity plan for fp32)
};
// The hash a checkpoint records for its vocabulary must be that vocabulary's: every command checks
// it (generate, export-gguf too), and with a corpus the loader also compares it with the corpus's.
// mq::Error otherwise.
void check_vocab_hash(const minigpt::Tokenizer& tok, const minigpt::CheckpointMeta& meta, const std::string& path);

// Loads a checkpoint and its vocabulary (its hash checked by check_vocab_hash). With `expected` set, the checkpoint's vocabulary must be
// the corpus's (same hash), or an mq::Error says what differs and what to do.
LoadedModel load_checkpoint(const std::string& path, const minigpt::Tokenizer* expected = nullptr);

// The GPTQ calibration windows `plan` asks for: its gptq.calibration_windows windows of `n_ctx` tokens
// from the start of the val split (held out from training and from the test split), or none when no
// Linear of it uses GPTQ. Every command that quantizes a model (quantize, eval --quant-map, sweep,
// energy) takes them here, so one plan calibrates on the same tokens whichever command runs it.
// `draw` > 0 takes the same number of windows, draw x that many further into the val split: draws are disjoint
// from each other (calibration_draws.h measures how much a calibrated scheme depends on which it is).
std::vector<std::vector<int32_t>> calibration_for(const minigpt::QuantPlan& plan, const CorpusBundle& c, int n_ctx, int draw = 0);

}  // namespace mqexp
