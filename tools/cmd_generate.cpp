// `miniquant generate`: sample text from a model (seeded), so a person can hear it speak.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "commands.h"
#include "vocabulary.h"
#include "validators.h"
#include "verify_flag.h"
#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/random.h"
#include "experiments/workspace.h"

namespace mqcli {
namespace {

struct GenerateOptions {
  std::string model = mqexp::kDefaultModel;
  std::string prompt;
  int tokens = 60;
  double temperature = 0.8;
  uint64_t seed = kDefaultSeed;
};

// Samples from softmax(logits / temperature); temperature 0 takes the argmax.
int32_t sample(const std::vector<float>& logits, double temperature, mq::Rng& rng) {
  const auto best = std::max_element(logits.begin(), logits.end());
  if (temperature <= 0.0) return static_cast<int32_t>(best - logits.begin());
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp((logits[i] - *best) / temperature);
  double u = rng.uniform() * sum;
  for (size_t i = 0; i < p.size(); ++i)
    if ((u -= p[i]) < 0.0) return static_cast<int32_t>(i);
  return static_cast<int32_t>(p.size() - 1);
}

void run(const GenerateOptions& o) {
  mqexp::LoadedModel lm = mqexp::load_checkpoint(o.model);
  std::vector<int32_t> ids{minigpt::Tokenizer::kSepId};  // a story starts after a separator
  const std::vector<std::string> words = minigpt::Tokenizer::split_text(o.prompt);
  const std::vector<int32_t> prompt = lm.tok.encode(words);
  // A word outside the vocabulary becomes <unk>: say which, instead of generating from it silently.
  std::string unknown;
  for (size_t i = 0; i < words.size(); ++i)
    if (prompt[i] == minigpt::Tokenizer::kUnkId && words[i] != lm.tok.token(minigpt::Tokenizer::kUnkId))
      unknown += (unknown.empty() ? "" : ", ") + mq::clip_text(words[i]);
  if (!unknown.empty())
    fmt::print(stderr, "generate: warning: not in the model's vocabulary, read as <unk>: {}\n", unknown);
  ids.insert(ids.end(), prompt.begin(), prompt.end());
  const int n_ctx = lm.model.config().n_ctx;
  if (static_cast<int>(ids.size()) >= n_ctx)
    throw mq::UsageError(fmt::format("--prompt has {} tokens; the model's context is {}", ids.size() - 1, n_ctx));
  mq::Rng rng(o.seed);
  std::vector<float> logits = lm.model.prefill(ids);
  std::vector<float> last(logits.end() - lm.model.config().vocab_size, logits.end());
  std::vector<int32_t> out;
  for (int i = 0; i < o.tokens && lm.model.cache_length() < n_ctx; ++i) {
    const int32_t next = sample(last, o.temperature, rng);
    out.push_back(next);
    if (next == minigpt::Tokenizer::kSepId || lm.model.cache_length() == n_ctx) break;
    last = lm.model.decode(next);
  }
  fmt::print("{}{}{}\n", lm.tok.decode(prompt), prompt.empty() ? "" : " ", lm.tok.decode(out));
}

}  // namespace

void register_generate(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Sample a story continuation from a model");
  add_model_option(cmd, o->model, "checkpoint (safetensors)");
  cmd->add_option("--prompt", o->prompt, "text to continue (lower-cased and split like the corpus)");
  add_old_spelling(cmd, "--tokens", cmd->add_option("--gen-tokens", o->tokens, "at most this many new tokens")->check(Positive)->capture_default_str(),
                   o->tokens)
      ->check(Positive);
  cmd->add_option("--temperature", o->temperature, "0 = greedy")->check(NonNegative)->capture_default_str();
  cmd->add_option("--seed", o->seed, "sampling seed")->capture_default_str();
  add_no_verify_flag(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace mqcli
