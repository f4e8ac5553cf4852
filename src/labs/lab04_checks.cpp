// Grader of lab 04 (energy per token by phase): the learner's RAPL reader against mq::energy::RaplMeter on
// powercap trees laid out in a temporary folder (several zones, wraps, unreadable files), the energy model on a
// hand-computed case and against mq::energy::model_energy / level_for, phase tagging of a real MiniGPT
// generation against mqexp::run_generation under a deterministic meter, trial statistics and the paired ratio of
// interleaved rounds against mq::energy::summarize_trials / paired_ratio, and the learner's own `miniquant
// energy` run with the answers, whose numbers are looked up in its summary.json.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "lab04.h"
#include "labs/answers.h"
#include "labs/grade.h"
#include "labs/ownership.h"
#include "labs/workbench.h"
#include "miniquant/energy/fake_powercap.h"
#include "miniquant/error.h"
#include "miniquant/random.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"

namespace mqlab {
namespace {

namespace fs = std::filesystem;
namespace en = mq::energy;

bool close(double a, double b, double rel = 1e-12) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)) + 1e-300; }

// ---- block A: RAPL --------------------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / fmt::format("mq_lab04_{}_{}", name, ::getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

std::string zones_text(const std::vector<en::RaplZone>& z) {
  std::string s;
  for (const auto& x : z)
    s += fmt::format("{}{} {} {}{}", s.empty() ? "" : ", ", x.dir, x.name, x.max_range_uj, x.in_total ? " (total)" : "");
  return s;
}

// "" when the two readings agree (zones and total, 1e-12 relative), else the first difference.
std::string compare_readings(const en::Reading& got, const en::Reading& want) {
  for (const auto& [zone, j] : want.joules) {
    const auto it = got.joules.find(zone);
    if (it == got.joules.end()) return fmt::format("zone {} missing", zone);
    if (!close(it->second, j)) return fmt::format("zone {}: {:.9g} J (library {:.9g} J)", zone, it->second, j);
  }
  if (got.joules.size() != want.joules.size()) return fmt::format("{} zones (library {})", got.joules.size(), want.joules.size());
  if (!close(got.total, want.total)) return fmt::format("total {:.9g} J (library {:.9g} J)", got.total, want.total);
  return "";
}

