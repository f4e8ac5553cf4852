// `miniquant corpus`: regenerate the verb corpus from its seed and print what it holds.
#include <chrono>
#include <filesystem>
#include <string>
#include <unordered_set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "vocabulary.h"
#include "miniquant/util/timer.h"
#include "validators.h"
#include "miniquant/error.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/tokenizer.h"

namespace mqcli {

namespace {

struct CorpusOptions {
  std::string lexicon = MQ_SOURCE_DIR "/data/lexicon";
  uint64_t seed = kDefaultSeed;
  bool json = false;
  int sample = 3;
  minigpt::CorpusConfig cfg;
};

nlohmann::json stats_json(const minigpt::SplitStats& s, int vocab) {
  nlohmann::json slots;
  for (int k = 0; k < minigpt::kNumConstructions; ++k)
    slots[minigpt::construction_name(static_cast<minigpt::Construction>(k))] = s.slots[static_cast<size_t>(k)];
  return {{"stories", s.stories},           {"tokens", s.tokens},
          {"types", vocab},                 {"nll_sum_nats", s.nll_sum},
          {"nats_per_token", s.nats_per_token}, {"bits_per_token", s.bits_per_token},
          {"floor_ppl", s.floor_ppl},       {"slots", slots}};
}

// Distinct tokens of one split: shows how much of the train vocabulary val/test use.
int distinct_tokens(const std::vector<minigpt::Story>& split) {
  std::unordered_set<std::string> seen;
  for (const auto& s : split) seen.insert(s.tokens.begin(), s.tokens.end());
  return static_cast<int>(seen.size());
}

void run(const CorpusOptions& o) {
  if (!std::filesystem::is_directory(o.lexicon))
    throw mq::UsageError(fmt::format("--lexicon '{}' is not a directory; point it at data/lexicon", o.lexicon));
  const auto lex = minigpt::Lexicon::load(o.lexicon);
  minigpt::CorpusConfig cfg = o.cfg;
  cfg.seed = o.seed;
  const auto t0 = std::chrono::steady_clock::now();
  const auto corpus = minigpt::generate_corpus(lex, cfg);
  const double secs = mq::seconds_since(t0);
  const auto tok = minigpt::Tokenizer::build(corpus.train);

  const std::pair<const char*, const std::vector<minigpt::Story>*> splits[] = {
      {"train", &corpus.train}, {"val", &corpus.val}, {"test", &corpus.test}};
  std::vector<std::string> samples;
  for (int i = 0; i < o.sample && i < static_cast<int>(corpus.test.size()); ++i)
    samples.push_back(tok.decode(tok.encode(corpus.test[static_cast<size_t>(i)].tokens)));

  if (o.json) {
    nlohmann::json j;
    j["seed"] = cfg.seed;
    j["lexicon"] = {{"verbs", lex.verbs.size()}, {"irregular", lex.irregular_count()}, {"nouns", lex.nouns.size()}};
    j["vocab_size"] = tok.size();
    j["vocab_hash"] = fmt::format("{:016x}", tok.hash());
    j["generation_seconds"] = secs;
    j["redrawn"] = {{"val", corpus.redrawn_val}, {"train", corpus.redrawn_train}};
    for (const auto& [name, split] : splits) j["splits"][name] = stats_json(minigpt::split_stats(*split), distinct_tokens(*split));
    j["samples"] = samples;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("corpus: seed {}, lexicon {} ({} verbs, {} irregular, {} nouns), generated in {:.2f} s\n", cfg.seed,
             o.lexicon, lex.verbs.size(), lex.irregular_count(), lex.nouns.size(), secs);
  fmt::print("vocabulary (train): {} tokens, hash {:016x}; stories redrawn to keep splits disjoint: val {}, train {}\n",
             tok.size(), tok.hash(), corpus.redrawn_val, corpus.redrawn_train);
  std::string head = fmt::format("{:<6} {:>8} {:>10} {:>6} {:>11} {:>10} {:>10} |", "split", "stories", "tokens",
                                 "types", "nats/token", "bits/token", "floor ppl");
  for (int k = 0; k < minigpt::kNumConstructions; ++k)
    head += fmt::format(" {:>15}", minigpt::construction_name(static_cast<minigpt::Construction>(k)));
  fmt::print("{}\n", head);
  for (const auto& [name, split] : splits) {
    const auto s = minigpt::split_stats(*split);
    std::string line = fmt::format("{:<6} {:>8} {:>10} {:>6} {:>11.4f} {:>10.4f} {:>10.3f} |", name, s.stories,
                                   s.tokens, distinct_tokens(*split), s.nats_per_token, s.bits_per_token, s.floor_ppl);
    for (int64_t n : s.slots) line += fmt::format(" {:>15}", n);
    fmt::print("{}\n", line);
  }
  for (size_t i = 0; i < samples.size(); ++i) fmt::print("\ntest story {}:\n{}", i, samples[i]);
}

}  // namespace

void register_corpus(CLI::App& app) {
  auto opts = std::make_shared<CorpusOptions>();
  auto* sub = app.add_subcommand("corpus", "Generate the verb corpus from its seed and print its statistics");
  add_corpus_options(sub, opts->lexicon, opts->seed);
  sub->add_flag("--json", opts->json, "Print JSON instead of a table");
  sub->add_option("--sample", opts->sample, "Number of test stories to print")
      ->capture_default_str()->check(NonNegative);
  sub->add_option("--train-tokens", opts->cfg.train_tokens, "Train split size in tokens")
      ->capture_default_str()->check(NonNegative);
  sub->add_option("--val-tokens", opts->cfg.val_tokens, "Validation split size in tokens")
      ->capture_default_str()->check(NonNegative);
  sub->add_option("--test-tokens", opts->cfg.test_tokens, "Test split size in tokens")
      ->capture_default_str()->check(NonNegative);
  sub->callback([opts] { run(*opts); });
}

}  // namespace mqcli
