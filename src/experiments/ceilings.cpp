#include "experiments/ceilings.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/roofline.h"
#include "miniquant/util/json_shape.h"
#include "miniquant/util/sysinfo.h"

namespace mqexp {
namespace {

// Working set per level: half its capacity (so the buffer and the rest of the process fit), per
// thread for private levels; DRAM: 8 x L3 and at least 256 MiB, far beyond every cache.
struct Level {
  std::string name;
  int64_t capacity;  // bytes per thread (private) or in total (shared)
  bool shared;
};

std::vector<Level> levels_of(const mq::CpuInfo& ci) {
  std::vector<Level> out;
  for (int lv = 1; lv <= 3; ++lv) {
    for (const auto& c : ci.caches)
      if (c.level == lv && c.type != "Instruction" && c.bytes > 0)
        out.push_back({fmt::format("L{}", lv), c.bytes, c.shared_cpus.find_first_of(",-") != std::string::npos});
  }
  return out;
}

nlohmann::json rate_json(const std::string& name, const std::string& kind, int threads, const mq::Rate& r, double unit) {
  return {{"name", name},        {"kind", kind},   {"threads", threads},       {"median", r.median / unit},
          {"low", r.low / unit}, {"high", r.high / unit}, {"reps", r.reps}, {"unit", kind == "bandwidth" ? "GB/s" : (name.find("int8") != std::string::npos ? "GOP/s" : "GFLOP/s")}};
}

}  // namespace

std::vector<int> default_ceiling_threads() {
  std::vector<int> t = {1};
  if (omp_get_max_threads() > 1) t.push_back(omp_get_max_threads());
  return t;
}

nlohmann::json measure_ceilings(const std::vector<int>& threads,
                                const std::function<void(int, int, const std::string&)>& on_step) {
  const mq::CpuInfo ci = mq::cpu_info();
  const std::vector<Level> levels = levels_of(ci);
  const int64_t l3 = ci.cache_bytes(3);
  const int64_t dram = std::max<int64_t>(int64_t{256} << 20, 8 * l3);
  const int per_t = static_cast<int>(levels.size()) + 1 + 4;  // bandwidths + DRAM + 4 compute probes
  const int total = per_t * static_cast<int>(threads.size());
  int done = 0;
  nlohmann::json list = nlohmann::json::array();
  for (int t : threads) {
    const auto step = [&](const std::string& what) { on_step(done++, total, fmt::format("{} ({} thread{})", what, t, t > 1 ? "s" : "")); };
    step("fp32 FMA peak");
    list.push_back(rate_json("fp32 FMA", "compute", t, mq::fma_peak(t), 1e9));
    list.back()["datatype"] = "fp32";
    step("int8 VNNI peak (512-bit)");
    if (mq::has_vnni_probe()) {
      list.push_back(rate_json("int8 VNNI (zmm)", "compute", t, mq::vnni_peak(t, 512), 1e9));
      list.back()["datatype"] = "int8";
    }
    step("int8 VNNI peak (256-bit)");
    if (mq::has_vnni_probe()) {
      list.push_back(rate_json("int8 VNNI (ymm)", "compute", t, mq::vnni_peak(t, 256), 1e9));
      list.back()["datatype"] = "int8-ymm";
    }
    step("bf16 dot-product peak");
    if (mq::has_bf16_probe()) {
      list.push_back(rate_json("bf16 dot (vdpbf16ps)", "compute", t, mq::bf16_peak(t), 1e9));
      list.back()["datatype"] = "bf16";
    }
    for (const Level& lv : levels) {
      const int64_t ws = lv.shared ? lv.capacity / 2 : t * lv.capacity / 2;
      step(fmt::format("{} read bandwidth, {} KiB", lv.name, ws >> 10));
      list.push_back(rate_json(lv.name + " read", "bandwidth", t, mq::read_bandwidth(ws, t), 1e9));
      list.back()["level"] = lv.name;
      list.back()["working_set_bytes"] = ws;
    }
    step(fmt::format("DRAM read bandwidth, {} MiB", dram >> 20));
    list.push_back(rate_json("DRAM read", "bandwidth", t, mq::read_bandwidth(dram, t), 1e9));
    list.back()["level"] = "DRAM";
    list.back()["working_set_bytes"] = dram;
  }
  on_step(total, total, "done");
  nlohmann::json lv = nlohmann::json::array();
  for (const Level& l : levels) lv.push_back({{"name", l.name}, {"bytes", l.capacity}, {"shared", l.shared}});
  // Where the sizes came from; no level found is said, never left as a silent empty list.
  return {{"threads", threads}, {"levels", lv}, {"cache_source", ci.cache_source}, {"ceilings", list},
          {"levels_note", levels.empty() ? "no cache sizes found (sysfs, hwloc and CPUID gave none): every working set is charged to DRAM"
                                         : "cache sizes from " + ci.cache_source}};
}

std::string level_for(const nlohmann::json& ceilings, double bytes, int threads) {
  for (const auto& l : ceilings.at("levels")) {
    const double cap = l.at("bytes").get<double>() * (l.at("shared").get<bool>() ? 1 : threads);
    if (bytes <= cap) return l.at("name").get<std::string>();
  }
  return "DRAM";
}

Bound roofline_bound(const nlohmann::json& ceilings, double intensity, double working_set_bytes, int threads,
                     const std::string& compute) {
  // The measured thread count closest to the one asked for.
  int best_t = -1;
  // In 64 bits: a thread count from the file may be INT_MIN, whose distance overflows int.
  const auto dist = [&](int t) { return std::abs(static_cast<int64_t>(t) - threads); };
  for (const auto& t : ceilings.at("threads"))
    if (best_t < 0 || dist(t.get<int>()) < dist(best_t)) best_t = t.get<int>();
  Bound b;
  b.level = level_for(ceilings, working_set_bytes, best_t);
  double peak = 0, bw = 0;
  for (const auto& c : ceilings.at("ceilings")) {
    if (c.at("threads").get<int>() != best_t) continue;
    if (c.at("kind") == "compute" && c.value("datatype", "") == compute) peak = c.at("median").get<double>() * 1e9;
    if (c.at("kind") == "bandwidth" && c.value("level", "") == b.level) bw = c.at("median").get<double>() * 1e9;
  }
  if (peak <= 0 || bw <= 0)
    throw mq::Error(fmt::format("ceilings: no {} peak or {} bandwidth measured for {} threads", compute, b.level, best_t));
  b.bandwidth = bw;
  const std::string th = fmt::format("({} thread{})", best_t, best_t > 1 ? "s" : "");
  if (intensity * bw < peak) {
    b.attainable = intensity * bw;
    b.ceiling = fmt::format("{} read bandwidth {}", b.level, th);
  } else {
    b.attainable = peak;
    b.ceiling = fmt::format("{} peak {}", compute, th);
  }
  return b;
}

void check_ceilings(const nlohmann::json& ceilings, const std::string& file) {
  static const nlohmann::json spec = nlohmann::json::parse(R"({
    "threads": ["int"],
    "levels": [{"name": "string", "bytes": "number", "shared": "bool"}],
    "ceilings": [{"name": "string", "kind": "string", "threads": "int", "median": "number", "datatype?": "string", "level?": "string"}],
    "machine?": {"cpu_model?": "string", "cpu_family?": "int", "cpu_model_number?": "int"},
    "date?": "string",
    "compared_with_previous?": {"differs?": "bool", "reference_date?": "string", "reference_cpu?": "string", "cpu?": "string",
                                "summary?": "string"}
  })");
  mq::check_json_shape(ceilings, spec, file);
}

