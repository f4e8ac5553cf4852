// A learner-style solution of lab 04 (energy per token, by phase), blocks A-D, written on 2026-11-29 from the handout alone
// (labs/04-energy/README.md, lab04.h, the starter and the headers the handout names; not the grader,
// the reference twin, solutions/ or the library's implementations of these functions). It passed on its first
// grader run; the test suite grades it (`bin/labs/lab04_solution --block ABCD`), and the planted bugs of issue 57
// were edits of it. Not the course's reference: that is src/labs/reference/lab04_ref.cpp.
#include "lab04.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "experiments/energy_work.h"    // mqexp::prefill_work, decode_step_work, post_work (mqexp::argmax: lab04.h)
#include "miniquant/energy/sysfs.h"     // mq::energy::read_sysfs, parse_u64
#include "miniquant/error.h"

namespace lab {

namespace {

// Reads a counter file as an unsigned integer; ok = false with a reason when it cannot be read or parsed.
bool read_u64(const std::string& path, uint64_t& out, std::string& why) {
  mq::energy::SysfsValue v = mq::energy::read_sysfs(path);
  if (!v.ok) {
    why = v.error;
    return false;
  }
  try {
    out = mq::energy::parse_u64(v.text, path);
  } catch (const mq::Error& e) {
    why = e.what();
    return false;
  }
  return true;
}

}  // namespace

uint64_t counter_delta(uint64_t before, uint64_t after, uint64_t max_range) {
  if (after >= before) return after - before;
  return (max_range - before) + after;
}

RaplMeter::RaplMeter(const std::string& root) : root_(root) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec) throw mq::Error("RAPL: cannot list " + root + ": " + ec.message());
  for (const auto& entry : it) {
    std::string d = entry.path().filename().string();
    if (d.rfind("intel-rapl:", 0) != 0) continue;  // "intel-rapl" itself is the control type
    std::error_code ec2;
    if (!fs::is_directory(entry.path(), ec2)) continue;
    dirs.push_back(d);
  }
  std::sort(dirs.begin(), dirs.end());

  for (const std::string& d : dirs) {
    const std::string base = root + "/" + d + "/";
    mq::energy::RaplZone z;
    z.dir = d;
    mq::energy::SysfsValue nm = mq::energy::read_sysfs(base + "name");
    z.name = nm.ok ? nm.text : d;
    std::string why;
    if (!read_u64(base + "energy_uj", z.last_uj, why)) {
      skipped_.push_back(d + ": energy_uj: " + why);
      continue;
    }
    if (!read_u64(base + "max_energy_range_uj", z.max_range_uj, why)) {
      skipped_.push_back(d + ": max_energy_range_uj: " + why);
      continue;
    }
    const bool sub = std::count(d.begin(), d.end(), ':') >= 2;
    z.in_total = sub ? (z.name == "dram") : (z.name != "psys");
    z.joules = 0;
    zones_.push_back(z);
  }

  bool any = false;
  for (const auto& z : zones_) any = any || z.in_total;
  if (!any) {
    std::string msg = "RAPL: no readable zone that counts in the total under " + root;
    msg += " (" + std::to_string(zones_.size()) + " readable";
    for (const auto& s : skipped_) msg += "; skipped " + s;
    msg += ")";
    throw mq::Error(msg);
  }
  t0_ = mq::energy::now_seconds();
}

std::string RaplMeter::source() const {
  for (const auto& z : zones_)
    if (z.in_total && z.name == "dram") return "rapl:package+dram";
  return "rapl:package";
}

mq::energy::Reading RaplMeter::read() {
  mq::energy::Reading r;
  for (auto& z : zones_) {
    const std::string path = root_ + "/" + z.dir + "/energy_uj";
    mq::energy::SysfsValue v = mq::energy::read_sysfs(path);
    if (!v.ok) throw mq::Error("RAPL: cannot read " + path + ": " + v.error);
    const uint64_t now = mq::energy::parse_u64(v.text, path);
    if (now > z.max_range_uj)
      throw mq::Error("RAPL: " + path + " reads " + std::to_string(now) + ", above max_energy_range_uj " +
                      std::to_string(z.max_range_uj) + " (corrupt counter)");
    z.joules += static_cast<double>(lab::counter_delta(z.last_uj, now, z.max_range_uj)) * 1e-6;
    z.last_uj = now;
  }
  for (const auto& z : zones_) {
    r.joules[z.name] += z.joules;
    if (z.in_total) r.total += z.joules;
  }
  r.seconds = mq::energy::now_seconds() - t0_;
  return r;
}

mq::energy::ModelBreakdown model_energy(const mq::energy::Coefficients& c, double seconds, const mq::energy::Work& w) {
  mq::energy::ModelBreakdown b;
  b.static_j = c.static_watts * seconds;
  b.compute_j = c.joules_per_flop_fp32 * w.flops_fp32 + c.joules_per_op_int8 * w.ops_int8;
  for (int l = 0; l < mq::energy::kLevels; ++l) b.level_j[l] = c.joules_per_byte[l] * w.bytes[l];
  return b;
}

int level_for(const std::vector<mq::CacheLevel>& caches, double bytes, int threads) {
  for (int level = 1; level <= 3; ++level) {
    for (const auto& c : caches) {
      if (c.level != level || c.type == "Instruction" || c.bytes <= 0) continue;
      const bool priv = c.shared_cpus.find(',') == std::string::npos && c.shared_cpus.find('-') == std::string::npos;
      const double cap = priv ? static_cast<double>(c.bytes) * threads : static_cast<double>(c.bytes);
      if (bytes <= cap) return level - 1;
      break;  // only the first data/unified cache of the level
    }
  }
  return 3;
}

