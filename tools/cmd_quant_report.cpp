// `miniquant quant-report`: bits, bytes and error of every scheme on one matrix (Gaussian or .npy).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "validators.h"
#include "miniquant/error.h"
#include "miniquant/npy.h"
#include "miniquant/random.h"
#include "miniquant/stats.h"

namespace mqcli {
namespace {

struct Options {
  std::string shape = "256x256";
  unsigned seed = kDefaultSeed;
  std::string npy;
  std::vector<std::string> schemes;
  bool schemes_given = false;  // --schemes on the command line (an empty list is then an error, not the table)
  bool json = false;
};

// Largest Gaussian test matrix: 2^28 floats (1 GiB); anything larger is a typo, not a report.
constexpr int64_t kMaxElements = int64_t{1} << 28;

std::pair<int64_t, int64_t> parse_shape(const std::string& text) {
  auto bad = [&] {
    return mq::UsageError(fmt::format("--shape '{}' is not ROWSxCOLS with positive sizes (e.g. 256x256)", text));
  };
  const size_t x = text.find('x');
  if (x == std::string::npos) throw bad();
  auto number = [&](std::string_view s) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v <= 0) throw bad();
    return v;
  };
  const int64_t r = number(std::string_view(text).substr(0, x)), c = number(std::string_view(text).substr(x + 1));
  int64_t n = 0;
  if (__builtin_mul_overflow(r, c, &n) || n > kMaxElements)
    throw mq::UsageError(fmt::format("--shape {}x{} has more than {} elements (the largest test matrix)", r, c,
                                     kMaxElements));
  return {r, c};
}

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

void run(const Options& o) {
  std::vector<mq::Scheme> schemes;
  if (!o.schemes_given) {
    schemes = mq::scheme_table();
  } else {
    for (const auto& n : split_names_given(o.schemes, "--schemes")) schemes.push_back(mq::Scheme::parse(n));
  }

  mq::Matrix m;
  nlohmann::json source;
  if (!o.npy.empty()) {
    m = mq::load_npy(o.npy);
    // An empty matrix has no error to measure and no bits per weight: a report of it would be zeros.
    if (m.rows == 0 || m.cols == 0)
      throw mq::UsageError(fmt::format("--npy {}: the matrix is empty ({}x{}); there is nothing to quantize", o.npy, m.rows, m.cols));
    source = {{"npy", o.npy}, {"shape", {m.rows, m.cols}}};
  } else {
    const auto [r, c] = parse_shape(o.shape);
    m.rows = r;
    m.cols = c;
    m.data = mq::gaussian_matrix(r, c, o.seed);
    source = {{"gaussian", {{"mean", 0.0}, {"stddev", 1.0}}}, {"shape", {r, c}}, {"seed", o.seed}};
  }

  // Schemes whose group size does not divide the width are "n/a" rows beside the others; when no scheme
  // fits there is no report to make: exit 2 with the first one's reason, before anything is printed.
  const auto fits = [&](const mq::Scheme& s) {
    try {
      s.check_shape(m.rows, m.cols);
      return true;
    } catch (const mq::UsageError&) {
      return false;
    }
  };
  if (std::none_of(schemes.begin(), schemes.end(), fits)) {
    schemes.front().check_shape(m.rows, m.cols);  // throws the reason
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json) {
    fmt::print("quant-report: {}x{} {}\n", m.rows, m.cols,
               o.npy.empty() ? fmt::format("Gaussian N(0,1) (seed {})", o.seed) : o.npy);  // a file has no seed
    fmt::print("{:<22} {:>8} {:>13} {:>11} {:>9} {:>9} {:>11} {:>11} {:>9} {:>9}\n", "scheme", "bits/w", "bytes",
               "codes", "scales", "zeros", "max |err|", "rms err", "SQNR dB", "quant ms");
  }
  for (const auto& s : schemes) {
    try {
      const mq::QuantStats st = mq::measure_scheme(m.data.data(), m.rows, m.cols, s, o.npy.empty() ? "gaussian" : o.npy);
      rows.push_back({{"scheme", s.name()},
                      {"bits_per_weight", st.bits_per_weight},
                      {"bytes", st.storage.total()},
                      {"code_bytes", st.storage.code_bytes},
                      {"scale_bytes", st.storage.scale_bytes},
                      {"zero_bytes", st.storage.zero_bytes},
                      {"max_abs_error", st.max_abs_error},
                      {"rms_error", st.rms_error},
                      {"sqnr_db", finite_or_null(st.sqnr_db)},
                      {"quantize_ms", st.quantize_seconds * 1e3}});
      if (!o.json)
        fmt::print("{:<22} {:>8.4f} {:>13} {:>11} {:>9} {:>9} {:>11.3e} {:>11.3e} {:>9.2f} {:>9.1f}\n", s.name(),
                   st.bits_per_weight, st.storage.total(), st.storage.code_bytes, st.storage.scale_bytes,
                   st.storage.zero_bytes, st.max_abs_error, st.rms_error, st.sqnr_db,
                   st.quantize_seconds * 1e3);
    } catch (const mq::UsageError& e) {
      // A group size that does not divide this matrix's width: the other schemes still report.
      rows.push_back({{"scheme", s.name()}, {"error", e.what()}});
      if (!o.json) fmt::print("{:<22} n/a: {}\n", s.name(), e.what());
    }
  }
  if (o.json) fmt::print("{}\n", nlohmann::json{{"source", source}, {"schemes", rows}}.dump(2));
}

}  // namespace

void register_quant_report(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "quant-report", "Bits per weight, bytes and quantization error (max, RMS, SQNR) of every scheme on one matrix");
  auto* shape = cmd->add_option("--shape", o->shape, "ROWSxCOLS of a Gaussian N(0,1) test matrix")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the Gaussian matrix")->capture_default_str();
  cmd->add_option("--npy", o->npy, "a real matrix from a .npy file (float16/32/64, 1-D or 2-D)")
      ->check(CLI::ExistingFile)
      ->excludes(shape);
  cmd->add_option("--schemes", o->schemes, "scheme names, separated by commas or spaces (default: the whole format table)")
      ->delimiter(',');
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->callback([o, cmd] {
    o->schemes_given = cmd->count("--schemes") > 0;
    run(*o);
  });
}

}  // namespace mqcli