nlohmann::json compare_ceilings(const nlohmann::json& now, const nlohmann::json& reference, double tolerance) {
  const auto cpu = [](const nlohmann::json& j) {
    const nlohmann::json m = j.value("machine", nlohmann::json::object());
    return fmt::format("{} (family {}, model {})", m.value("cpu_model", std::string("unknown CPU")),
                       m.value("cpu_family", -1), m.value("cpu_model_number", -1));
  };
  const bool same_cpu = cpu(now) == cpu(reference);
  nlohmann::json ratios = nlohmann::json::array();
  std::string summary;
  bool differs = !same_cpu;
  for (const auto& c : now.at("ceilings")) {
    for (const auto& r : reference.value("ceilings", nlohmann::json::array())) {
      if (r.value("name", "") != c.at("name") || r.value("threads", -1) != c.at("threads")) continue;
      const double ref = r.value("median", 0.0);
      if (!(ref > 0)) continue;
      const double ratio = c.at("median").get<double>() / ref;
      ratios.push_back({{"name", c.at("name")}, {"threads", c.at("threads")}, {"ratio", ratio}});
      if (ratio > 1 + tolerance || ratio < 1 / (1 + tolerance)) {
        differs = true;
        summary += fmt::format("{}{} x{} {:.2f}x", summary.empty() ? "" : ", ", c.at("name").get<std::string>(),
                               c.at("threads").get<int>(), ratio);
      }
    }
  }
  if (ratios.empty()) differs = true;  // nothing in common: nothing can be compared
  return {{"reference_date", reference.value("date", std::string("unknown date"))},
          {"reference_cpu", cpu(reference)},
          {"cpu", cpu(now)},
          {"same_cpu", same_cpu},
          {"tolerance", tolerance},
          {"ratios", ratios},
          {"differs", differs},
          {"summary", summary}};
}

std::string ceilings_warning(const nlohmann::json& cmp) {
  if (!cmp.is_object() || !cmp.value("differs", false)) return "";
  std::string s = fmt::format("this machine's ceilings differ from the reference run's ({} on {}; now {})",
                              cmp.value("reference_date", ""), cmp.value("reference_cpu", ""), cmp.value("cpu", ""));
  if (!cmp.value("summary", std::string()).empty()) s += ": " + cmp.at("summary").get<std::string>();
  return s + "; speeds measured here are not comparable with the committed ones";
}

}  // namespace mqexp
