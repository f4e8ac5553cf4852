// What both experiments (roofline, sweep) write the same way: JSON files atomically, figures by
// running one plot script per figure, README blocks regenerated between markers, and the machine /
// build facts of manifests.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mqexp {

inline const std::string kPlotDir = MQ_SOURCE_DIR "/experiments/plot";
// The interpreter with python3-matplotlib (Debian's; another python3 may come first on PATH).
inline const std::string kPython = "/usr/bin/python3";

// Outputs name files relative to the repository: every occurrence of "<source dir>/" in a string is removed
// (a path inside the repository becomes relative to its root; others stay as given), so tracked results carry
// no absolute path of the machine that wrote them.
std::string relativize(std::string text);
void relativize(nlohmann::json& j);
// One argument of a command line as a manifest records it: an absolute path inside the checkout becomes
// repository-relative, one in the temp folder "$TMPDIR/...", one in the home folder "~/..."; anything else
// is kept. A tracked manifest then names no machine's temporary folder or user.
std::string portable_command_arg(const std::string& arg);
// Atomic writes through relativize(): every JSON and text output of the experiments goes through these.
void write_json_atomic(const std::string& path, const nlohmann::json& j);
void write_text_atomic(const std::string& path, const std::string& text);
// mq::read_json_file (size cap, depth, duplicate keys, memory budget): mq::Error naming the file when
// missing, too large or malformed.
nlohmann::json read_json(const std::string& path);

// Runs `kPython kPlotDir/<script> args...`; mq::Error with its output when it fails.
void run_plot(const std::string& script, const std::vector<std::string>& args);

// The README's text between "<!-- generated:begin -->" and "<!-- generated:end -->" replaced by
// `block` (written atomically); a README without the markers gets them appended, a missing one is
// created with `title` on top.
void update_generated_block(const std::string& readme_path, const std::string& block, const std::string& title);
// The block currently between the markers ("" when there is none).
std::string generated_block(const std::string& readme_text);

// CPU model, family / model / stepping, flags, caches, logical CPUs and the load average now;
// compiler, build type and flags, commits.
nlohmann::json machine_json();
nlohmann::json build_json();
// A manifest build block's commit for a README: its first 12 hex digits, or "unknown (no git metadata)"
// when the run had no .git (git_commit null or absent).
std::string commit_text(const nlohmann::json& build);

}  // namespace mqexp
