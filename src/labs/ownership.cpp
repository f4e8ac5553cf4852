// The learner's run and answers are the learner's own (see ownership.h).
#include "labs/ownership.h"

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/lab_course.h"
#include "labs/answers.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"

namespace mqlab {

void check_own_run(Checks& c, const std::string& run_dir, const std::string& committed_dir, const std::vector<std::string>& files) {
  std::string bad;
  try {
    const nlohmann::json mine = mqexp::read_json(run_dir + "/manifest.json");
    const nlohmann::json ref = mqexp::read_json(committed_dir + "/manifest.json");
    const std::string date = mine.value("date", std::string());
    const mq::CpuInfo cpu = mq::cpu_info();
    const nlohmann::json machine = mine.value("machine", nlohmann::json::object());
    // ISO 8601 UTC strings of one format order as their times do.
    if (date.empty()) bad = "its manifest.json records no date";
    else if (date == ref.value("date", std::string())) bad = fmt::format("its manifest.json is the committed run's ({}, {})", committed_dir, date);
    else if (date > mq::utc_now_iso8601()) bad = fmt::format("its manifest.json is dated {}, in the future", date);
    else if (machine.value("cpu_model", std::string()) != cpu.model || machine.value("logical_cpus", 0) != cpu.logical_cpus)
      bad = fmt::format("its manifest.json names another machine ({}, {} CPUs) than this one ({}, {} CPUs): run it where you grade it",
                        machine.value("cpu_model", std::string("?")), machine.value("logical_cpus", 0), cpu.model, cpu.logical_cpus);
    for (const std::string& f : files) {
      if (!bad.empty()) break;
      std::string a, b;
      try {
        a = mq::read_file(run_dir + "/" + f);
        b = mq::read_file(committed_dir + "/" + f);
      } catch (const mq::Error&) {
        continue;  // a missing file is the other checks' to report
      }
      if (a == b) bad = fmt::format("its {} is byte for byte the committed run's ({}/{})", f, committed_dir, f);
    }
  } catch (const std::exception& e) {
    bad = e.what();
  }
  c.expect(bad.empty(), "your own run", "made by you on this machine (not the committed reference run copied in)", bad.empty() ? "yours" : bad);
}

void check_own_answers(Checks& c, const std::map<int, std::string>& answers, const std::string& reference_path, int questions) {
  std::map<int, std::string> ref;
  try {
    ref = answer_sections(mq::read_file(reference_path), questions);
  } catch (const mq::Error& e) {
    c.expect(false, "your own answers", "compared with the reference write-up", e.what());
    return;
  }
  std::string bad;
  for (int q = 1; q <= questions && bad.empty(); ++q) {
    const auto mine = answers.find(q);
    if (mine == answers.end()) continue;
    const double share = copied_share(mine->second, ref.at(q));
    if (share >= 0.5) bad = fmt::format("answer {} repeats {:.0f}% of the reference write-up's ({})", q, 100 * share, reference_path);
  }
  c.expect(bad.empty(), "your own answers", "written by you, not copied from solutions/", bad.empty() ? "yours" : bad);
}

void check_own_work(Checks& c, const LabOptions& o, const std::string& number, const std::string& run_dir, const std::vector<std::string>& files,
                    const std::map<int, std::string>& answers) {
  const mqexp::LabInfo& lab = mqexp::find_lab(number);
  check_own_run(c, run_dir, o.root + "/" + lab.reference_run, files);
  check_own_answers(c, answers, o.root + "/" + lab.solution, static_cast<int>(answers.size()));
}

}  // namespace mqlab