mqexp::RunResult run_generation(minigpt::Model& m, mq::energy::Meter& meter, const std::vector<int32_t>& prompt, int gen,
                                const minigpt::Tokenizer* tok, const mqexp::WorkContext& w) {
  const int P = static_cast<int>(prompt.size());
  const int n_ctx = m.config().n_ctx;
  if (P < 1) throw mq::UsageError("run_generation: the prompt needs at least one token");
  if (gen < 2) throw mq::UsageError("run_generation: gen must be >= 2, got " + std::to_string(gen));
  if (static_cast<int64_t>(P) + gen - 1 > n_ctx)
    throw mq::UsageError("run_generation: prompt " + std::to_string(P) + " + gen " + std::to_string(gen) +
                         " - 1 does not fit n_ctx " + std::to_string(n_ctx));
  const int vocab = m.config().vocab_size;

  // The work of every step, each computed in its own phase.
  mq::energy::Work pre_w;
  {
    auto g = m.use_phase(minigpt::Phase::prefill);
    pre_w = mqexp::prefill_work(m, P, w);
  }
  std::vector<mq::energy::Work> dec_w;
  dec_w.reserve(gen - 1);
  {
    auto g = m.use_phase(minigpt::Phase::decode);
    for (int i = 0; i < gen - 1; ++i) dec_w.push_back(mqexp::decode_step_work(m, P + i, 1, w));
  }
  const mq::energy::Work post_w = mqexp::post_work(vocab, 1, w);

  mqexp::RunResult r;
  mq::energy::Reading start = meter.read();
  mq::energy::Reading last = start;
  auto boundary = [&](mqexp::PhaseStats& ph, const mq::energy::Work& work) {
    meter.add_work(work);
    mq::energy::Reading now = meter.read();
    ph.add(mq::energy::difference(last, now), work);
    last = now;
  };

  std::vector<float> logits = m.prefill(prompt);
  boundary(r.prefill, pre_w);
  int32_t token = mqexp::argmax(logits.data() + static_cast<size_t>(P - 1) * vocab, vocab);
  r.generated.push_back(token);
  boundary(r.post, post_w);
  for (int i = 0; i < gen - 1; ++i) {
    std::vector<float> l = m.decode(token);
    boundary(r.decode, dec_w[i]);
    token = mqexp::argmax(l.data(), vocab);
    r.generated.push_back(token);
    boundary(r.post, post_w);
  }
  if (tok != nullptr) r.text = tok->decode(r.generated);
  boundary(r.post, mq::energy::Work{});

  mq::energy::Work all = r.prefill.work;
  all += r.decode.work;
  all += r.post.work;
  r.total.add(mq::energy::difference(start, last), all);

  r.prefill.tokens = P;
  r.decode.tokens = gen - 1;
  r.post.tokens = gen;
  r.total.tokens = gen;
  return r;
}

namespace {

// Quantile by linear interpolation between order statistics at position (n - 1) q (numpy's default).
double quantile_sorted(const std::vector<double>& s, double q) {
  const double pos = (static_cast<double>(s.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, s.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

}  // namespace

mq::energy::Summary summarize_trials(const std::vector<double>& trials, int warmup) {
  if (warmup < 0) throw mq::Error("summarize_trials: negative warm-up count " + std::to_string(warmup));
  if (static_cast<size_t>(warmup) >= trials.size())
    throw mq::Error("summarize_trials: no trial left after " + std::to_string(warmup) + " warm-ups of " +
                    std::to_string(trials.size()));
  std::vector<double> x(trials.begin() + warmup, trials.end());
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i])) throw mq::Error("summarize_trials: trial " + std::to_string(i + warmup) + " is not finite");

  mq::energy::Summary s;
  s.n = static_cast<int>(x.size());
  double sum = 0;
  for (double v : x) sum += v;
  s.mean = sum / s.n;
  if (s.n > 1) {
    double ss = 0;
    for (double v : x) ss += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(ss / (s.n - 1));
  } else {
    s.sd = 0;
  }
  std::vector<double> sorted = x;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = quantile_sorted(sorted, 0.5);
  if (s.n > 1) {
    const double half = mq::energy::t975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
    s.ci_low = s.mean - half;
    s.ci_high = s.mean + half;
  } else {
    s.ci_low = s.ci_high = s.mean;
  }
  if (s.n >= 4) {
    const double q1 = quantile_sorted(sorted, 0.25), q3 = quantile_sorted(sorted, 0.75);
    const double iqr = q3 - q1;
    const double lo = q1 - 1.5 * iqr, hi = q3 + 1.5 * iqr;
    for (int i = 0; i < s.n; ++i)
      if (x[i] < lo || x[i] > hi) s.outliers.push_back(i);
  }
  return s;
}

mq::energy::Ratio paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw mq::Error("paired_ratio: " + std::to_string(a.size()) + " rounds of a, " + std::to_string(b.size()) + " of b");
  if (a.size() < 2) throw mq::Error("paired_ratio: needs at least 2 rounds, got " + std::to_string(a.size()));
  std::vector<double> logs(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    if (!std::isfinite(a[k]) || !std::isfinite(b[k]) || a[k] <= 0 || b[k] <= 0)
      throw mq::Error("paired_ratio: round " + std::to_string(k) + " is not finite and positive");
    logs[k] = std::log(a[k] / b[k]);
  }
  const mq::energy::Summary s = lab::summarize_trials(logs, 0);
  mq::energy::Ratio r;
  r.ratio = std::exp(s.mean);
  r.low = std::exp(s.ci_low);
  r.high = std::exp(s.ci_high);
  return r;
}

}  // namespace lab
