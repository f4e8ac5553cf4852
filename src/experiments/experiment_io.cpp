#include "experiments/experiment_io.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/kernels/blocked.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "miniquant/util/wait_policy.h"

namespace mqexp {
namespace {

constexpr const char* kBegin = "<!-- generated:begin -->";
constexpr const char* kEnd = "<!-- generated:end -->";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string relativize(std::string text) {
  const std::string root = std::string(MQ_SOURCE_DIR) + "/";
  for (size_t at = text.find(root); at != std::string::npos; at = text.find(root, at)) text.erase(at, root.size());
  return text;
}

std::string portable_command_arg(const std::string& arg) {
  // An option's value may be glued to it (--out=/tmp/x): only the value is a path.
  const auto eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
  const std::string head = eq == std::string::npos ? "" : arg.substr(0, eq + 1);
  std::string v = eq == std::string::npos ? arg : arg.substr(eq + 1);
  if (v.empty() || v[0] != '/') return arg;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::weakly_canonical(v, ec);
  if (ec) return arg;
  const auto under = [&](const std::filesystem::path& root) -> std::optional<std::string> {
    if (root.empty() || root == "/") return std::nullopt;
    std::error_code e2;
    const std::filesystem::path r = std::filesystem::weakly_canonical(root, e2);
    if (e2) return std::nullopt;
    const auto rel = abs.lexically_relative(r);
    if (rel.empty() || *rel.begin() == "..") return std::nullopt;
    return rel == "." ? std::string() : rel.string();
  };
  // The checkout first (a repository-relative path), then the temp folder and the home folder, which name
  // this machine and user and mean nothing in a tracked manifest.
  if (const auto r = under(MQ_SOURCE_DIR)) return head + (r->empty() ? "." : *r);
  if (const auto r = under(std::filesystem::temp_directory_path(ec))) return head + "$TMPDIR" + (r->empty() ? "" : "/" + *r);
  const char* home = std::getenv("HOME");
  if (home != nullptr)
    if (const auto r = under(home)) return head + "~" + (r->empty() ? "" : "/" + *r);
  return arg;
}

void relativize(nlohmann::json& j) {
  if (j.is_string()) {
    j = relativize(j.get<std::string>());
  } else if (j.is_structured()) {
    for (auto& v : j) relativize(v);
  }
}

void write_json_atomic(const std::string& path, const nlohmann::json& j) {
  nlohmann::json copy = j;
  relativize(copy);
  mq::write_file_atomic(path, copy.dump(2) + "\n");
}

void write_text_atomic(const std::string& path, const std::string& text) { mq::write_file_atomic(path, relativize(text)); }

nlohmann::json read_json(const std::string& path) { return mq::read_json_file(path); }

void run_plot(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = fmt::format("{} {}", quote(kPython), quote(fmt::format("{}/{}", kPlotDir, script)));
  for (const auto& a : args) cmd += fmt::format(" {}", quote(a));
  const mq::CommandOutput r = mq::run_command(cmd + " 2>&1");
  if (r.code != 0) {
    // One line: the script's last line (a traceback ends with the exception); the command reproduces the rest.
    std::string last = r.out;
    while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
    last = last.substr(last.find_last_of('\n') == std::string::npos ? 0 : last.find_last_of('\n') + 1);
    throw mq::Error(fmt::format("plot {} failed (is python3-matplotlib installed for {}?): {} (run `{}` to see all of it)", script,
                                kPython, mq::clip_text(last, 200), mq::clip_text(cmd, 200)));
  }
}

std::string generated_block(const std::string& text) {
  const auto b = text.find(kBegin), e = text.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) return {};
  const size_t from = b + std::string(kBegin).size();
  std::string s = text.substr(from, e - from);
  if (!s.empty() && s.front() == '\n') s.erase(0, 1);
  return s;
}

void update_generated_block(const std::string& readme_path, const std::string& block, const std::string& title) {
  std::string text = std::filesystem::exists(readme_path) ? mq::read_file(readme_path) : "# " + title + "\n\n";
  const std::string wrapped = std::string(kBegin) + "\n" + relativize(block) + kEnd;
  const auto b = text.find(kBegin), e = text.find(kEnd);
  if (b != std::string::npos && e != std::string::npos && e > b)
    text.replace(b, e + std::string(kEnd).size() - b, wrapped);
  else
    text += wrapped + "\n";
  mq::write_file_atomic(readme_path, text);
}

nlohmann::json machine_json() {
  const mq::CpuInfo ci = mq::cpu_info();
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : ci.caches)
    caches.push_back({{"level", c.level}, {"type", c.type}, {"bytes", c.bytes}, {"shared_cpus", c.shared_cpus}});
  const mq::LoadAverage load = mq::load_average();
  const mq::WaitPolicy wait = mq::wait_policy();
  return {{"cpu_model", ci.model},
          {"cpu_family", ci.family},
          {"cpu_model_number", ci.model_number},
          {"cpu_stepping", ci.stepping},
          {"microcode", ci.microcode},
          {"cpu_flags", ci.flags},
          {"cpu_flags_all", ci.all_flags},
          {"logical_cpus", ci.logical_cpus},
          {"caches", caches},
          {"cache_source", ci.cache_source},
          {"load_average", {{"one", load.one}, {"five", load.five}, {"fifteen", load.fifteen}}},
          {"omp_wait_policy", {{"policy", wait.policy}, {"chosen_by", wait.chosen_by}}}};
}

