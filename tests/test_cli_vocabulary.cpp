// One vocabulary on the command line (tools/vocabulary.h): no subcommand shows an old spelling of a concept as
// its flag, the README's concept table lists every concept with its one flag, and an old spelling still works,
// says which flag to use, and is refused beside the new one.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <CLI/CLI.hpp>

#include "cli_run.h"
#include "commands.h"
#include "miniquant/util/io.h"
#include "vocabulary.h"

namespace {

// "--prompt (vs-llama)" -> {"--prompt", "vs-llama"}: an old spelling limited to one subcommand.
std::pair<std::string, std::string> split_old(std::string_view old) {
  const size_t p = old.find(" (");
  if (p == std::string_view::npos) return {std::string(old), ""};
  return {std::string(old.substr(0, p)), std::string(old.substr(p + 2, old.size() - p - 3))};
}


}  // namespace

TEST_CASE("no subcommand shows an old spelling as its flag; old spellings are aliases under their own heading") {
  CLI::App app{"miniquant"};
  mqcli::register_all(app);
  int visible = 0;
  for (const CLI::App* sub : app.get_subcommands({})) {
    for (const CLI::Option* opt : sub->get_options()) {
      for (const std::string& name : opt->get_lnames()) {
        const std::string flag = "--" + name;
        for (const mqcli::Concept& c : mqcli::concepts()) {
          for (std::string_view o : c.old) {
            const auto [old, only] = split_old(o);
            if (flag != old || (!only.empty() && only != sub->get_name())) continue;
            CAPTURE(sub->get_name());
            CAPTURE(flag);
            CHECK(opt->get_group() == mqcli::kOldSpellings);  // an alias under its own heading, not the command's flag
          }
        }
        if (!opt->get_group().empty() && opt->get_group() != mqcli::kOldSpellings) ++visible;
      }
    }
  }
  CHECK(visible > 100);
  // No concept's flag is another concept's old spelling.
  std::set<std::string> flags;
  for (const mqcli::Concept& c : mqcli::concepts()) CHECK(flags.insert(std::string(c.flag)).second);
  for (const mqcli::Concept& c : mqcli::concepts())
    for (std::string_view o : c.old) CHECK(flags.count(split_old(o).first) == 0);
}

TEST_CASE("the README's concept table lists every concept with its one flag") {
  const std::string readme = mq::read_file(MQ_SOURCE_DIR "/README.md");
  for (const mqcli::Concept& c : mqcli::concepts()) {
    std::string old;
    for (std::string_view o : c.old) old += (old.empty() ? "" : ", ") + std::string(o);
    const std::string row = "| " + std::string(c.meaning) + " | `" + std::string(c.flag) + "` | " + (old.empty() ? "-" : old) + " |";
    CAPTURE(row);
    CHECK(readme.find(row) != std::string::npos);
  }
}

TEST_CASE("an old spelling still works, names the flag to use, and is refused beside the new one") {
  const CliResult r = run_cli("generate --prompt \"yesterday, the dog\" --tokens 2");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("note: --tokens is the old spelling of --gen-tokens; use --gen-tokens") != std::string::npos);
  const CliResult n = run_cli("generate --prompt \"yesterday, the dog\" --gen-tokens 2");
  CHECK(n.code == 0);
  CHECK(n.out.find("note:") == std::string::npos);
  const CliResult both = run_cli("generate --prompt \"yesterday, the dog\" --tokens 2 --gen-tokens 2");
  INFO(both.out);
  CHECK(both.code == 2);
  CHECK(both.out.find("--tokens and --gen-tokens are one option") != std::string::npos);
}
