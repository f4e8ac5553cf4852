#include "miniquant/energy/model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <Eigen/Dense>
#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"

namespace mq::energy {
namespace {

// Field names in the file, in the order of the fit's columns.
constexpr int kCols = 3 + kLevels;
const char* const kNames[kCols] = {"static_watts",       "joules_per_flop_fp32", "joules_per_op_int8",
                                   "joules_per_byte_L1", "joules_per_byte_L2",   "joules_per_byte_L3",
                                   "joules_per_byte_DRAM"};

double* field(Coefficients& c, int i) {
  if (i == 0) return &c.static_watts;
  if (i == 1) return &c.joules_per_flop_fp32;
  if (i == 2) return &c.joules_per_op_int8;
  return &c.joules_per_byte[i - 3];
}

// The regressors of one sample in column order: E = sum_i x_i * coefficient_i.
std::array<double, kCols> row_of(const CalibrationSample& s) {
  return {s.seconds, s.work.flops_fp32, s.work.ops_int8, s.work.bytes[0], s.work.bytes[1], s.work.bytes[2], s.work.bytes[3]};
}

}  // namespace

Coefficients load_coefficients(const std::string& path) {
  // The checked reader (util/json_checked.h): a coefficients file is ~2 KB, so 1 MiB is a wrong file;
  // nesting, duplicate keys and memory are bounded (a 40 KB file nested 20,000 deep once took 1.36 GB).
  return coefficients_from_json(mq::read_json_file(path, kMaxCoefficientsBytes), path);
}

Coefficients coefficients_from_json(const nlohmann::json& j, const std::string& path) {
  Coefficients c;
  c.file = path;
  if (!j.contains("coefficients") || !j["coefficients"].is_object())
    throw mq::Error(fmt::format("{}: no \"coefficients\" object", path));
  const auto& co = j["coefficients"];
  for (int i = 0; i < kCols; ++i) {
    if (!co.contains(kNames[i])) throw mq::Error(fmt::format("{}: coefficient \"{}\" missing", path, kNames[i]));
    const auto& e = co[kNames[i]];
    if (!e.is_object() || !e.contains("value") || !e["value"].is_number())
      throw mq::Error(fmt::format("{}: coefficient \"{}\" needs a numeric \"value\"", path, kNames[i]));
    const double v = e["value"].get<double>();
    if (!std::isfinite(v) || v < 0)
      throw mq::Error(fmt::format("{}: coefficient \"{}\" = {} must be finite and >= 0", path, kNames[i], v));
    *field(c, i) = v;
    c.sources[kNames[i]] = e.value("source", nlohmann::json("(no source given)"));
  }
  if (j.contains("calibrated") && !j["calibrated"].is_boolean())
    throw mq::Error(fmt::format("{}: \"calibrated\" must be true or false, got {}", path, mq::json_summary(j["calibrated"])));
  c.calibrated = j.value("calibrated", false);
  return c;
}

nlohmann::json coefficients_json(const Coefficients& c) {
  nlohmann::json co;
  Coefficients copy = c;
  for (int i = 0; i < kCols; ++i)
    co[kNames[i]] = {{"value", *field(copy, i)},
                     {"source", c.sources.contains(kNames[i]) ? c.sources[kNames[i]] : nlohmann::json("fitted")}};
  return {{"calibrated", c.calibrated}, {"coefficients", co}};
}

ModelBreakdown model_energy(const Coefficients& c, double seconds, const Work& w) {
  ModelBreakdown b;
  b.static_j = c.static_watts * seconds;
  b.compute_j = c.joules_per_flop_fp32 * w.flops_fp32 + c.joules_per_op_int8 * w.ops_int8;
  for (int l = 0; l < kLevels; ++l) b.level_j[l] = c.joules_per_byte[l] * w.bytes[l];
  return b;
}

int level_for(const std::vector<CacheLevel>& caches, double bytes, int threads) {
  for (int lvl = 1; lvl <= 3; ++lvl) {
    for (const auto& c : caches) {
      if (c.level != lvl || c.type == "Instruction" || c.bytes <= 0) continue;
      // A cache listed for one CPU is private: each thread brings its own.
      const bool shared = c.shared_cpus.find_first_of(",-") != std::string::npos;
      const double cap = static_cast<double>(c.bytes) * (shared ? 1 : std::max(1, threads));
      if (bytes <= cap) return lvl - 1;
    }
  }
  return 3;
}

Calibration calibrate(const std::vector<CalibrationSample>& samples, const Coefficients& prior) {
  const int n = static_cast<int>(samples.size());
  if (n < kCols)
    throw mq::Error(fmt::format("calibrate: {} runs for {} coefficients; need at least {}", n, kCols, kCols));
  Calibration cal;
  cal.fitted = prior;
  // Columns the runs never exercise cannot be fitted: they keep the prior and leave the system.
  std::vector<int> used;
  Eigen::VectorXd y(n);
  for (int r = 0; r < n; ++r) y(r) = samples[r].joules;
  for (int i = 0; i < kCols; ++i) {
    double mx = 0;
    for (const auto& s : samples) mx = std::max(mx, std::abs(row_of(s)[i]));
    if (mx > 0) used.push_back(i);
    else cal.notes.push_back(fmt::format("{}: no run exercises it; kept the prior {:.3g}", kNames[i], *field(cal.fitted, i)));
  }
  Eigen::MatrixXd A(n, static_cast<int>(used.size()));
  Eigen::VectorXd scale(static_cast<int>(used.size()));
  for (int k = 0; k < static_cast<int>(used.size()); ++k) {
    for (int r = 0; r < n; ++r) A(r, k) = row_of(samples[r])[used[k]];
    scale(k) = A.col(k).norm();  // seconds and bytes differ by 1e9: scale columns for a stable solve
    A.col(k) /= scale(k);
  }
  for (int i = 0; i < kCols; ++i)
    if (std::find(used.begin(), used.end(), i) == used.end()) {
      const double prior_v = *field(cal.fitted, i);
      for (int r = 0; r < n; ++r) y(r) -= prior_v * row_of(samples[r])[i];
    }
  const Eigen::VectorXd x = A.colPivHouseholderQr().solve(y);
  for (int k = 0; k < static_cast<int>(used.size()); ++k) {
    double v = x(k) / scale(k);
    if (v < 0) {
      cal.notes.push_back(fmt::format("{}: least squares gave {:.3g} < 0; clamped to 0 (runs of more varied intensity "
                                      "would separate it)", kNames[used[k]], v));
      v = 0;
    }
    *field(cal.fitted, used[k]) = v;
    cal.fitted.sources[kNames[used[k]]] = fmt::format("least-squares fit to {} measured runs", n);
  }
  double se = 0;
  for (const auto& s : samples) {
    const double e = model_energy(cal.fitted, s.seconds, s.work).total();
    se += s.joules > 0 ? std::pow((e - s.joules) / s.joules, 2) : 0;
  }
  cal.rms_relative_error = std::sqrt(se / n);
  cal.fitted.calibrated = true;
  cal.fitted.file = "";
  return cal;
}

ModelMeter::ModelMeter(Coefficients c) : c_(std::move(c)), t0_(now_seconds()) {}

Reading ModelMeter::read() {
  Reading r;
  r.seconds = now_seconds() - t0_;
  const ModelBreakdown b = model_energy(c_, r.seconds, work_);
  r.joules["static"] = b.static_j;
  r.joules["compute"] = b.compute_j;
  for (int l = 0; l < kLevels; ++l) r.joules[kLevelNames[l]] = b.level_j[l];
  r.total = b.total();
  return r;
}

}  // namespace mq::energy
