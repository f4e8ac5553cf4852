// The lab course's table, the starter files' state and the graders' freshness (see lab_course.h).
#include "experiments/lab_course.h"

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"

namespace mqexp {
namespace fs = std::filesystem;

const std::vector<LabInfo>& lab_list() {
  static const std::vector<LabInfo> labs = [] {
    std::vector<LabInfo> v = {
        {"00", "quantizers", "00-quantizers", "quantizers.cpp", "solutions/00-quantizers-ref.md", "ABCDEF", "ABCDEF", {}, "", "", false},
        {"01", "GPTQ", "01-gptq", "gptq.cpp", "solutions/01-gptq-ref.md", "ABC", "ABC", {}, "", "", false},
        {"02", "the quantization Pareto curve", "02-pareto-curve", "pareto.cpp", "solutions/02-pareto-curve-ref.md", "ABCD", "ABD", {},
         "labs/02-pareto-curve/sweep", "experiments/26-quant-curve", false},
        {"03", "GGUF export", "03-gguf-export", "gguf_blocks.cpp", "solutions/03-gguf-export-ref.md", "ABC", "ABC", {}, "", "", false},
        {"04", "energy per token by phase", "04-energy", "energy.cpp", "solutions/04-energy-ref.md", "ABCDE", "ABCDE", {},
         "labs/04-energy/run", "experiments/28-energy", false},
        {"05", "per-layer mixed precision", "05-mixed-precision", "mixed.cpp", "solutions/05-mixed-precision-ref.md", "ABCDE", "ABCDE", {},
         "labs/05-mixed-precision/run", "experiments/27-mixed-epi", false},
        {"06", "the kernel", "06-kernel", "kernel.cpp", "solutions/06-kernel-ref.md", "ABCDEFG", "ABCDEFG", {}, "", "", true, true},
        {"07", "AWQ", "07-awq", "awq.cpp", "solutions/07-awq-ref.md", "ABCDEF", "ABCDF", {}, "", "", false, true},
    };
    for (LabInfo& l : v) {
      l.starters = {"labs/" + l.dir + "/" + l.file};
      if (!l.answers().empty()) l.starters.push_back(l.answers());
    }
    return v;
  }();
  return labs;
}

const LabInfo& find_lab(const std::string& s) {
  for (const LabInfo& l : lab_list())
    if (s == l.number || (s.size() == 1 && "0" + s == l.number)) return l;
  std::string names;
  for (const LabInfo& l : lab_list()) names += (names.empty() ? "" : ", ") + l.number + " (" + l.dir + ")";
  throw mq::UsageError(fmt::format("lab {}: no such lab; labs: {}", s, names));
}

const char* starter_state_name(StarterState s) {
  switch (s) {
    case StarterState::unchanged: return "unchanged";
    case StarterState::untouched: return "edited, no block implemented yet";
    case StarterState::started: break;
  }
  return "started";
}

StarterState starter_state(const std::string& root, const LabInfo& lab) {
  // labs/starters.sha256: "<hex>  <path>" per line, as sha256sum writes it (`sha256sum -c` checks it).
  const std::string recorded = mq::read_file(root + "/labs/starters.sha256");
  bool unchanged = true;
  std::string text;
  for (const std::string& f : lab.starters) {
    const size_t at = recorded.find("  " + f + "\n");
    if (at == std::string::npos || at < 64) throw mq::Error(fmt::format("labs/starters.sha256 records no hash for {}", f));
    const std::string want = recorded.substr(at - 64, 64);
    std::error_code ec;
    if (!fs::is_regular_file(root + "/" + f, ec)) return StarterState::started;  // deleted: nothing to hold to the starter
    unchanged = unchanged && mq::sha256_file(root + "/" + f) == want;
    text += mq::read_file(root + "/" + f);
  }
  if (unchanged) return StarterState::unchanged;
  for (char b : lab.file_blocks)
    if (text.find(fmt::format("lab {} block {}: not implemented yet", lab.number, b)) == std::string::npos) return StarterState::started;
  return StarterState::untouched;
}

std::vector<fs::path> grader_sources(const std::string& root, const LabInfo& lab, bool reference) {
  std::vector<fs::path> v;
  if (reference) {
    v.push_back(root + "/src/labs/reference/lab" + lab.number + "_ref.cpp");
  } else {
    v.push_back(root + "/labs/" + lab.dir + "/" + lab.file);
  }
  v.push_back(root + "/labs/" + lab.dir + "/lab" + lab.number + ".h");
  v.push_back(root + "/src/labs/lab" + lab.number + "_checks.cpp");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/src/labs", ec))
    if (e.is_regular_file() && (e.path().extension() == ".cpp" || e.path().extension() == ".h") &&
        e.path().filename().string().rfind("lab", 0) != 0)
      v.push_back(e.path());  // the grading frame: grade, workbench, answers, twins
  return v;
}

std::string newer_source(const fs::path& binary, const std::vector<fs::path>& sources) {
  std::error_code ec;
  const auto built = fs::last_write_time(binary, ec);
  if (ec) return "";
  for (const fs::path& s : sources) {
    const auto t = fs::last_write_time(s, ec);
    if (!ec && t > built) return s.string();
  }
  return "";
}

}  // namespace mqexp
