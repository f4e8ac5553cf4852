// Shared loaders for the subcommands.
#include "experiments/workspace.h"
#include "miniquant/util/timer.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <filesystem>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "minigpt/calibrate.h"
#include "minigpt/quantized_checkpoint.h"

namespace mqexp {

CorpusBundle load_corpus(const std::string& lexicon_dir, uint64_t seed) {
  if (!std::filesystem::is_directory(lexicon_dir))
    throw mq::UsageError(fmt::format("lexicon '{}' is not a directory; point --lexicon at data/lexicon", lexicon_dir));
  auto lex = minigpt::Lexicon::load(lexicon_dir);
  minigpt::CorpusConfig cfg;
  cfg.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  minigpt::Corpus corpus = minigpt::generate_corpus(lex, cfg);
  minigpt::BenchmarkConfig bcfg;
  bcfg.seed = seed;
  std::vector<minigpt::BenchmarkItem> bench = minigpt::generate_benchmark(lex, bcfg);
  const double secs = mq::seconds_since(t0);
  minigpt::Tokenizer tok = minigpt::Tokenizer::build(corpus.train);
  return {std::move(corpus), std::move(tok), std::move(lex), std::move(bench), secs};
}

std::string hash_hex(uint64_t h) { return fmt::format("{:016x}", h); }

void check_vocab_hash(const minigpt::Tokenizer& tok, const minigpt::CheckpointMeta& meta, const std::string& path) {
  if (meta.vocab_hash != hash_hex(tok.hash()))
    throw mq::Error(fmt::format("checkpoint '{}': its vocabulary hash {} is not the hash {} of the vocabulary it stores; the file is "
                                "corrupt, re-train or re-save it",
                                path, mq::clip_text(meta.vocab_hash, 20), hash_hex(tok.hash())));
}

LoadedModel load_checkpoint(const std::string& path, const minigpt::Tokenizer* expected) {
  minigpt::CheckpointMeta meta;
  const std::string want = expected ? hash_hex(expected->hash()) : "";
  minigpt::QuantPlan plan;
  minigpt::Model model = minigpt::load_any_model(path, want, &meta, &plan);
  if (meta.vocab_json.empty())
    throw mq::Error(fmt::format("checkpoint '{}' carries no vocabulary; re-train it with `miniquant train`", path));
  minigpt::Tokenizer tok = minigpt::Tokenizer::from_json(meta.vocab_json);
  check_vocab_hash(tok, meta, path);
  if (tok.size() != model.config().vocab_size)
    throw mq::Error(fmt::format("checkpoint '{}': its vocabulary has {} tokens but the model expects {}; the file is "
                                "inconsistent, re-train it",
                                path, tok.size(), model.config().vocab_size));
  return {std::move(model), std::move(tok), std::move(meta), std::move(plan)};
}

std::vector<std::vector<int32_t>> calibration_for(const minigpt::QuantPlan& plan, const CorpusBundle& c, int n_ctx, int draw) {
  if (!plan.needs_calibration()) return {};
  if (draw < 0 || draw > std::numeric_limits<int>::max() / std::max(1, plan.gptq.calibration_windows))
    throw mq::UsageError(fmt::format("calibration draw {} is out of range", draw));
  return minigpt::calibration_windows(minigpt::encode_split(c.tok, c.corpus.val), plan.gptq.calibration_windows, n_ctx,
                                      draw * plan.gptq.calibration_windows);
}

}  // namespace mqexp
