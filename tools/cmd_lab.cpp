// `miniquant lab`: the course. `check NN` runs lab NN's grader (built by the MQ_LABS option, on by
// default in the release preset: build/<preset>/bin/labs/labNN on your file, labNN_ref on the
// library's), rebuilding it first when your file is newer than it; `list` names the labs; `solutions`
// writes solutions/NN-topic-ref.md from the experiments' JSON (`--check`: only compares).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include "commands.h"
#include "experiments/lab_course.h"
#include "experiments/lab_solutions.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"

extern char** environ;

namespace mqcli {
namespace {

struct LabCheckOptions {
  std::string lab;
  bool reference = false;
  bool no_rebuild = false;
  std::string run_dir, answers;
  int64_t ppl_tokens = 0;
  std::string blocks;
};

// Runs `argv` (argv[0] a path, or a name looked up in PATH) with the terminal's stdout/stderr; returns its exit code.
int spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw mq::Error(fmt::format("cannot run {}", args[0]));
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) throw mq::Error(fmt::format("lost {} while waiting for it", args[0]));
  if (WIFSIGNALED(status)) throw mq::Error(fmt::format("{} died of signal {}", args[0], WTERMSIG(status)));
  return WEXITSTATUS(status);
}

// A grader older than the files it is built from grades what the learner wrote before: rebuild it (one line
// saying so), or with --no-rebuild refuse.
void rebuild_if_stale(const mqexp::LabInfo& lab, const std::filesystem::path& exe, bool reference, bool no_rebuild) {
  const std::string root = MQ_SOURCE_DIR;
  const std::string newer = mqexp::newer_source(exe, mqexp::grader_sources(root, lab, reference));
  if (newer.empty()) return;
  const std::filesystem::path build = exe.parent_path().parent_path().parent_path();  // <build>/bin/labs/labNN
  const std::string target = exe.filename().string();
  const std::string rel = std::filesystem::path(newer).lexically_relative(root).string();
  const std::string cmd = fmt::format("cmake --build {} --target {} -j 2", build.string(), target);
  if (no_rebuild)
    throw mq::Error(fmt::format("lab {}: the grader {} is older than {}: rebuild it ({}) or drop --no-rebuild", lab.number,
                                exe.string(), rel, cmd));
  std::error_code ec;
  if (!std::filesystem::exists(build / "CMakeCache.txt", ec))
    throw mq::Error(fmt::format("lab {}: the grader {} is older than {}, and {} is not a CMake build folder to rebuild it in",
                                lab.number, exe.string(), rel, build.string()));
  fmt::print("lab {}: {} is newer than the grader {}: rebuilding it ({})\n", lab.number, rel, target, cmd);
  if (spawn({"cmake", "--build", build.string(), "--target", target, "-j", "2"}) != 0)
    throw mq::Error(fmt::format("lab {}: rebuilding {} failed (the compiler's messages are above)", lab.number, target));
}

void check(const LabCheckOptions& o) {
  const mqexp::LabInfo& lab = mqexp::find_lab(o.lab);
  const std::string& nn = lab.number;
  const std::string root = MQ_SOURCE_DIR;
  const auto exe = self_dir() / "labs" / ("lab" + nn + (o.reference ? "_ref" : ""));
  if (!std::filesystem::exists(exe))
    throw mq::Error(fmt::format("the lab {} grader {} is not built: configure with -DMQ_LABS=ON (the release preset does) "
                                "and build (cmake --build --preset release --target lab{}{} -j 2)", nn, exe.string(), nn,
                                o.reference ? "_ref" : ""));
  rebuild_if_stale(lab, exe, o.reference, o.no_rebuild);
  std::vector<std::string> args = {exe.string()};
  std::string run = o.run_dir, answers = o.answers;
  // --reference grades the committed reference run and the generated solution's answers.
  if (o.reference && run.empty() && !lab.reference_run.empty()) run = root + "/" + lab.reference_run;
  // Lab 06's answers cite this machine's timings, which no committed file holds: its reference grader writes its own.
  if (o.reference && answers.empty() && !lab.answers().empty() && !lab.times_kernels) answers = root + "/" + lab.solution;
  if (!run.empty()) args.insert(args.end(), {"--run-dir", run});
  if (!answers.empty()) args.insert(args.end(), {"--answers", answers});
  if (!o.blocks.empty()) args.insert(args.end(), {"--block", o.blocks});
  if (o.ppl_tokens > 0) args.insert(args.end(), {"--ppl-tokens", std::to_string(o.ppl_tokens)});
  // Graders that time nothing: OpenMP threads that sleep at barriers instead of spinning keep a busy machine (or
  // one shared with a build) from running them ten times slower. Lab 06 times GEMVs of 20-40 us, which waking
  // sleeping threads would swamp, so it keeps OpenMP's default. The learner's own setting wins.
  if (!lab.times_kernels) ::setenv("OMP_WAIT_POLICY", "passive", 0);
  const int code = spawn(args);
  if (code == 2) throw mq::UsageError(fmt::format("lab {}: the grader refused its options (above)", nn));
  if (code != 0) throw mq::Error(fmt::format("lab {}: not every block passed (above)", nn));
}

