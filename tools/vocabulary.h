// The command line's vocabulary: one flag per concept across the subcommands (concepts(), which the README's
// concept table lists and test_cli_vocabulary holds every subcommand to), the options every model command shares
// registered in one place, and older spellings kept as aliases, listed apart in --help, that say which flag to use.
#pragma once
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace mqcli {

struct Concept {
  std::string_view meaning;           // what the value is (the concept)
  std::string_view flag;              // its one spelling
  std::vector<std::string_view> old;  // older spellings, accepted with a note (never the flag of another concept)
};

// Every concept that more than one subcommand takes, or that had several spellings.
inline const std::vector<Concept>& concepts() {
  static const std::vector<Concept> c = {
      {"the fp32 checkpoint a command reads", "--model", {}},
      {"the lexicon folder the corpus is generated from", "--lexicon", {}},
      {"the seed of the corpus (and of what the command draws)", "--seed", {}},
      {"a list of quantization schemes, K types or mixes to run", "--schemes", {"--methods", "--types", "--formats"}},
      {"one scheme", "--scheme", {}},
      {"the output file or folder", "--out", {}},
      {"interleaved measurement rounds", "--rounds", {"--speed-reps"}},
      {"prompt length in tokens", "--prompt-tokens", {"--prompt (vs-llama)"}},
      {"tokens generated after the prompt", "--gen-tokens", {"--tokens", "--decode"}},
      {"a reference checkpoint to compare against (KL divergence)", "--reference-model", {"--reference (eval)"}},
      {"a per-layer quantization map (JSON)", "--quant-map", {}},
      {"perplexity over the first N test tokens", "--ppl-tokens", {}},
      {"benchmark items scored per paradigm (N / 14)", "--max-items", {}},
  };
  return c;
}

// The fp32 checkpoint option, as every command that reads one registers it.
inline CLI::Option* add_model_option(CLI::App* cmd, std::string& model, const std::string& what = "fp32 checkpoint") {
  return cmd->add_option("--model", model, what)->check(CLI::ExistingFile)->capture_default_str();
}
// The corpus options (--lexicon, --seed) of every command that generates the corpus.
template <class Seed>
void add_corpus_options(CLI::App* cmd, std::string& lexicon, Seed& seed, const std::string& seed_what = "corpus seed") {
  cmd->add_option("--lexicon", lexicon, "lexicon folder of the corpus")->capture_default_str();
  cmd->add_option("--seed", seed, seed_what)->capture_default_str();
}

// The --help heading of the old spellings.
inline constexpr const char* kOldSpellings = "Old spellings (each names the flag to use)";

// Registers old_name as an older spelling of `primary` (named new_name), bound to the same variable: listed under
// kOldSpellings in --help, refused together with the new flag, and its first use prints one line on stderr naming the flag to use.
template <class T>
CLI::Option* add_old_spelling(CLI::App* cmd, const std::string& old_name, CLI::Option* primary, T& var) {
  const std::string new_name = primary->get_name();
  auto told = std::make_shared<bool>(false);
  CLI::Option* o = cmd->add_option(old_name, var, "old spelling of " + new_name);
  // Listed apart in --help, not hidden: CLI11 names a hidden option "" in its errors (": '-5' must be ...").
  o->group(kOldSpellings);
  // Validators run once parsing is complete, so the primary's count is final here whichever came first. (CLI11's
  // excludes() would print an "Excludes:" line under the new flag in --help.)
  o->check(CLI::Validator(
      [told, primary, old_name, new_name](std::string&) -> std::string {
        if (primary->count() > 0) return old_name + " and " + new_name + " are one option: give " + new_name + " alone";
        if (!*told) std::cerr << "note: " << old_name << " is the old spelling of " << new_name << "; use " << new_name << "\n";
        *told = true;
        return {};
      },
      ""));
  // Same value handling as the primary (lists split on commas).
  if (primary->get_expected_max() > 1) o->expected(primary->get_expected_min(), primary->get_expected_max());
  o->delimiter(primary->get_delimiter());
  return o;
}

}  // namespace mqcli