namespace {
// The field widths of the integer families whose weight-only rows this build runs on bf16 dot products
// (kernels.h has_bf16_weight_path).
nlohmann::json bf16_widths() {
  nlohmann::json bits = nlohmann::json::array();
  for (const char* f : {"int4", "int3", "int2"}) {
    const mq::Scheme s = mq::Scheme::integer(f, 64);
    if (mq::has_bf16_weight_path(s)) bits.push_back(s.bits);
  }
  return bits;
}

// Every integer family with the dynamic kernels (those with the 16-row block layout, blocked.h) -> its +a8 path.
nlohmann::json dynamic_kernels_per_family() {
  nlohmann::json out = nlohmann::json::object();
  for (const mq::BlockLayout& l : mq::block_layouts()) out[std::string(l.family)] = mq::dynamic_kernel_name(l.family);
  return out;
}
}  // namespace

nlohmann::json build_json() {
  const mq::BuildInfo b = mq::build_info();
  const mq::SourceState s = mq::source_state(MQ_SOURCE_DIR);
  // A release tarball has no .git: the manifest says so in words (git_commit stays null), and every reader
  // of git_commit goes through commit_text, which does not fail on null.
  return {{"git_commit", s.commit.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.commit)},
          {"git_metadata", s.commit.empty() ? "absent (no git repository at the source folder: a release tarball or a copy)" : "present"},
          {"git_dirty", s.dirty},
          {"binary_configured_at_commit", b.git_commit},
          {"build_type", b.build_type},
          {"flags", b.flags},
          {"compiler", b.compiler},
          // Which kernel the +a8 (int8-activation) rows ran: the machine the binary was built for decides
          // (-march=native), and a portable-twin row is not a VNNI measurement. The int8 / int4 / int2 path,
          // and per family (int3's decode needs VBMI, so on a VNNI CPU without it int3 runs the portable twin).
          {"int8_activation_kernel", mq::dynamic_kernel_name("int4")},
          {"int8_activation_kernel_per_family", dynamic_kernels_per_family()},
          // The weight-only field widths that ran on AVX-512 BF16 dots (activations split into two bf16 each,
          // kernels.h has_bf16_weight_path; empty: none): their quality numbers then carry that rounding.
          {"bf16_weight_kernel", bf16_widths()},
          // Where the bf16 kernels run, QuantizedLinear keeps int8 / int4 / int2 (int3 with VBMI) weight-only and +bf16 tensors in 16-row blocks
          // (kernels/registry.h runs_blocked, gemm_blocked_bf16): the same activations, a different summation order (int8:
          // two nibbles per byte).
          {"weight_only_layout", !mq::has_bf16_weight_path(mq::Scheme::integer("int4", 64))  ? "row-major"
                                 : mq::has_bf16_weight_path(mq::Scheme::integer("int3", 64)) ? "int8/int4/int3/int2 in 16-row blocks"
                                                               : "int8/int4/int2 in 16-row blocks"}};
}

std::string commit_text(const nlohmann::json& build) {
  const auto it = build.find("git_commit");
  if (it != build.end() && it->is_string()) return it->get<std::string>().substr(0, 12);
  return "unknown (no git metadata)";
}

}  // namespace mqexp
