// `miniquant train`: train MiniGPT from scratch on the verb corpus and write a checkpoint + log.
#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "vocabulary.h"
#include "validators.h"
#include "verify_flag.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "minigpt/config.h"
#include "minigpt/flops.h"
#include "minigpt/train.h"
#include "minigpt/train_config.h"
#include "experiments/experiment_io.h"
#include "experiments/progress.h"
#include "experiments/workspace.h"

namespace mqcli {
namespace {

// The checkpoint's name as the log records it: relative to the repository when inside it, else its file name
// (an absolute path of the machine that trained it says nothing to anyone else).
std::string display_out(const std::string& out) {
  const std::string r = mqexp::relativize(out);
  return r != out || out.empty() || out[0] != '/' ? r : std::filesystem::path(out).filename().string() + " (outside the repository)";
}

struct TrainOptions {
  std::string config = MQ_SOURCE_DIR "/data/minigpt.json";
  std::string train_config = MQ_SOURCE_DIR "/data/train.json";
  std::string out = mqexp::kDefaultModel;
  std::string log;
  std::string lexicon = mqexp::kDefaultLexicon;
  uint64_t seed = kDefaultSeed;
  int steps = 0;  // 0: as the train config says
  std::string resume;
};

void run(const TrainOptions& o) {
  minigpt::ModelConfig mc = minigpt::load_model_config(o.config);
  minigpt::TrainConfig tc = minigpt::load_train_config(o.train_config);
  if (o.steps > 0) tc.steps = o.steps;
  if (!o.resume.empty()) tc.resume_from = o.resume;
  // Every output is checked before the run: a bad path must not cost the whole training, and no
  // output may replace an input or another output. (The training checkpoint may be the one resumed
  // from: it is rewritten atomically with the state that continues it.)
  const std::vector<mq::FlagPath> inputs = {{"--config", o.config}, {"--train-config", o.train_config}, {"--resume", tc.resume_from}};
  mq::check_output_file({"--out", o.out}, inputs);
  if (!tc.checkpoint_path.empty())
    mq::check_output_file({"checkpoint_path", tc.checkpoint_path}, {{"--config", o.config}, {"--train-config", o.train_config}, {"--out", o.out}});
  if (!o.log.empty()) {
    std::vector<mq::FlagPath> not_log = inputs;
    not_log.push_back({"--out", o.out});
    not_log.push_back({"checkpoint_path", tc.checkpoint_path});
    mq::check_output_file({"--log", o.log}, not_log);
  }
  // A checkpoint that cannot resume fails now, in one line, not after the corpus and the first lines of the run.
  if (!tc.resume_from.empty()) minigpt::check_resume_checkpoint(tc.resume_from);
  tc.seed = o.seed;
  // The log is kept whole in memory and rewritten through write_file_atomic (a temporary of our own, renamed) at
  // every line it gains, as every other output is written: an interrupted run leaves the log of its last line, never
  // half a line, and nothing is appended through a stream to whatever the path has become since the check above. A
  // resumed run continues the log of the run it resumes (read back first, bounded: a training log is a few hundred KB).
  std::string log_text;
  if (!o.log.empty() && !o.resume.empty() && std::filesystem::exists(o.log)) log_text = mq::read_file(o.log, size_t{64} << 20);
  auto log_line = [&](const std::string& line) {
    if (o.log.empty()) return;
    log_text += line + '\n';
    mq::write_file_atomic(o.log, log_text);
  };
  // The log is a tracked output (data/train.log): paths in it are relative to the repository.
  auto say = [&](const std::string& line) {
    fmt::print(stderr, "{}\n", line);
    log_line(mqexp::relativize(line));
  };

  const mqexp::CorpusBundle c = mqexp::load_corpus(o.lexicon, o.seed);
  // The vocabulary is the corpus's: the config's vocab_size only has to agree with it.
  if (mc.vocab_size != c.tok.size()) {
    say(fmt::format("vocab_size {} in {} replaced by the corpus vocabulary size {}", mc.vocab_size, o.config,
                    c.tok.size()));
    mc.vocab_size = c.tok.size();
  }
  const std::vector<int32_t> train_stream = minigpt::encode_split(c.tok, c.corpus.train);
  const std::vector<int32_t> val_stream = minigpt::encode_split(c.tok, c.corpus.val);
  const minigpt::SplitStats floor = minigpt::split_stats(c.corpus.test);

  minigpt::Model model(mc, o.seed);
  say(fmt::format("seed {}; model {} ({} parameters, {:.1f} MB fp32); {:.2f} MFLOP/token training", o.seed,
                  minigpt::to_json(mc).dump(), model.num_params(), 4e-6 * static_cast<double>(model.num_params()),
                  1e-6 * minigpt::train_flops_per_token(mc)));
  say(fmt::format("corpus: {} train tokens, {} val tokens, vocabulary {} (hash {}); test floor ppl {:.3f}",
                  train_stream.size(), val_stream.size(), c.tok.size(), mqexp::hash_hex(c.tok.hash()), floor.floor_ppl));
  say(fmt::format("train config: {}", minigpt::to_json(tc).dump()));
  if (!tc.resume_from.empty()) say(fmt::format("resuming from {}", tc.resume_from));

  mqexp::Progress progress(50);
  double tokens_per_s_sum = 0.0, last_val = 0.0;
  minigpt::StepReport last;
  int first_step = -1;  // a resumed run starts past 0; ETA counts only this run's steps
  auto on_step = [&](const minigpt::StepReport& r) {
    if (first_step < 0) first_step = r.step - 1;
    tokens_per_s_sum += r.tokens_per_s;
    last = r;
    const std::string fields = fmt::format("step {}/{} loss {:.4f} lr {:.2e} |g| {:.3f} {:.0f} tok/s", r.step, r.steps,
                                           r.loss, r.lr, r.grad_norm, r.tokens_per_s);
    progress.update(r.step - first_step, r.steps - first_step, r.elapsed_s, fields);
    if (r.step % 50 == 0 || r.step == r.steps) log_line(fields);
    if (r.has_val) {
      last_val = r.val_loss;
      say(fmt::format("step {} val_loss {:.4f} (ppl {:.3f}) elapsed {}", r.step, r.val_loss, std::exp(r.val_loss),
                      mqexp::Progress::clock(r.elapsed_s)));
    }
  };

  nlohmann::json info = {{"seed", o.seed}, {"train_config", minigpt::to_json(tc)},
                         {"train_tokens", train_stream.size()}, {"floor_ppl_test", floor.floor_ppl}};
  minigpt::CheckpointMeta meta{c.tok.to_json(), mqexp::hash_hex(c.tok.hash()), info.dump()};
  minigpt::train(model, train_stream, val_stream, tc, on_step, meta);

  info["steps"] = last.step;
  if (!tc.resume_from.empty()) info["resumed_at_step"] = first_step;
  info["final_train_loss"] = last.loss;
  info["final_val_loss"] = last_val;
  info["mean_tokens_per_s"] = last.step > first_step ? tokens_per_s_sum / (last.step - first_step) : 0.0;
  info["seconds"] = last.elapsed_s;
  meta.train_info = info.dump();
  minigpt::save_model(o.out, model, meta);
  say(fmt::format("wrote {} after {} steps in {}: val loss {:.4f}, mean {:.0f} tokens/s", display_out(o.out), last.step,
                  mqexp::Progress::clock(last.elapsed_s), last_val, info["mean_tokens_per_s"].get<double>()));
}

}  // namespace

void register_train(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train MiniGPT from scratch on the verb corpus");
  cmd->add_option("--config", o->config, "model config JSON")->check(CLI::ExistingFile)->capture_default_str();
  cmd->add_option("--train-config", o->train_config, "training config JSON")->check(CLI::ExistingFile)->capture_default_str();
  cmd->add_option("--out", o->out, "where to write the trained model (safetensors)")->capture_default_str();
  cmd->add_option("--log", o->log, "also write the training log to this file");
  add_corpus_options(cmd, o->lexicon, o->seed, "seed of corpus, initialisation and sampling");
  cmd->add_option("--steps", o->steps, "override the number of steps")->check(Positive);
  cmd->add_option("--resume", o->resume, "continue from a training checkpoint (model + optimizer state)")
      ->check(CLI::ExistingFile);
  add_no_verify_flag(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace mqcli
