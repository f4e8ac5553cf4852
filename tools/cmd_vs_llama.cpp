// `miniquant vs-llama`: decode and prefill tokens/s of miniquant beside the real llama.cpp on the same
// exported GGUF files (src/experiments/vs_llama.h) -> bench/vs_llama/{results.json, manifest.json,
// README.md's generated block}.
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "commands.h"
#include "vocabulary.h"
#include "experiments/experiment_io.h"
#include "experiments/vs_llama.h"
#include "experiments/workspace.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/timer.h"
#include "validators.h"
#include "verify_flag.h"

namespace mqcli {
namespace {

struct VsLlamaCli {
  mqexp::VsLlamaOptions o;
  std::vector<std::string> models;   // as typed: commas and/or spaces
  std::vector<std::string> formats;  // as typed: commas and/or spaces
  std::string out = MQ_SOURCE_DIR "/bench/vs_llama";
};

void run(VsLlamaCli& cli) {
  mqexp::VsLlamaOptions& o = cli.o;
  // Given (even as "" or ","), a list must name something: an empty one ran every format.
  if (!cli.models.empty()) o.models = split_names_given(cli.models, "--models");
  if (!cli.formats.empty()) o.formats = split_names_given(cli.formats, "--schemes");
  mqexp::validate(o);
  o.llama_speed = (self_dir() / "llama_speed").string();  // cmake/llama_speed.cmake builds it beside this binary
  mqexp::check_llama_installed(o);
  mq::check_folder_outputs("--out", cli.out, {"results.json", "manifest.json", "README.md"}, {{"--model", o.checkpoint}});
  mq::check_writable_dir(cli.out);  // before minutes of work
  const mq::Stopwatch t;
  std::string names;
  for (const auto& m : o.models) names += (names.empty() ? "" : ",") + m;
  fmt::print(stderr, "vs-llama: {} threads, prompt {}, decode {}, {} rounds, models {} -> {}\n", o.threads, o.prompt, o.decode,
             o.rounds, names, cli.out);
  const nlohmann::json machine_before = mqexp::machine_json();
  const nlohmann::json r =
      mqexp::run_vs_llama(o, [&](const std::string& line) { fmt::print(stderr, "[{:6.1f} s] {}\n", t.seconds(), line); });
  const nlohmann::json manifest = {
      {"command", command_line()},
      {"date", r.at("date")},
      {"seed", o.seed},
      {"threads", o.threads},
      {"machine", machine_before},
      {"load_average", r.at("load_average")},
      {"build", mqexp::build_json()},
      {"checkpoint", {{"path", o.checkpoint}, {"sha256", mq::sha256_file(o.checkpoint)}}},
      {"llama_cpp", r.at("llama_cpp")},
      {"durations_s", r.at("durations_s")},
  };
  mqexp::write_json_atomic(cli.out + "/results.json", r);
  mqexp::write_json_atomic(cli.out + "/manifest.json", manifest);
  const std::string block = mqexp::vs_llama_readme_block(r);
  mqexp::update_generated_block(cli.out + "/README.md", block, "miniquant vs llama.cpp: decode and prefill tokens/s on the same GGUF file");
  fmt::print("{}", block);
  fmt::print("wrote {}/{{results.json, manifest.json, README.md}} in {:.0f} s\n", cli.out, t.seconds());
  if (r.at("load_average").at("busy").get<bool>())
    fmt::print(stderr, "vs-llama: warning: the machine was busy (load average above its cores) while this was timed; "
                       "these speeds are not results\n");
}

}  // namespace

void register_vs_llama(CLI::App& app) {
  auto cli = std::make_shared<VsLlamaCli>();
  mqexp::VsLlamaOptions& o = cli->o;
  o.checkpoint = mqexp::kDefaultModel;
  o.llama_dir = MQ_SOURCE_DIR "/tools/llama";
  o.seed = kDefaultSeed;
  CLI::App* cmd = app.add_subcommand("vs-llama", "Decode and prefill tokens/s beside llama.cpp on the same GGUF files (bench/vs_llama)");
  cmd->add_option("--threads", o.threads, "threads of both llama.cpp and miniquant")->capture_default_str();
  cmd->add_option("--rounds", o.rounds, "interleaved rounds (llama.cpp, miniquant, ...)")->capture_default_str();
  add_old_spelling(cmd, "--prompt", cmd->add_option("--prompt-tokens", o.prompt, "prompt (prefill) tokens")->capture_default_str(), o.prompt);
  add_old_spelling(cmd, "--decode", cmd->add_option("--gen-tokens", o.decode, "tokens decoded one at a time after the prompt")->capture_default_str(),
                   o.decode);
  cmd->add_option("--models", cli->models, "minigpt, gpt2 (the GPT-2-small-shaped body, random weights); default both");
  add_old_spelling(cmd, "--formats",
                   cmd->add_option("--schemes", cli->formats, "fp32, int8-per-channel, int4-g64, q2_k, q3_k, q4_k, q5_k, q6_k (comma-separated); default all"),
                   cli->formats);
  add_model_option(cmd, o.checkpoint, "the fp32 MiniGPT checkpoint");
  cmd->add_option("--seed", o.seed, "token ids and the GPT-2-shaped body's weights")->capture_default_str();
  cmd->add_option("--out", cli->out, "output folder")->capture_default_str();
  cmd->add_flag("--kv-f16", [cli](int64_t) { cli->o.kv_f32 = false; },
                "llama.cpp's K/V cache in F16, its default (default here: F32, as miniquant keeps it)");
  add_no_verify_flag(cmd);
  cmd->callback([cli] { run(*cli); });
}

}  // namespace mqcli
