// The `miniquant` command line: one binary, one subcommand per job.
#include <csignal>
#include <cstdio>
#include <exception>
#include <new>
#include <string_view>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "experiments/experiment_io.h"
#include "miniquant/error.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/wait_policy.h"

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must not kill a writer by SIGXFSZ, leaving a temporary file and no
  // word: ignored, the write fails with EFBIG, which write_file_atomic reports (and cleans up).
  std::signal(SIGXFSZ, SIG_IGN);
  // The two timing studies choose how OpenMP threads wait from the load they start in (wait_policy.h):
  // before CLI parsing and before any OpenMP region, because libgomp reads the policy once.
  if (argc > 1 && (std::string_view(argv[1]) == "energy" || std::string_view(argv[1]) == "mixed")) mq::settle_wait_policy(argv);
  CLI::App app{"miniquant: quantization kernels, MiniGPT, and the experiments that measure them"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("miniquant ") + mq::build_info().git_commit);
  mqcli::register_all(app);  // every subcommand, in help order (tools/register_all.cpp)
  // CLI11 would call an unknown word "not expected" or say a subcommand is required: name it.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
      found = found || s->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + s->get_name();
    }
    if (!found) {
      fmt::print(stderr, "miniquant: error: unknown subcommand '{}' (subcommands: {}; see --help)\n", argv[1], known);
      return 2;
    }
  }
  // As manifests record it: paths made portable (experiments/29-kquants once recorded `--out /tmp/kq29`).
  for (int i = 0; i < argc; ++i) mqcli::command_line() += (i ? " " : "") + (i ? mqexp::portable_command_arg(argv[i]) : std::string("miniquant"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Unknown options, bad values, missing subcommand: one line, exit code 2.
    fmt::print(stderr, "miniquant: error: {} (see --help)\n", e.what());
    return 2;
  } catch (const mq::UsageError& e) {
    fmt::print(stderr, "miniquant: error: {}\n", e.what());
    return 2;
  } catch (const mq::Error& e) {
    fmt::print(stderr, "miniquant: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Sizes are checked before allocating; reaching this means the machine itself ran short.
    fmt::print(stderr, "miniquant: error: out of memory\n");
    return 1;
  } catch (const nlohmann::json::exception& e) {
    // A JSON value of an unexpected type that no loader checked: say so in one line, without the
    // library's "[json.exception...]" prefix.
    const std::string w = e.what();
    const size_t cut = w.find("] ");
    fmt::print(stderr, "miniquant: error: unexpected JSON data: {}\n", cut == std::string::npos ? w : w.substr(cut + 2));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "miniquant: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
