// `miniquant roofline`: measure this machine's ceilings (experiments/01-roofline): ceilings.json,
// roofline.png and the README's table.
#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/core.h>

#include "experiments/ceilings.h"
#include "miniquant/util/timer.h"
#include "commands.h"
#include "experiments/experiment_io.h"
#include "experiments/progress.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "validators.h"

namespace mqcli {
namespace {

struct RooflineOptions {
  std::string out = MQ_SOURCE_DIR "/experiments/01-roofline";
  std::vector<int> threads;  // default: 1 and all
  bool plot = true;
};

std::string readme_block(const nlohmann::json& j) {
  std::string s = fmt::format("Measured by `{}` on {} ({} logical CPUs), {}.\n\n", j.at("command").get<std::string>(),
                              j.at("machine").at("cpu_model").get<std::string>(),
                              j.at("machine").at("logical_cpus").get<int>(), j.at("date").get<std::string>());
  s += fmt::format("The measurement took {:.0f} s on that machine (family {}, model {}, stepping {}); load average {:.2f} "
                   "when it started.\n\n",
                   j.at("seconds").get<double>(), j.at("machine").value("cpu_family", -1),
                   j.at("machine").value("cpu_model_number", -1), j.at("machine").value("cpu_stepping", -1),
                   j.at("machine").value("load_average", nlohmann::json::object()).value("one", 0.0));
  s += "| ceiling | threads | median | low .. high | working set |\n|---|---:|---:|---:|---:|\n";
  for (const auto& c : j.at("ceilings")) {
    const std::string ws = c.contains("working_set_bytes")
                               ? fmt::format("{:.0f} KiB", c.at("working_set_bytes").get<double>() / 1024)
                               : std::string("registers");
    s += fmt::format("| {} | {} | {:.1f} {} | {:.1f} .. {:.1f} | {} |\n", c.at("name").get<std::string>(),
                     c.at("threads").get<int>(), c.at("median").get<double>(), c.at("unit").get<std::string>(),
                     c.at("low").get<double>(), c.at("high").get<double>(), ws);
  }
  s += "\nMedian of 7 timed repetitions after a warm-up, each repetition lasting at least 20 ms; low .. high "
       "are the slowest and fastest repetitions.\n";
  if (j.contains("compared_with_previous")) {
    const nlohmann::json& c = j.at("compared_with_previous");
    const std::string w = mqexp::ceilings_warning(c);
    s += w.empty() ? fmt::format("\nWithin {:.0f}% of the ceilings this folder held before (measured {} on {}).\n",
                                 100 * c.at("tolerance").get<double>(), c.at("reference_date").get<std::string>(),
                                 c.at("reference_cpu").get<std::string>())
                   : "\n**Warning: " + w + ".**\n";
  }
  return s;
}

void run(const RooflineOptions& o, const std::string& command) {
  const std::vector<int> threads = o.threads.empty() ? mqexp::default_ceiling_threads() : o.threads;
  // An empty folder, a device under an output name or a non-UTF-8 name fail here (ceilings.json is read too,
  // as the previous run's, but rewritten on purpose).
  mq::check_folder_outputs("--out", o.out, {"ceilings.json", "roofline.png", "README.md"}, {});
  mq::check_writable_dir(o.out);  // before the measurements, not after them
  // The ceilings this folder holds now (on a fresh clone: the committed run's), to compare with.
  const std::string json_path = o.out + "/ceilings.json";
  nlohmann::json previous;
  if (std::filesystem::exists(json_path)) {
    try {
      previous = mqexp::read_json(json_path);
      mqexp::check_ceilings(previous, json_path);  // the comparison below reads these fields
    } catch (const std::exception& e) {
      previous = nullptr;
      fmt::print(stderr, "roofline: not comparing with the previous ceilings: {}\n", e.what());
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  mqexp::Progress progress(1);
  const nlohmann::json measured = mqexp::measure_ceilings(threads, [&](int done, int total, const std::string& what) {
    progress.update(done, total, mq::seconds_since(t0), what);
  });
  nlohmann::json j = measured;
  j["command"] = command;
  j["date"] = mq::utc_now_iso8601();
  j["machine"] = mqexp::machine_json();
  j["build"] = mqexp::build_json();
  j["seconds"] = mq::seconds_since(t0);
  if (previous.is_object() && previous.contains("ceilings")) {
    j["compared_with_previous"] = mqexp::compare_ceilings(j, previous);
    const std::string w = mqexp::ceilings_warning(j["compared_with_previous"]);
    if (!w.empty()) fmt::print(stderr, "roofline: warning: {}\n", w);
  }
  mqexp::write_json_atomic(json_path, j);
  fmt::print("wrote {}\n", json_path);
  if (o.plot) {
    mqexp::run_plot("roofline.py", {json_path, o.out + "/roofline.png"});
    fmt::print("wrote {}/roofline.png\n", o.out);
  }
  mqexp::update_generated_block(o.out + "/README.md", readme_block(j), "01-roofline: this machine's ceilings");
  for (const auto& c : j.at("ceilings"))
    fmt::print("  {:<24} {} thr  {:9.1f} {}\n", c.at("name").get<std::string>(), c.at("threads").get<int>(),
               c.at("median").get<double>(), c.at("unit").get<std::string>());
}

}  // namespace

void register_roofline(CLI::App& app) {
  auto o = std::make_shared<RooflineOptions>();
  CLI::App* cmd = app.add_subcommand("roofline", "Measure this machine's ceilings: peak FLOP/s per datatype, read bandwidth per cache level");
  cmd->add_option("--out", o->out, "output folder (ceilings.json, roofline.png, README.md)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "thread counts to measure (default: 1 and all)")->check(Positive);
  cmd->add_flag("--no-plot", [o](int64_t) { o->plot = false; }, "skip roofline.png");
  cmd->callback([o] { run(*o, command_line()); });
}

}  // namespace mqcli