template <class F>
std::string throws_error(F f) {
  try {
    f();
  } catch (const mq::Error& e) {
    return std::string("threw mq::Error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("threw another exception: ") + e.what();
  }
  return "did not throw";
}

void block_a(Checks& c) {
  {  // counter_delta against the library, wraps included.
    mq::Rng rng(42);
    std::string first;
    const uint64_t ranges[] = {100, 2000000, 262143328850ull, std::numeric_limits<uint32_t>::max()};
    int n = 0;
    for (uint64_t range : ranges)
      for (int k = 0; k < 250; ++k) {
        const uint64_t a = static_cast<uint64_t>(rng.uniform() * static_cast<double>(range));
        const uint64_t b = k % 5 == 0 ? a : static_cast<uint64_t>(rng.uniform() * static_cast<double>(range));
        ++n;
        const uint64_t want = en::counter_delta(a, b, range), got = lab::counter_delta(a, b, range);
        if (got != want && first.empty()) first = fmt::format("counter_delta({}, {}, {}) = {} (library {})", a, b, range, got, want);
      }
    c.expect(first.empty(), fmt::format("counter_delta on {} pairs, half of them across a wrap", n), "equal to mq::energy::counter_delta",
             first.empty() ? "all equal" : first);
    const uint64_t wrap = lab::counter_delta(1900000, 100000, 2000000);
    c.expect(wrap == 200000, "a counter at 1,900,000 uJ read again at 100,000 uJ (range 2,000,000)", "200000 uJ: it wrapped once",
             fmt::format("{} uJ", wrap));
  }
  TempDir t("powercap");
  en::write_fake_powercap(t.path.string());  // the layout test_energy checks the library against
  const std::string root = t.path.string();
  en::RaplMeter lib(root);
  lab::RaplMeter mine(root);
  c.expect(zones_text(mine.zones()) == zones_text(lib.zones()), "zones found under the tree (8 folders, 3 of them unreadable)",
           zones_text(lib.zones()), zones_text(mine.zones()));
  std::string skipped_ok = mine.skipped().size() == lib.probe().skipped.size() ? "" : fmt::format("{} skipped (library {})", mine.skipped().size(), lib.probe().skipped.size());
  for (const char* d : {"intel-rapl:1", "intel-rapl:2", "intel-rapl:3"}) {
    bool named = false;
    for (const auto& s : mine.skipped()) named = named || s.find(d) != std::string::npos;
    if (!named && skipped_ok.empty()) skipped_ok = fmt::format("no skipped entry names {}", d);
  }
  c.expect(skipped_ok.empty(), "zones skipped: a counter that is a folder, a range that is not a number, an empty counter",
           "3, each naming its folder", skipped_ok.empty() ? "3, each naming its folder" : skipped_ok);
  c.expect(mine.source() == lib.source(), "source()", lib.source(), mine.source());
  const en::Reading l0 = lib.read(), m0 = mine.read();
  std::string d = compare_readings(m0, l0);
  // Three more readings: package-0 and dram wrap, core and psys count up, then dram wraps again.
  const std::vector<std::vector<std::pair<const char*, const char*>>> steps = {
      {{"intel-rapl:0", "100000"}, {"intel-rapl:0:0", "750000"}, {"intel-rapl:0:1", "700000"}, {"intel-rapl:4", "5000010"}},
      {{"intel-rapl:0:1", "50000"}, {"intel-rapl:0", "100500"}},
      {{"intel-rapl:0", "1999999"}, {"intel-rapl:0:0", "1000"}},
  };
  double wrap_j = -1;
  for (size_t k = 0; k < steps.size() && d.empty(); ++k) {
    for (const auto& [zone, v] : steps[k]) put(t.path / zone / "energy_uj", v);
    const en::Reading l = lib.read(), m = mine.read();
    d = compare_readings(m, l);
    if (!d.empty()) d = fmt::format("reading {}: {}", k + 2, d);
    if (k == 0) wrap_j = m.joules.count("package-0") ? m.joules.at("package-0") - m0.joules.at("package-0") : -1;
  }
  c.expect(d.empty(), "4 readings with counters wrapping (package-0 once, dram twice) and psys counting up",
           "every zone's joules and the total (packages + dram, never core or psys) equal to mq::energy::RaplMeter's",
           d.empty() ? "all equal" : d);
  c.expect(close(wrap_j, 0.2), "package-0 from 1,900,000 to 100,000 uJ (range 2,000,000)", "0.2 J (unwrapped)",
           fmt::format("{:.9g} J", wrap_j));
  // Errors: a counter that vanishes mid-run, one above its range, garbage: an error naming the file, never a zero.
  fs::remove(t.path / "intel-rapl:0:1" / "energy_uj");
  const std::string vanished = throws_error([&] { (void)mine.read(); });
  c.expect(vanished.rfind("threw mq::Error", 0) == 0, "dram's energy_uj removed mid-run", "read() throws mq::Error", vanished);
  put(t.path / "intel-rapl:0:1" / "energy_uj", "");
  const std::string empty = throws_error([&] { (void)mine.read(); });
  c.expect(empty.rfind("threw mq::Error", 0) == 0, "dram's energy_uj empty mid-run (read as 0, it would pass for a wrap)", "read() throws mq::Error",
           empty);
  put(t.path / "intel-rapl:0:1" / "energy_uj", "5000000");
  const std::string above = throws_error([&] { (void)mine.read(); });
  c.expect(above.rfind("threw mq::Error", 0) == 0, "dram reads 5,000,000 uJ, above its range of 1,000,000", "read() throws mq::Error", above);
  put(t.path / "intel-rapl:0:1" / "energy_uj", "12abc");
  const std::string garbage = throws_error([&] { (void)mine.read(); });
  c.expect(garbage.rfind("threw mq::Error", 0) == 0, "dram reads \"12abc\"", "read() throws mq::Error", garbage);

  // A tree with only psys and an unreadable package, and a missing root: nothing to measure.
  TempDir u("powercap_none");
  put(u.path / "intel-rapl:0" / "name", "package-0");
  put(u.path / "intel-rapl:0" / "max_energy_range_uj", "100");
  put(u.path / "intel-rapl:1" / "name", "psys");
  put(u.path / "intel-rapl:1" / "energy_uj", "7");
  put(u.path / "intel-rapl:1" / "max_energy_range_uj", "100");
  const std::string none = throws_error([&] { lab::RaplMeter m(u.path.string()); });
  c.expect(none.rfind("threw mq::Error", 0) == 0, "only psys readable (the package has no energy_uj)", "the constructor throws mq::Error", none);
  const std::string missing = throws_error([&] { lab::RaplMeter m((u.path / "absent").string()); });
  c.expect(missing.rfind("threw mq::Error", 0) == 0, "a powercap root that does not exist", "the constructor throws mq::Error", missing);
  put(u.path / "intel-rapl:0" / "energy_uj", "7");
  std::string src;
  try {
    src = lab::RaplMeter(u.path.string()).source();
  } catch (const std::exception& e) {
    src = std::string("threw: ") + e.what();
  }
  c.expect(src == "rapl:package", "a package without dram", "source() rapl:package", src);
}

// ---- block B: the energy model -------------------------------------------------------------------------

void block_b(Checks& c, const LabOptions& o) {
  // A case computed by hand with the published coefficients of data/energy_model.json (joules per flop, op and
  // byte; watts): 0.5 s, 1e9 fp32 flops, 2e9 int8 ops, 1e9 B from L1, 2e8 from L2, 4e7 from L3, 1e8 from DRAM.
  //   static 6 W x 0.5 s = 3 J; compute 2.3e-12 x 1e9 + 1.5e-13 x 2e9 = 2.3e-3 + 3e-4 = 2.6e-3 J;
  //   L1 2.5e-12 x 1e9 = 2.5e-3 J; L2 1.25e-11 x 2e8 = 2.5e-3 J; L3 2.5e-11 x 4e7 = 1e-3 J; DRAM 1.625e-10 x 1e8
  //   = 1.625e-2 J; total 3.02485 J.
  const en::Coefficients co = en::load_coefficients(o.root + "/data/energy_model.json");
  en::Work w;
  w.flops_fp32 = 1e9;
  w.ops_int8 = 2e9;
  w.bytes[0] = 1e9;
  w.bytes[1] = 2e8;
  w.bytes[2] = 4e7;
  w.bytes[3] = 1e8;
  const en::ModelBreakdown b = lab::model_energy(co, 0.5, w);
  const double hand[6] = {3.0, 2.6e-3, 2.5e-3, 2.5e-3, 1e-3, 1.625e-2};
  const double got[6] = {b.static_j, b.compute_j, b.level_j[0], b.level_j[1], b.level_j[2], b.level_j[3]};
  const char* names[6] = {"static", "compute", "L1", "L2", "L3", "DRAM"};
  std::string bad;
  for (int i = 0; i < 6; ++i)
    if (!close(got[i], hand[i], 1e-9) && bad.empty()) bad = fmt::format("{} {:.6g} J (by hand {:.6g} J)", names[i], got[i], hand[i]);
  c.expect(bad.empty() && close(b.total(), 3.02485, 1e-9), "the hand-computed case: 0.5 s, 1e9 flops, 2e9 int8 ops, bytes 1e9 / 2e8 / 4e7 / 1e8",
           "static 3 J, compute 2.6 mJ, L1 2.5 mJ, L2 2.5 mJ, L3 1 mJ, DRAM 16.25 mJ, total 3.02485 J",
           bad.empty() ? fmt::format("total {:.6g} J", b.total()) : bad);
  mq::Rng rng(42);
  std::string first;
  for (int k = 0; k < 200 && first.empty(); ++k) {
    en::Coefficients r = co;
    r.static_watts = rng.uniform() * 20;
    r.joules_per_flop_fp32 = rng.uniform() * 1e-11;
    r.joules_per_op_int8 = rng.uniform() * 1e-12;
    for (double& j : r.joules_per_byte) j = rng.uniform() * 1e-9;
    en::Work x;
    x.flops_fp32 = rng.uniform() * 1e10;
    x.ops_int8 = k % 3 == 0 ? 0.0 : rng.uniform() * 1e10;
    for (double& y : x.bytes) y = rng.uniform() * 1e9;
    const double sec = rng.uniform();
    const en::ModelBreakdown want = en::model_energy(r, sec, x), mine = lab::model_energy(r, sec, x);
    const double wv[6] = {want.static_j, want.compute_j, want.level_j[0], want.level_j[1], want.level_j[2], want.level_j[3]};
    const double mv[6] = {mine.static_j, mine.compute_j, mine.level_j[0], mine.level_j[1], mine.level_j[2], mine.level_j[3]};
    for (int i = 0; i < 6 && first.empty(); ++i)
      if (!close(mv[i], wv[i], 1e-12)) first = fmt::format("case {}: {} {:.9g} J (library {:.9g} J)", k, names[i], mv[i], wv[i]);
  }
  c.expect(first.empty(), "200 random coefficients, times and work", "every term equal to mq::energy::model_energy (1e-12)",
           first.empty() ? "all equal" : first);

  // Which level a working set is read from: private caches count once per thread, shared ones once;
  // instruction caches hold no data.
  const std::vector<std::vector<mq::CacheLevel>> machines = {
      {{1, "Data", 32 << 10, "0"}, {1, "Instruction", 64 << 10, "0"}, {2, "Unified", 512 << 10, "0"}, {3, "Unified", 16 << 20, "0-7"}},
      {{1, "Data", 48 << 10, "0"}, {2, "Unified", 2 << 20, "0-1"}, {3, "Unified", 32 << 20, "0-15"}},
      {{1, "Data", 32 << 10, "0"}, {2, "Unified", 1 << 20, "0"}},
      {},
      // The instruction cache listed first, and shared caches whose CPU lists have commas.
      {{1, "Instruction", 64 << 10, "0"}, {1, "Data", 32 << 10, "0"}, {2, "Unified", 1 << 20, "0,2"}, {3, "Unified", 8 << 20, "0,2,4,6"}},
  };
  std::string lv;
  int n = 0;
  // A geometric sweep, and every capacity exactly and one byte over it (a working set that fills a cache fits).
  std::vector<double> sizes;
  for (double bytes = 1024; bytes < 4e9; bytes *= 1.7) sizes.push_back(bytes);
  for (const auto& m : machines)
    for (const auto& cl : m)
      for (int t : {1, 2, 8}) sizes.push_back(static_cast<double>(cl.bytes) * t), sizes.push_back(static_cast<double>(cl.bytes) * t + 1);
  for (size_t mi = 0; mi < machines.size(); ++mi)
    for (double bytes : sizes)
      for (int threads : {1, 2, 8}) {
        ++n;
        const int want = en::level_for(machines[mi], bytes, threads), got_l = lab::level_for(machines[mi], bytes, threads);
        if (want != got_l && lv.empty())
          lv = fmt::format("machine {}, {:.0f} bytes, {} threads: level {} (library {})", mi, bytes, threads, got_l, want);
      }
  c.expect(lv.empty(),
           fmt::format("{} working sets on 5 cache layouts (private, shared, no L3, none, L1i first and shared lists with commas), "
                       "each capacity exactly", n),
           "equal to mq::energy::level_for",
           lv.empty() ? "all equal" : lv);
  const int l40 = lab::level_for(machines[0], 40 << 10, 1), l40x2 = lab::level_for(machines[0], 40 << 10, 2);
  c.expect(l40 == 1 && l40x2 == 0, "40 KiB with a private 32 KiB L1d (and a 64 KiB L1i)", "L2 (1) on one thread, L1 (0) on two",
           fmt::format("{} on one thread, {} on two", l40, l40x2));
}

// ---- block C: phase tagging ----------------------------------------------------------------------------

// A meter whose readings depend only on how often it was read and on the work it was told: two runs that read
// it at the same boundaries with the same work get the same joules, bit for bit.
class CountingMeter final : public en::Meter {
 public:
  std::string source() const override { return "counting"; }
  bool measured() const override { return true; }
  en::Reading read() override {
    ++reads_;
    en::Reading r;
    r.seconds = 1e-3 * reads_ + 1e-15 * bytes_;
    r.joules["package-0"] = 0.5 * reads_ + 1e-9 * bytes_ + 1e-12 * ops_;
    r.joules["core"] = 0.25 * reads_;
    r.total = r.joules["package-0"];
    return r;
  }
  void add_work(const en::Work& w) override {
    bytes_ += w.total_bytes();
    ops_ += w.flops_fp32 + 3 * w.ops_int8;
  }
  int reads() const { return reads_; }

 private:
  int reads_ = 0;
  double bytes_ = 0, ops_ = 0;
};

std::string compare_phase(const char* name, const mqexp::PhaseStats& g, const mqexp::PhaseStats& w) {
  if (g.tokens != w.tokens) return fmt::format("{}: {} tokens (library {})", name, g.tokens, w.tokens);
  // The work first: with the counting meter, work charged to another phase also moves the joules.
  if (!close(g.work.flops_fp32, w.work.flops_fp32, 1e-9) || !close(g.work.ops_int8, w.work.ops_int8, 1e-9) ||
      !close(g.work.total_bytes(), w.work.total_bytes(), 1e-9))
    return fmt::format("{}: work {:.6g} flops, {:.6g} int8 ops, {:.6g} bytes (library {:.6g}, {:.6g}, {:.6g}): computed in its phase?", name,
                       g.work.flops_fp32, g.work.ops_int8, g.work.total_bytes(), w.work.flops_fp32, w.work.ops_int8, w.work.total_bytes());
  if (!close(g.joules, w.joules)) return fmt::format("{}: {:.9g} J (library {:.9g} J): read at other boundaries?", name, g.joules, w.joules);
  if (!close(g.seconds, w.seconds)) return fmt::format("{}: {:.9g} s (library {:.9g} s)", name, g.seconds, w.seconds);
  for (const auto& [z, j] : w.zones)
    if (!g.zones.count(z) || !close(g.zones.at(z), j)) return fmt::format("{}: zone {} differs from the library's", name, z);
  return "";
}

void block_c(Checks& c, const LabOptions& o) {
  const Workbench wb = load_workbench(o);
  mqexp::WorkContext wc;
  wc.caches = mq::cpu_info().caches;
  wc.threads = 2;
  // A plain fp32 model, and a phase split (int8 activations in prefill, bf16 in decode): its work differs by
  // phase, so the work of each phase must be computed in that phase (Model::use_phase).
  struct Case {
    const char* model;
    int prompt, gen;
    bool tok;
  };
  for (const Case& k : {Case{"fp32", 12, 6, true}, Case{"int4-g64[prefill=+a8,decode=+bf16]", 20, 5, false}, Case{"fp32", 3, 2, true}}) {
    minigpt::Model m = wb.fresh();
    if (std::string(k.model) != "fp32") minigpt::quantize_model(m, minigpt::QuantPlan::uniform(k.model));
    const std::vector<int32_t> prompt(wb.test.begin() + 100, wb.test.begin() + 100 + k.prompt);
    CountingMeter ml, mm;
    const mqexp::RunResult want = mqexp::run_generation(m, ml, prompt, k.gen, k.tok ? &wb.tok : nullptr, wc);
    const mqexp::RunResult got = lab::run_generation(m, mm, prompt, k.gen, k.tok ? &wb.tok : nullptr, wc);
    std::string d = got.generated == want.generated ? "" : "the generated tokens differ from the library's (greedy)";
    for (const char* ph : {"prefill", "decode", "post", "total"})
      if (d.empty()) d = compare_phase(ph, got.phase(ph), want.phase(ph));
    c.expect(d.empty(), fmt::format("{}: prompt {}, {} generated{}", k.model, k.prompt, k.gen, k.tok ? ", detokenized" : ""),
             "tokens, joules, seconds, zones and work of every phase equal to mqexp::run_generation's", d.empty() ? "all equal" : d);
    const double sum_j = got.prefill.joules + got.decode.joules + got.post.joules;
    const double sum_s = got.prefill.seconds + got.decode.seconds + got.post.seconds;
    c.expect(close(sum_j, got.total.joules, 1e-12) && close(sum_s, got.total.seconds, 1e-12), fmt::format("{}: phases against the total", k.model),
             "prefill + decode + post = total, in joules and seconds",
             fmt::format("{:.9g} + {:.9g} + {:.9g} = {:.9g} J against {:.9g} J", got.prefill.joules, got.decode.joules, got.post.joules, sum_j,
                         got.total.joules));
  }
  minigpt::Model m = wb.fresh();
  CountingMeter meter;
  const std::vector<int32_t> p(wb.test.begin(), wb.test.begin() + 8);
  const auto usage = [&](const std::vector<int32_t>& prompt, int gen) {
    try {
      (void)lab::run_generation(m, meter, prompt, gen, nullptr, wc);
    } catch (const mq::UsageError&) {
      return std::string("mq::UsageError");
    } catch (const std::exception& e) {
      return std::string("another exception: ") + e.what();
    }
    return std::string("no error");
  };
  const int n_ctx = m.config().n_ctx;
  const std::string g1 = usage(p, 1), empty = usage({}, 4), ctx = usage(p, n_ctx);
  const int reads_before = meter.reads();
  const std::string over = usage(p, n_ctx - 6);
  const bool read = meter.reads() != reads_before;  // the model refuses too, but only after prefill and decode ran
  c.expect(g1 == "mq::UsageError" && empty == "mq::UsageError" && ctx == "mq::UsageError" && over == "mq::UsageError" && !read,
           "gen 1, an empty prompt, prompt + gen - 1 beyond n_ctx (by far, and by one)", "mq::UsageError for each, before the meter is read",
           fmt::format("{}, {}, {}, {}{}", g1, empty, ctx, over, read ? " (by one: after the generation had started)" : ""));
  // Exactly at the bound: prompt 8 + gen - 1 == n_ctx fits (the last generated token is never fed back).
  const std::string fits = usage(p, n_ctx - 7);
  c.expect(fits == "no error", fmt::format("prompt 8 + {} generated - 1 == n_ctx {}", n_ctx - 7, n_ctx), "runs (it fits exactly)", fits);
}

// ---- block D: trial statistics ---------------------------------------------------------------------------

std::string compare_summary(const en::Summary& g, const en::Summary& w) {
  if (g.n != w.n) return fmt::format("n {} (library {})", g.n, w.n);
  const double gv[8] = {g.mean, g.sd, g.median, g.min, g.max, g.ci_low, g.ci_high, 0};
  const double wv[8] = {w.mean, w.sd, w.median, w.min, w.max, w.ci_low, w.ci_high, 0};
  const char* names[7] = {"mean", "sd", "median", "min", "max", "ci_low", "ci_high"};
  for (int i = 0; i < 7; ++i)
    if (!(std::fabs(gv[i] - wv[i]) <= 1e-12 * std::max(1.0, std::fabs(wv[i]))))
      return fmt::format("{} {:.12g} (library {:.12g})", names[i], gv[i], wv[i]);
  if (g.outliers != w.outliers) {
    const auto list = [](const std::vector<int>& v) {
      std::string t = "[";
      for (size_t k = 0; k < v.size(); ++k) t += fmt::format("{}{}", k ? "," : "", v[k]);
      return t + "]";
    };
    return fmt::format("outliers at {} (library {}: indices into the trials after the warm-ups)", list(g.outliers), list(w.outliers));
  }
  return "";
}

void block_d(Checks& c) {
  mq::Rng rng(42);
  std::vector<std::pair<std::vector<double>, int>> sets = {
      {{5.0}, 0},
      {{3.0, 5.0}, 0},
      {{100.0, 1.0, 2.0, 3.0, 4.0}, 1},                          // a warm-up far off: excluded
      {{9.0, 9.0, 1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 5.0}, 2},     // an outlier above
      {{1.0, 1.0, 1.0, 1.0}, 0},                                 // sd 0
      {{2.0, 10.0, 10.1, 9.9, 10.05, 0.5, 10.2, 9.95}, 1},       // an outlier below
      {{1.0, 1.01, 0.99, 5.0}, 0},                               // 4 trials: the fewest with Tukey fences
      {{9.0, 1.0, 1.01, 0.99, 5.0}, 1},                          // 4 after a warm-up: indices into the measured ones
      {{9.0, 1.0, 1.01, 5.0}, 1},                                // 3 after a warm-up: too few for outliers
      {{1.0, 1.0, 1.0, 1.0, 1.0, 3.0}, 0},                       // quartiles equal: any other value is out
  };
  for (int k = 0; k < 60; ++k) {
    std::vector<double> v;
    const int n = 1 + static_cast<int>(rng.below(40));
    for (int i = 0; i < n + 2; ++i) v.push_back(1.0 + rng.normal() * 0.1 + (rng.uniform() < 0.1 ? 2.0 : 0.0));
    sets.push_back({v, static_cast<int>(rng.below(3))});
  }
  std::string first;
  for (const auto& [v, warm] : sets) {
    const std::vector<double> tail(v.begin() + warm, v.end());
    const std::string d = compare_summary(lab::summarize_trials(v, warm), en::summarize_trials(tail));
    if (!d.empty() && first.empty()) first = fmt::format("{} trials, {} warm-up: {}", v.size(), warm, d);
  }
  c.expect(first.empty(), fmt::format("{} sets of trials (1 to 42, warm-ups, ties, outliers)", sets.size()),
           "equal to mq::energy::summarize_trials of the trials after the warm-ups (1e-12)", first.empty() ? "all equal" : first);
  const std::string all_warm = throws_error([] { (void)lab::summarize_trials({1.0, 2.0}, 2); });
  const std::string nan = throws_error([] { (void)lab::summarize_trials({1.0, std::nan(""), 2.0}, 0); });
  c.expect(all_warm.rfind("threw mq::Error", 0) == 0 && nan.rfind("threw mq::Error", 0) == 0, "every trial a warm-up; a NaN trial",
           "mq::Error for each", all_warm + "; " + nan);

  // Paired rounds: a drift of the machine's speed that both configurations share.
  std::string pf;
  double paired_w = 0, unpaired_w = 0;
  for (int k = 0; k < 40; ++k) {
    const int rounds = 2 + static_cast<int>(rng.below(20));
    std::vector<double> a, b;
    for (int r = 0; r < rounds; ++r) {
      const double drift = 1.0 + 0.5 * rng.uniform();
      a.push_back(0.6 * drift * (1 + 0.02 * rng.normal()));
      b.push_back(drift * (1 + 0.02 * rng.normal()));
    }
    const en::Ratio want = en::paired_ratio(a, b), got = lab::paired_ratio(a, b);
    if (pf.empty() && (!close(got.ratio, want.ratio, 1e-12) || !close(got.low, want.low, 1e-12) || !close(got.high, want.high, 1e-12)))
      pf = fmt::format("{} rounds: {:.9g} [{:.9g}, {:.9g}] (library {:.9g} [{:.9g}, {:.9g}])", rounds, got.ratio, got.low, got.high, want.ratio,
                       want.low, want.high);
    if (k == 0) {
      paired_w = got.high - got.low;
      const en::Ratio u = en::ratio_of_means(en::summarize_trials(a), en::summarize_trials(b));
      unpaired_w = u.high - u.low;
    }
  }
  c.expect(pf.empty(), "40 pairs of configurations in 2 to 21 interleaved rounds, the machine drifting by up to 50%",
           "ratio and 95% interval equal to mq::energy::paired_ratio (1e-12)", pf.empty() ? "all equal" : pf);
  const std::vector<double> a = {1.0, 2.0, 4.0}, b = {2.0, 2.0, 2.0};
  const en::Ratio ab = lab::paired_ratio(a, b), ba = lab::paired_ratio(b, a);
  c.expect(close(ab.ratio * ba.ratio, 1.0, 1e-12) && close(ab.low * ba.high, 1.0, 1e-12), "paired_ratio(b, a) against paired_ratio(a, b)",
           "its inverse, interval included (a ratio's interval is symmetric in logs)",
           fmt::format("{:.6g} [{:.6g}, {:.6g}] and {:.6g} [{:.6g}, {:.6g}]", ab.ratio, ab.low, ab.high, ba.ratio, ba.low, ba.high));
  const std::string sizes = throws_error([] { (void)lab::paired_ratio({1.0, 2.0}, {1.0, 2.0, 3.0}); });
  const std::string one = throws_error([] { (void)lab::paired_ratio({1.0}, {2.0}); });
  const std::string zero = throws_error([] { (void)lab::paired_ratio({1.0, 0.0}, {2.0, 1.0}); });
  c.expect(sizes.rfind("threw mq::Error", 0) == 0 && one.rfind("threw mq::Error", 0) == 0 && zero.rfind("threw mq::Error", 0) == 0,
           "rounds of different counts, one round, a zero", "mq::Error for each", sizes + "; " + one + "; " + zero);
  c.bar(paired_w > 0 && paired_w < unpaired_w, "a 40% saving under a drifting machine: the paired interval's width",
        "narrower than the unpaired ratio of means' (mq::energy::ratio_of_means)",
        fmt::format("{:.4f} paired against {:.4f} unpaired", paired_w, unpaired_w));
}

// ---- block E: the learner's run and answers ------------------------------------------------------------

// A method of the run by its name ("fp32", "int4-g64"); the summary names it "name" (or "method").
const nlohmann::json* method(const nlohmann::json& model, const std::string& name) {
  for (const auto& m : model.at("methods")) {
    const std::string n = m.contains("name") ? m["name"].get<std::string>() : m.value("method", std::string());
    if (n == name) return &m;
  }
  return nullptr;
}
std::string name_of(const nlohmann::json& m) { return m.contains("name") ? m["name"].get<std::string>() : m.value("method", std::string()); }
double jpt(const nlohmann::json& m, const char* phase) {
  const nlohmann::json& p = m.at("phases").at(phase).at("joules_per_token");
  return p.at("mean").get<double>();
}
void ratio_facts(std::vector<Fact>& f, const nlohmann::json& r, const std::string& what) {
  for (const char* k : {"ratio", "ratio_ci95_low", "ratio_ci95_high", "saving", "saving_ci95_low", "saving_ci95_high"})
    if (r.contains(k)) f.push_back({what + " " + k, r[k].get<double>()});
}

// The paired ratio's 95% interval and the saving's, as fractions.
std::vector<std::pair<double, double>> paired_intervals(const nlohmann::json& r) {
  std::vector<std::pair<double, double>> v;
  if (r.contains("ratio_ci95_low") && r.contains("ratio_ci95_high")) v.emplace_back(r["ratio_ci95_low"].get<double>(), r["ratio_ci95_high"].get<double>());
  if (r.contains("saving_ci95_low") && r.contains("saving_ci95_high")) v.emplace_back(r["saving_ci95_low"].get<double>(), r["saving_ci95_high"].get<double>());
  return v;
}

void block_e(Checks& c, const std::string& dir, const std::string& answers, const LabOptions& o) {
  const std::string& root = o.root;
  const std::map<int, std::string> a = answer_sections(mq::read_file(answers), 4);
  for (int q = 1; q <= 4; ++q)
    if (a.at(q).find("TODO") != std::string::npos)
      throw std::runtime_error(fmt::format("lab 04 block E: not implemented yet: answer {} in {} still says TODO", q, answers));
  if (!fs::exists(dir + "/summary.json"))
    throw std::runtime_error(fmt::format("lab 04 block E: not implemented yet: no energy run at {} (run `miniquant energy ... --out {}`, "
                                         "the handout's reduced setting)", dir, dir));
  const nlohmann::json s = mqexp::read_json(dir + "/summary.json");
  std::string bad;
  try {
    const nlohmann::json man = mqexp::read_json(dir + "/manifest.json");
    if (man.value("command", std::string()).rfind("miniquant energy", 0) != 0) bad = "manifest.json: its command is not `miniquant energy`";
    else if (!is_shipped_checkpoint(man.at("checkpoint").value("sha256", std::string()), root))
      bad = "manifest.json: its checkpoint is not data/minigpt.safetensors";
  } catch (const std::exception& e) {
    bad = std::string("manifest.json: ") + e.what();
  }
  c.expect(bad.empty(), "manifest.json", "written by `miniquant energy` beside summary.json, on the shipped checkpoint",
           bad.empty() ? "consistent" : bad);
  if (o.learner) check_own_work(c, o, "04", dir, {"summary.json", "rounds.csv"}, a);
  const nlohmann::json& mg = s.at("models").at("minigpt");
  std::string missing;
  for (const char* n : {"fp32", "int8-per-channel", "int4-g64"})
    if (!method(mg, n) || !(*method(mg, n)).contains("phases")) missing += std::string(missing.empty() ? "" : ", ") + n;
  const nlohmann::json& opt = s.at("options");
  const int rounds = opt.contains("rounds") ? opt["rounds"].get<int>() : opt.value("trials", 0);
  c.expect(missing.empty() && rounds >= 2, "the run", "MiniGPT's fp32, int8-per-channel and int4-g64 measured in at least 2 rounds",
           missing.empty() ? fmt::format("{} methods, {} rounds", mg.at("methods").size(), rounds) : "missing: " + missing);
  if (!missing.empty()) return;

  std::vector<Fact> derived;
  std::vector<const nlohmann::json*> ms;
  for (const auto& m : mg.at("methods"))
    if (m.contains("phases") && m.value("role", std::string()) != "control") ms.push_back(&m);
  for (const auto* x : ms)
    for (const auto* y : ms)
      for (const char* ph : {"prefill", "decode", "post", "total"})
        derived.push_back({name_of(*x) + " / " + name_of(*y) + " " + ph, jpt(*x, ph) / jpt(*y, ph)});
  const nlohmann::json* best = ms.front();
  for (const auto* m : ms)
    if (jpt(*m, "total") < jpt(*best, "total")) best = m;
  const nlohmann::json &fp = *method(mg, "fp32"), &i4 = *method(mg, "int4-g64");
  // The fields each question asks about, of the methods it asks about: the winner's and fp32's energy per token
  // and paired ratios (1), int4-g64's and fp32's (2), fp32's batch curve (3); anything of the run for 4.
  const auto pairs = [](const nlohmann::json& x, const nlohmann::json& y) {
    std::vector<Fact> f;
    for (const char* ph : {"prefill", "decode", "post", "total"})
      f.push_back({ph, jpt(x, ph) / jpt(y, ph)}), f.push_back({ph, jpt(y, ph) / jpt(x, ph)});
    return f;
  };
  const std::vector<std::string> per_token = {"phases.*.joules_per_token", "savings_vs_fp32.energy_per_token"};
  const std::vector<double> l1 = json_numbers_under(std::vector<const nlohmann::json*>{best, &fp}, per_token),
                            l2 = json_numbers_under(std::vector<const nlohmann::json*>{&i4, &fp}, per_token),
                            l3 = json_numbers_under(fp, {"batch", "batch_speedup_vs_b1"}), l4 = json_numbers_under(s, {"models", "robustness", "statements"});
  std::vector<Fact> q1;
  if (best->contains("savings_vs_fp32")) ratio_facts(q1, (*best)["savings_vs_fp32"]["energy_per_token"]["total"], name_of(*best));
  q1.push_back({name_of(*best) + " total J/token", jpt(*best, "total")});
  const std::string lb = "lab 04 block E";
  AnswerRules r1{&l1, pairs(*best, fp), {{"its paired ratio (or saving) against fp32", q1}}, {}, {name_of(*best)},
                 "method with the lowest total J/token in your run"};
  // In joules per token, with the paired interval (of the ratio or of the saving): not per request, not unpaired.
  r1.mentions_any = {"per token", "/token", "per generated token"};
  r1.mentions_what = "its energy per token";
  r1.interval_what = "the paired ratio's 95% interval (or the saving's)";
  if (best->contains("savings_vs_fp32")) r1.intervals = paired_intervals((*best)["savings_vs_fp32"]["energy_per_token"]["total"]);
  r1.run_intervals = json_intervals({best, &fp});
  check_answer(c, lb, 1, a.at(1), r1);
  const nlohmann::json& sv = i4.at("savings_vs_fp32").at("energy_per_token");
  const char* phase = sv.at("prefill").at("ratio").get<double>() < sv.at("decode").at("ratio").get<double>() ? "prefill" : "decode";
  std::vector<Fact> q2;
  ratio_facts(q2, sv.at(phase), std::string("int4-g64 ") + phase);
  AnswerRules r2{&l2, pairs(i4, fp), {{std::string("int4-g64's saving in that phase"), q2}}, {}, {phase}, "phase that saves most"};
  // Each phase's ratio next to its own name: "prefill saves most: 0.553" citing decode's ratio is refused.
  const std::string other = std::string(phase) == "prefill" ? "decode" : "prefill";
  std::vector<Fact> q2o;
  ratio_facts(q2o, sv.at(other), "int4-g64 " + other);
  r2.attributions = {{q2, {phase}, {other}}, {q2o, {other}, {phase}}};
  r2.run_intervals = json_intervals({&i4, &fp});
  check_answer(c, lb, 2, a.at(2), r2);
  // Decode alone (summary.json) or decode + post per generated token (report.txt's batch curve).
  double b1 = NAN, b4 = NAN, t1 = NAN, t4 = NAN;
  for (const auto& b : fp.value("batch", nlohmann::json::array())) {
    const double v = b.at("decode").at("joules_per_token").at("mean").get<double>();
    const double t = b.at("total").at("joules_per_token").at("mean").get<double>();
    if (b.at("batch") == 1) b1 = v, t1 = t;
    if (b.at("batch") == 4) b4 = v, t4 = t;
  }
  c.expect(std::isfinite(b1) && std::isfinite(b4), "the batch curve", "fp32 decode measured at batch 1 and 4 (--batch 1,4)",
           std::isfinite(b1) && std::isfinite(b4) ? "measured" : "not measured");
  AnswerRules r3{&l3, {}, {{"fp32's decode J/token at batch 1 and 4 (or their ratio)",
                                     {{"batch 1", b1}, {"batch 4", b4}, {"1 / 4", b1 / b4}, {"4 / 1", b4 / b1},
                                      {"batch 1 with post", t1}, {"batch 4 with post", t4}, {"1 / 4 with post", t1 / t4},
                                      {"4 / 1 with post", t4 / t1}}}}, {}, {}, ""};
  // The direction, as the first verb of change says it.
  const std::vector<std::string> down = {"falls", "fell", "drops", "dropped", "decreases", "decreased", "declines", "shrinks", "goes down", "halves", "is lower"},
                                  up = {"rises", "rose", "increases", "increased", "grows", "goes up", "doubles", "is higher"};
  r3.claim_right = b4 < b1 ? down : up;
  r3.claim_wrong = b4 < b1 ? up : down;
  r3.claim_what = fmt::format("that it {} from batch 1 to 4", b4 < b1 ? "falls" : "rises");
  check_answer(c, lb, 3, a.at(3), r3);
  const bool measured = s.value("measured", false);
  AnswerRules r4{&l4, derived, {}, {}, {}, ""};
  r4.require_number = false;
  r4.mentions_any = measured ? std::vector<std::string>{"rapl", "perf", "measured"} : std::vector<std::string>{"model"};
  r4.mentions_what = measured ? "that a meter measured them (RAPL or perf)" : "that the energy model computed them";
  const std::vector<std::string> modelled = {"modelled", "modeled", "estimated", "model"}, meter = {"measured"};
  r4.claim_right = measured ? meter : modelled;
  r4.claim_wrong = measured ? modelled : meter;
  check_answer(c, lb, 4, a.at(4), r4);
}

Lab make(const LabOptions& o) {
  const std::string run = o.run_dir.empty() ? o.root + "/labs/04-energy/run" : o.run_dir;
  const std::string answers = o.answers.empty() ? o.root + "/labs/04-energy/answers.md" : o.answers;
  Lab lab{"04", "energy per token by phase", "labs/04-energy/energy.cpp (+ your run, answers.md)", {}};
  lab.blocks = {
      {"A", "RAPL: zones, wrap-around, unreadable counters", block_a, {},
       {"mq::energy::RaplMeter", "mq::energy::counter_delta", "mq::energy::probe_rapl", "mq::energy::scan_rapl", "mq::energy::read_rapl",
        "mq::energy::rapl_source"}},
      {"B", "the energy model: static x time + bytes per level + operations", [o](Checks& c) { block_b(c, o); }, {},
       {"mq::energy::model_energy", "mq::energy::level_for", "mq::energy::ModelMeter"}},
      {"C", "phase tagging of a generation: prefill, decode, post", [o](Checks& c) { block_c(c, o); }, {}, {"mqexp::run_generation"}},
      {"D", "trial statistics and the paired ratio of interleaved rounds", block_d,
       {"a 40% saving under a drifting machine: the paired interval narrower"},
       {"mq::energy::summarize_trials", "mq::energy::paired_ratio", "mq::energy::ratio_of_means"}},
      {"E", "your run of `miniquant energy` and the four questions: " + run, [run, answers, o](Checks& c) { block_e(c, run, answers, o); }, {}, {}},
  };
  return lab;
}

}  // namespace
}  // namespace mqlab

int main(int argc, char** argv) { return mqlab::run_lab(mqlab::make, argc, argv, MQ_LEARNER_OBJECT); }
