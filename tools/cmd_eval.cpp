// `miniquant eval`: test perplexity next to the corpus floor, and verb-tense accuracy.
#include <chrono>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "validators.h"
#include "minigpt/eval.h"
#include "workspace.h"

namespace mqcli {
namespace {

struct EvalOptions {
  std::string model = kDefaultModel;
  std::string lexicon = kDefaultLexicon;
  uint64_t seed = kDefaultSeed;
  int window = 0;  // 0: the model's n_ctx
  int stride = 0;  // 0: window / 2
  int64_t max_slots = 0;
  bool json = false;
};

nlohmann::json score_json(const minigpt::ConstructionScore& s) {
  return {{"correct", s.correct}, {"total", s.total}, {"accuracy", s.accuracy()}};
}

void run(const EvalOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const CorpusBundle c = load_corpus(o.lexicon, o.seed);
  const LoadedModel lm = load_checkpoint(o.model, &c.tok);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const int window = o.window > 0 ? o.window : lm.model.config().n_ctx;
  const int stride = o.stride > 0 ? o.stride : window / 2;
  const minigpt::SplitStats floor = minigpt::split_stats(c.corpus.test);
  const auto ppl = minigpt::perplexity(lm.model, minigpt::encode_split(lm.tok, c.corpus.test), window, stride);
  const auto vt = minigpt::verb_tense_accuracy(lm.model, lm.tok, c.corpus.test, o.max_slots);

  nlohmann::json by_kind;
  for (int k = 0; k < minigpt::kNumConstructions; ++k)
    by_kind[minigpt::construction_name(static_cast<minigpt::Construction>(k))] = score_json(vt.by_kind[k]);
  const nlohmann::json out = {
      {"model", o.model},
      {"seed", o.seed},
      {"ppl", ppl.ppl},
      {"ppl_floor", floor.floor_ppl},
      {"ppl_over_floor", ppl.ppl / floor.floor_ppl},
      {"nats_per_token", ppl.nats_per_token},
      {"floor_nats_per_token", floor.nats_per_token},
      {"test_tokens", ppl.tokens},
      {"window", ppl.window},
      {"stride", ppl.stride},
      {"verb_tense_accuracy", vt.overall.accuracy()},
      {"verb_tense", {{"overall", score_json(vt.overall)}, {"by_construction", by_kind},
                      {"skipped_unknown_form", vt.skipped_unknown}, {"skipped_too_long", vt.skipped_long}}},
      {"timing_s", {{"corpus_and_load", load_s}, {"perplexity", ppl.seconds}, {"verb_tense", vt.seconds}}},
  };
  if (o.json) {
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("model {} (seed {})\n", o.model, o.seed);
  fmt::print("test perplexity {:.3f}  (floor {:.3f}, ratio {:.3f}) over {} tokens, window {}, stride {}  [{:.1f} s]\n",
             ppl.ppl, floor.floor_ppl, ppl.ppl / floor.floor_ppl, ppl.tokens, window, stride, ppl.seconds);
  fmt::print("verb-tense accuracy {:.4f} ({}/{})  [{:.1f} s]\n", vt.overall.accuracy(), vt.overall.correct,
             vt.overall.total, vt.seconds);
  for (int k = 0; k < minigpt::kNumConstructions; ++k)
    fmt::print("  {:<15} {:.4f} ({}/{})\n", minigpt::construction_name(static_cast<minigpt::Construction>(k)),
               vt.by_kind[k].accuracy(), vt.by_kind[k].correct, vt.by_kind[k].total);
  if (vt.skipped_unknown + vt.skipped_long > 0)
    fmt::print("  skipped: {} with a form outside the vocabulary, {} too long for the context\n", vt.skipped_unknown,
               vt.skipped_long);
}

}  // namespace

void register_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Test perplexity (with the corpus floor) and verb-tense accuracy of a model");
  cmd->add_option("--model", o->model, "checkpoint (safetensors)")->check(CLI::ExistingFile)->capture_default_str();
  cmd->add_option("--lexicon", o->lexicon, "lexicon folder of the corpus")->capture_default_str();
  cmd->add_option("--seed", o->seed, "corpus seed")->capture_default_str();
  cmd->add_option("--window", o->window, "perplexity context window (default: n_ctx)")->check(Positive);
  cmd->add_option("--stride", o->stride, "distance between windows (default: window / 2)")->check(Positive);
  cmd->add_option("--max-slots", o->max_slots, "use at most this many verb slots (default: all)")->check(NonNegative);
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace mqcli