void solutions(bool only_check, const std::string& out) {
  const std::string root = MQ_SOURCE_DIR;
  // An empty --out wrote into "/" ("" + "/" + name): refused like every command's empty output. The output is checked
  // before the write-ups are generated (they read every experiment's JSON, which may fail on its own).
  if (out.empty()) throw mq::UsageError("--out is empty: give the output folder");
  if (!only_check) {
    std::vector<std::string> names;
    for (const mqexp::LabInfo& lab : mqexp::lab_list()) names.push_back(lab.solution.substr(lab.solution.find('/') + 1));
    mq::check_folder_outputs("--out", out, names, {});
    mq::check_writable_dir(out);
  }
  const auto files = mqexp::lab_solutions(root);
  std::vector<std::string> stale;
  for (const auto& [name, text] : files) {
    const std::string path = out + "/" + name;
    if (only_check) {
      std::string have;
      try {
        have = mq::read_file(path);
      } catch (const mq::Error&) {
      }
      if (have != text) stale.push_back(path);
    } else {
      mq::write_file_atomic(path, text);
      fmt::print("wrote {}\n", path);
    }
  }
  if (!stale.empty()) {
    std::string list;
    for (const auto& p : stale) list += (list.empty() ? "" : ", ") + p;
    throw mq::Error(fmt::format("{} differ from what the experiments' JSON generates: {} (run `miniquant lab solutions`)",
                                stale.size() == 1 ? "1 file" : std::to_string(stale.size()) + " files", list));
  }
  if (only_check) fmt::print("{} solution files match the experiments' JSON\n", files.size());
}

}  // namespace

std::filesystem::path self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw mq::Error("cannot locate the miniquant binary (/proc/self/exe) to find the programs built next to it");
  return exe.parent_path();
}

void register_lab(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("lab", "The lab course (labs/, solutions/): grade a lab, list them, write the solutions");
  cmd->require_subcommand(1);

  auto o = std::make_shared<LabCheckOptions>();
  CLI::App* c = cmd->add_subcommand("check", "Grade lab NN: each TODO block of your file passed or failed, and the numeric bars");
  c->add_option("lab", o->lab, "00 to 07 (`miniquant lab list`)")->required();
  c->add_flag("--reference", o->reference, "grade the library's own implementation (and the committed run) instead of yours");
  c->add_flag("--no-rebuild", o->no_rebuild, "refuse to grade a grader older than your file instead of rebuilding it");
  c->add_option("--run-dir,--sweep-dir", o->run_dir,
                "labs 02, 04, 05: your `miniquant sweep / energy / mixed --out` folder (default labs/NN-topic/sweep or run)");
  c->add_option("--answers", o->answers, "labs 02, 04, 05, 07: your answers (default labs/NN-topic/answers.md)");
  c->add_option("--block", o->blocks, "grade only these blocks, e.g. E or CD (default: every block)");
  c->add_option("--ppl-tokens", o->ppl_tokens, "perplexity checks score this many test-split tokens (default 8192)");
  c->callback([o] { check(*o); });

  CLI::App* l = cmd->add_subcommand("list", "The labs, their handouts and the files you write");
  l->callback([] {
    for (const mqexp::LabInfo& lab : mqexp::lab_list())
      fmt::print("{}  {:<26} labs/{}/{}  ({})\n", lab.number, lab.title, lab.dir, lab.file, lab.solution);
  });

  auto only_check = std::make_shared<bool>(false);
  auto out = std::make_shared<std::string>(std::string(MQ_SOURCE_DIR) + "/solutions");
  CLI::App* s = cmd->add_subcommand("solutions", "Write solutions/NN-topic-ref.md from the committed experiments' JSON");
  s->add_flag("--check", *only_check, "compare with the files instead of writing them (exit 1 when they differ)");
  s->add_option("--out", *out, "folder to write into")->capture_default_str();
  s->callback([only_check, out] { solutions(*only_check, *out); });
}

}  // namespace mqcli
