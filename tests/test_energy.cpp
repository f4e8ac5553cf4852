// Energy meters and their statistics: the RAPL reader and the perf power PMU parser on sysfs trees
// laid out in a temporary folder, the live paths where this machine has them, the energy model
// (static x time, linearity, a hand-computed case, calibration), and the trial statistics.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "miniquant/energy/fake_powercap.h"
#include "miniquant/energy/model.h"
#include "miniquant/energy/perf_power.h"
#include "miniquant/energy/rapl.h"
#include "miniquant/energy/select.h"
#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace mq::energy;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::path(mqtest::temp_path("mq_test", "mq_test_energy_" + name + "_" + std::to_string(::getpid())));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

// The shared fake tree (miniquant/energy/fake_powercap.h): package-0 with core and dram, three unreadable
// packages, psys.
fs::path fake_powercap() {
  const fs::path r = temp_dir("powercap");
  write_fake_powercap(r.string());
  return r;
}

}  // namespace

TEST_CASE("RAPL on a fake powercap tree: zones, exact joules across a wrap, unreadable zones") {
  const fs::path r = fake_powercap();
  const Probe p = probe_rapl(r.string());
  CHECK(p.available);
  CHECK(p.zones == std::vector<std::string>{"package-0", "core", "dram", "psys"});
  REQUIRE(p.skipped.size() == 3);
  CHECK(p.skipped[0].find("intel-rapl:1 (package-1): energy_uj") != std::string::npos);
  CHECK(p.skipped[1].find("intel-rapl:2 (package-2): ") != std::string::npos);
  CHECK(p.skipped[1].find("max_energy_range_uj: expected an unsigned integer, read \"lots\"") != std::string::npos);
  CHECK(p.skipped[2].find("intel-rapl:3 (package-3): energy_uj empty") != std::string::npos);

  RaplMeter m(r.string());
  CHECK(m.source() == "rapl:package+dram");
  const Reading a = m.read();
  CHECK(a.total == 0.0);
  // package-0 wraps at 2,000,000 uJ: 1,900,000 -> 100,000 is 200,000 uJ; core +250,000; dram
  // +400,000; psys +5,000,000 (recorded, never in the total: it overlaps everything).
  put(r / "intel-rapl:0" / "energy_uj", "100000");
  put(r / "intel-rapl:0:0" / "energy_uj", "750000");
  put(r / "intel-rapl:0:1" / "energy_uj", "700000");
  put(r / "intel-rapl:4" / "energy_uj", "5000010");
  const Reading b = m.read();
  const Interval iv = difference(a, b);
  CHECK(iv.zones.at("package-0") == doctest::Approx(0.2).epsilon(1e-12));
  CHECK(iv.zones.at("core") == doctest::Approx(0.25).epsilon(1e-12));
  CHECK(iv.zones.at("dram") == doctest::Approx(0.4).epsilon(1e-12));
  CHECK(iv.zones.at("psys") == doctest::Approx(5.0).epsilon(1e-12));
  CHECK(iv.joules == doctest::Approx(0.6).epsilon(1e-12));  // package + dram
  CHECK(iv.seconds >= 0);
  // A second wrap on dram (max 1,000,000): 700,000 -> 50,000 is 350,000 uJ.
  put(r / "intel-rapl:0:1" / "energy_uj", "50000");
  CHECK(difference(b, m.read()).zones.at("dram") == doctest::Approx(0.35).epsilon(1e-12));

  // A counter that disappears mid-run is an error naming the file, not a zero.
  fs::remove(r / "intel-rapl:0:1" / "energy_uj");
  try {
    m.read();
    FAIL("read of a vanished counter succeeded");
  } catch (const mq::Error& e) {
    CHECK(std::string(e.what()).find("intel-rapl:0:1/energy_uj became unreadable mid-run: missing") != std::string::npos);
  }
  // A value above the range is corrupt, not a wrap.
  put(r / "intel-rapl:0:1" / "energy_uj", "5000000");
  CHECK_THROWS_AS(m.read(), mq::Error);
  // Garbage in a counter.
  put(r / "intel-rapl:0:1" / "energy_uj", "12abc");
  CHECK_THROWS_WITH_AS(m.read(), doctest::Contains("expected an unsigned integer"), mq::Error);
  fs::remove_all(r);
}

TEST_CASE("RAPL: no package without dram, nothing readable, missing root, permission denied") {
  CHECK(counter_delta(10, 30, 100) == 20);
  CHECK(counter_delta(90, 5, 100) == 15);
  const fs::path r = temp_dir("powercap2");
  put(r / "intel-rapl:0" / "name", "package-0");
  put(r / "intel-rapl:0" / "energy_uj", "7");
  put(r / "intel-rapl:0" / "max_energy_range_uj", "100");
  CHECK(RaplMeter(r.string()).source() == "rapl:package");
  fs::remove(r / "intel-rapl:0" / "energy_uj");
  const Probe p = probe_rapl(r.string());
  CHECK_FALSE(p.available);
  CHECK(p.reason.find("no readable package zone") != std::string::npos);
  CHECK(p.reason.find("energy_uj missing") != std::string::npos);
  CHECK_THROWS_WITH_AS(RaplMeter(r.string()), doctest::Contains("no readable package zone"), mq::Error);
  const Probe none = probe_rapl((r / "absent").string());
  CHECK_FALSE(none.available);
  CHECK(none.reason.find("missing") != std::string::npos);
  if (::geteuid() != 0) {
    put(r / "intel-rapl:0" / "energy_uj", "7");
    fs::permissions(r / "intel-rapl:0" / "energy_uj", fs::perms::none);
    CHECK(probe_rapl(r.string()).reason.find("permission denied") != std::string::npos);
  } else {
    MESSAGE("running as root: file permissions cannot make energy_uj unreadable; the permission-denied case is skipped");
  }
  fs::remove_all(r);
}

TEST_CASE("RAPL on two sockets: each package's dram zone counts; the per-name figure sums them") {
  const fs::path r = temp_dir("powercap_2s");
  for (const char* pkg : {"0", "1"}) {
    const std::string z = std::string("intel-rapl:") + pkg;
    put(r / z / "name", std::string("package-") + pkg);
    put(r / z / "energy_uj", "1000");
    put(r / z / "max_energy_range_uj", "1000000");
    put(r / (z + ":0") / "name", "dram");
    put(r / (z + ":0") / "energy_uj", "1000");
    put(r / (z + ":0") / "max_energy_range_uj", "1000000");
  }
  RaplMeter m(r.string());
  const Reading a = m.read();
  put(r / "intel-rapl:0" / "energy_uj", "4000");    // package-0 +3 mJ
  put(r / "intel-rapl:0:0" / "energy_uj", "2000");  // socket 0's dram +1 mJ
  put(r / "intel-rapl:1" / "energy_uj", "6000");    // package-1 +5 mJ
  put(r / "intel-rapl:1:0" / "energy_uj", "3000");  // socket 1's dram +2 mJ
  const Interval iv = difference(a, m.read());
  CHECK(iv.zones.at("dram") == doctest::Approx(0.003).epsilon(1e-12));  // both sockets, not the last one read
  CHECK(iv.zones.at("package-0") == doctest::Approx(0.003).epsilon(1e-12));
  CHECK(iv.zones.at("package-1") == doctest::Approx(0.005).epsilon(1e-12));
  CHECK(iv.joules == doctest::Approx(0.011).epsilon(1e-12));
  fs::remove_all(r);
}

TEST_CASE("perf power PMU sysfs: type, cpumask, events with scale and unit; bad entries skipped") {
  CHECK(parse_event_config("event=0x02", "x") == 2);
  CHECK(parse_event_config("event=0x1b,umask=0x0", "x") == 0x1b);
  CHECK(parse_event_config("umask=1,event=3", "x") == 3);
  CHECK_THROWS_AS(parse_event_config("umask=1", "x"), mq::Error);
  CHECK_THROWS_AS(parse_event_config("event=zz", "x"), mq::Error);
  CHECK(parse_cpu_list("0", "x") == std::vector<int>{0});
  CHECK(parse_cpu_list("0-2,8", "x") == std::vector<int>{0, 1, 2, 8});
  CHECK_THROWS_AS(parse_cpu_list("3-1", "x"), mq::Error);

  const fs::path r = temp_dir("perf");
  put(r / "type", "23");
  put(r / "cpumask", "0,18");
  put(r / "events" / "energy-pkg", "event=0x02");
  put(r / "events" / "energy-pkg.scale", "2.3283064365386962890625e-10");
  put(r / "events" / "energy-pkg.unit", "Joules");
  put(r / "events" / "energy-ram", "event=0x03");
  put(r / "events" / "energy-ram.scale", "1.52587890625e-05");
  put(r / "events" / "energy-ram.unit", "Joules");
  put(r / "events" / "energy-cores", "event=0x01");  // no .scale: skipped with the reason
  put(r / "events" / "energy-cores.unit", "Joules");
  put(r / "events" / "energy-gpu", "event=0x04");
  put(r / "events" / "energy-gpu.scale", "1e-6");
  put(r / "events" / "energy-gpu.unit", "Watts");  // not joules: skipped
  const PerfPowerPmu p = parse_perf_power(r.string());
  CHECK(p.type == 23);
  CHECK(p.cpus == std::vector<int>{0, 18});
  REQUIRE(p.events.size() == 2);
  CHECK(p.events[0].name == "energy-pkg");
  CHECK(p.events[0].config == 2);
  CHECK(p.events[0].scale == 2.3283064365386962890625e-10);
  CHECK(p.events[1].name == "energy-ram");
  CHECK(p.events[1].config == 3);
  CHECK(p.events[1].scale == 1.52587890625e-05);
  REQUIRE(p.skipped.size() == 2);
  CHECK(p.skipped[0] == "energy-cores: .scale missing");
  CHECK(p.skipped[1].find("is not Joules") != std::string::npos);

  put(r / "type", "power");
  CHECK_THROWS_WITH_AS(parse_perf_power(r.string()), doctest::Contains("type: expected an unsigned integer"), mq::Error);
  fs::remove(r / "type");
  CHECK_THROWS_WITH_AS(parse_perf_power(r.string()), doctest::Contains("type: missing"), mq::Error);
  CHECK_THROWS_WITH_AS(parse_perf_power((r / "absent").string()), doctest::Contains("missing"), mq::Error);
  CHECK_FALSE(probe_perf((r / "absent").string()).available);
  fs::remove_all(r);
}

TEST_CASE("live RAPL and perf meters where this machine has them") {
  const Probe rapl = probe_rapl();
  if (rapl.available) {
    RaplMeter m;
    const Reading a = m.read();
    volatile double x = 0;
    for (int i = 0; i < 20000000; ++i) x = x + 1e-9 * i;
    const Interval iv = difference(a, m.read());
    CHECK(iv.joules >= 0);
    CHECK(iv.joules < 1000);
  } else {
    MESSAGE("live RAPL skipped: " << rapl.reason);
  }
  const Probe perf = probe_perf();
  if (perf.available) {
    PerfMeter m;
    const Reading a = m.read();
    CHECK(difference(a, m.read()).joules >= 0);
  } else {
    MESSAGE("live perf power PMU skipped: " << perf.reason);
  }
}

TEST_CASE("energy model: zero work is static x time, linear in bytes and ops, a hand-computed case") {
  Coefficients c;
  c.static_watts = 6.0;
  c.joules_per_flop_fp32 = 2.3e-12;
  c.joules_per_op_int8 = 1.5e-13;
  c.joules_per_byte[0] = 2.5e-12;
  c.joules_per_byte[1] = 1.25e-11;
  c.joules_per_byte[2] = 2.5e-11;
  c.joules_per_byte[3] = 1.625e-10;
  CHECK(model_energy(c, 2.0, Work{}).total() == 12.0);
  CHECK(model_energy(c, 0.0, Work{}).total() == 0.0);
  // Hand case: 1 s, 1e9 fp32 flops (2.3 mJ), 2e9 int8 ops (0.3 mJ), 1e6 DRAM bytes (0.1625 mJ),
  // 4e6 L1 bytes (0.01 mJ): 6.0027725 J.
  Work w;
  w.flops_fp32 = 1e9;
  w.ops_int8 = 2e9;
  w.bytes[3] = 1e6;
  w.bytes[0] = 4e6;
  const ModelBreakdown b = model_energy(c, 1.0, w);
  CHECK(b.static_j == 6.0);
  CHECK(b.compute_j == doctest::Approx(2.6e-3).epsilon(1e-12));
  CHECK(b.level_j[3] == doctest::Approx(1.625e-4).epsilon(1e-12));
  CHECK(b.level_j[0] == doctest::Approx(1e-5).epsilon(1e-12));
  CHECK(b.total() == doctest::Approx(6.0027725).epsilon(1e-12));
  // Linear: the work part of 3w is three times the work part of w.
  const double once = model_energy(c, 1.0, w).total() - 6.0, thrice = model_energy(c, 1.0, w.scaled(3)).total() - 6.0;
  CHECK(thrice == doctest::Approx(3 * once).epsilon(1e-12));
  Work more = w;
  more += w;
  CHECK(model_energy(c, 0.0, more).total() == doctest::Approx(2 * once).epsilon(1e-12));

  // As a meter: static over its clock plus the work it was told about.
  ModelMeter m(c);
  const Reading r0 = m.read();
  m.add_work(w);
  const Interval iv = difference(r0, m.read());
  CHECK(iv.joules == doctest::Approx(6.0 * iv.seconds + 2.6e-3 + 1.625e-4 + 1e-5).epsilon(1e-9));
  CHECK(iv.zones.at("compute") == doctest::Approx(2.6e-3).epsilon(1e-12));
  CHECK(iv.zones.at("DRAM") == doctest::Approx(1.625e-4).epsilon(1e-12));
  CHECK_FALSE(m.measured());
}

TEST_CASE("energy model: the shipped coefficients file, bad files, cache levels") {
  const std::string shipped = MQ_SOURCE_DIR "/data/energy_model.json";
  const Coefficients c = load_coefficients(shipped);
  CHECK(c.static_watts > 0);
  CHECK(c.joules_per_byte[3] > c.joules_per_byte[2]);  // DRAM costs more per byte than any cache
  CHECK(c.joules_per_byte[2] > c.joules_per_byte[0]);
  CHECK(c.joules_per_op_int8 < c.joules_per_flop_fp32);
  for (const auto& [k, v] : c.sources.items()) CHECK(v.get<std::string>().size() > 20);  // every value cites its source
  CHECK(c.sources.size() == 7);
  CHECK(ModelMeter(c).source() == "model:" + shipped);

  const fs::path d = temp_dir("coef");
  put(d / "neg.json", R"({"coefficients": {"static_watts": {"value": -1}}})");
  CHECK_THROWS_WITH_AS(load_coefficients((d / "neg.json").string()), doctest::Contains("static_watts\" = -1 must be finite and >= 0"), mq::Error);
  put(d / "missing.json", R"({"coefficients": {"static_watts": {"value": 1}}})");
  CHECK_THROWS_WITH_AS(load_coefficients((d / "missing.json").string()), doctest::Contains("\"joules_per_flop_fp32\" missing"), mq::Error);
  put(d / "bad.json", "{not json");
  CHECK_THROWS_WITH_AS(load_coefficients((d / "bad.json").string()), doctest::Contains("not valid JSON"), mq::Error);
  CHECK_THROWS_AS(load_coefficients((d / "absent.json").string()), mq::Error);
  fs::remove_all(d);

  const std::vector<mq::CacheLevel> caches = {{1, "Data", 32 << 10, "0"}, {1, "Instruction", 32 << 10, "0"},
                                              {2, "Unified", 1 << 20, "0"}, {3, "Unified", 32 << 20, "0-1"}};
  CHECK(level_for(caches, 16 << 10, 1) == 0);
  CHECK(level_for(caches, 40 << 10, 1) == 1);
  CHECK(level_for(caches, 40 << 10, 2) == 0);           // private L1: two threads hold 64 KB
  CHECK(level_for(caches, 1.5 * (1 << 20), 2) == 1);    // and 2 MB of L2
  CHECK(level_for(caches, 1.5 * (1 << 20), 1) == 2);
  CHECK(level_for(caches, 40.0 * (1 << 20), 2) == 3);   // shared L3 does not scale with threads
  CHECK(level_for({}, 1, 1) == 3);
}

TEST_CASE("calibration recovers known coefficients from runs of different intensity") {
  Coefficients truth;
  truth.static_watts = 20;
  truth.joules_per_flop_fp32 = 5e-12;
  truth.joules_per_op_int8 = 1e-12;
  truth.joules_per_byte[0] = 1e-12;
  truth.joules_per_byte[1] = 4e-12;
  truth.joules_per_byte[2] = 1e-11;
  truth.joules_per_byte[3] = 8e-11;
  std::vector<CalibrationSample> s;
  for (int i = 0; i < 12; ++i) {
    CalibrationSample x;
    x.seconds = 0.1 + 0.05 * i;
    x.work.flops_fp32 = 1e9 * ((i * 7) % 5 + 1);
    x.work.ops_int8 = 3e9 * ((i * 3) % 4);
    for (int l = 0; l < kLevels; ++l) x.work.bytes[l] = 1e8 * (((i + 2 * l) * (l + 3)) % 7 + 0.5);
    x.joules = model_energy(truth, x.seconds, x.work).total();
    s.push_back(x);
  }
  Coefficients prior;
  prior.file = "prior.json";
  const Calibration cal = calibrate(s, prior);
  CHECK(cal.fitted.static_watts == doctest::Approx(20).epsilon(1e-6));
  CHECK(cal.fitted.joules_per_flop_fp32 == doctest::Approx(5e-12).epsilon(1e-6));
  CHECK(cal.fitted.joules_per_op_int8 == doctest::Approx(1e-12).epsilon(1e-6));
  for (int l = 0; l < kLevels; ++l) CHECK(cal.fitted.joules_per_byte[l] == doctest::Approx(truth.joules_per_byte[l]).epsilon(1e-6));
  CHECK(cal.rms_relative_error < 1e-9);
  CHECK(cal.fitted.calibrated);
  // A column no run exercises keeps its prior.
  for (auto& x : s) {
    x.work.ops_int8 = 0;
    x.joules = model_energy(truth, x.seconds, x.work).total();
  }
  prior.joules_per_op_int8 = 7e-13;
  const Calibration c2 = calibrate(s, prior);
  CHECK(c2.fitted.joules_per_op_int8 == 7e-13);
  CHECK(c2.notes.size() == 1);
  s.resize(5);
  CHECK_THROWS_WITH_AS(calibrate(s, prior), doctest::Contains("need at least 7"), mq::Error);
}

TEST_CASE("trial statistics against known values") {
  const Summary s = summarize_trials({1, 2, 3, 4, 5});
  CHECK(s.n == 5);
  CHECK(s.mean == 3.0);
  CHECK(s.sd == doctest::Approx(std::sqrt(2.5)).epsilon(1e-12));
  CHECK(s.median == 3.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 5.0);
  const double half = 2.776 * std::sqrt(2.5) / std::sqrt(5.0);
  CHECK(s.ci_low == doctest::Approx(3 - half).epsilon(1e-12));
  CHECK(s.ci_high == doctest::Approx(3 + half).epsilon(1e-12));
  CHECK(s.outliers.empty());
  CHECK(summarize_trials({1, 2, 3, 4}).median == 2.5);
  const Summary o = summarize_trials({10, 11, 12, 11, 10, 100});
  CHECK(o.outliers == std::vector<int>{5});
  const Summary one = summarize_trials({4});
  CHECK(one.sd == 0);
  CHECK(one.ci_low == 4);
  CHECK_THROWS_AS(summarize_trials({}), mq::Error);
  CHECK_THROWS_AS(summarize_trials({1, NAN}), mq::Error);
  CHECK(t975(1) == 12.706);
  CHECK(t975(30) == 2.042);
  CHECK(t975(40) == doctest::Approx(2.0211).epsilon(2e-4));
  CHECK(t975(120) == doctest::Approx(1.9799).epsilon(2e-4));
  CHECK_THROWS_AS(t975(0), mq::Error);

  // Ratio of means: a = half of b, with known spreads.
  const Summary a = summarize_trials({1, 2, 3}), b = summarize_trials({4, 4, 4});
  const Ratio r = ratio_of_means(a, b);
  CHECK(r.ratio == 0.5);
  CHECK(r.saving() == 0.5);
  // delta method: rel = sqrt((1/3)/4 + 0) = 0.288675; half = 4.303 x 0.5 x rel.
  CHECK(r.high - r.ratio == doctest::Approx(4.303 * 0.5 * std::sqrt(1.0 / 12)).epsilon(1e-9));
  CHECK(r.saving_low() == doctest::Approx(1 - r.high).epsilon(1e-15));
  const Ratio same = ratio_of_means(b, b);
  CHECK(same.ratio == 1.0);
  CHECK(same.low == 1.0);
  CHECK_THROWS_AS(ratio_of_means(a, summarize_trials({0, 0})), mq::Error);
}

TEST_CASE("paired ratio: a drift shared by both configurations cancels; the interval is the logs' t interval") {
  // Round k runs both at a speed factor that drifts 1x..3x; a costs 0.8 of b in every round.
  std::vector<double> a, b;
  for (int k = 0; k < 6; ++k) {
    const double drift = 1.0 + 0.4 * k;
    b.push_back(10 * drift);
    a.push_back(8 * drift);
  }
  const Ratio r = paired_ratio(a, b);
  CHECK(r.ratio == doctest::Approx(0.8).epsilon(1e-12));
  CHECK(r.high - r.low < 1e-12);  // no spread in the per-round ratios, whatever the drift
  // The unpaired ratio of the same values is wide: the drift lands in both samples' spread.
  const Ratio u = ratio_of_means(summarize_trials(a), summarize_trials(b));
  CHECK(u.high - u.low > 0.3);
  // Known logs: ratios e^0.1, e^-0.1, e^0.3 -> mean log 0.1, sd 0.2, half = 4.303 * 0.2 / sqrt(3).
  const Ratio k = paired_ratio({std::exp(0.1), std::exp(-0.1), std::exp(0.3)}, {1, 1, 1});
  CHECK(k.ratio == doctest::Approx(std::exp(0.1)).epsilon(1e-12));
  CHECK(k.high == doctest::Approx(std::exp(0.1 + 4.303 * 0.2 / std::sqrt(3.0))).epsilon(1e-12));
  CHECK(k.low == doctest::Approx(std::exp(0.1 - 4.303 * 0.2 / std::sqrt(3.0))).epsilon(1e-12));
  // Symmetric: b against a is the inverse, interval included.
  const Ratio inv = paired_ratio({1, 1, 1}, {std::exp(0.1), std::exp(-0.1), std::exp(0.3)});
  CHECK(inv.ratio * k.ratio == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(inv.low * k.high == doctest::Approx(1.0).epsilon(1e-12));
  CHECK_THROWS_AS(paired_ratio({1, 2}, {1, 2, 3}), mq::Error);
  CHECK_THROWS_AS(paired_ratio({1}, {1}), mq::Error);
  CHECK_THROWS_AS(paired_ratio({1, 0}, {1, 1}), mq::Error);
  CHECK_THROWS_AS(paired_ratio({1, NAN}, {1, 1}), mq::Error);
}

TEST_CASE("top frequency: a clear winner stays on top; a tie splits; deterministic for a seed") {
  // Config 1 is lowest in every round: it wins every resample.
  const std::vector<std::vector<double>> clear = {{3, 1, 2}, {3.1, 1.2, 2.2}, {2.9, 0.9, 2.1}, {3, 1.1, 2}};
  const std::vector<double> f = top_frequency(clear, 500);
  CHECK(f[1] == 1.0);
  CHECK(f[0] == 0.0);
  // Two configs that alternate: each wins some resamples, neither always; fractions sum to 1.
  const std::vector<std::vector<double>> tie = {{1, 2}, {2, 1}, {1, 2}, {2, 1}, {1.5, 1.4}, {1.4, 1.5}};
  const std::vector<double> t = top_frequency(tie, 2000);
  CHECK(t[0] > 0.2);
  CHECK(t[0] < 0.8);
  CHECK(t[0] + t[1] == doctest::Approx(1.0));
  CHECK(top_frequency(tie, 2000, 7) == top_frequency(tie, 2000, 7));
  CHECK_THROWS_AS(top_frequency({}), mq::Error);
  CHECK_THROWS_AS(top_frequency({{1, 2}, {1}}), mq::Error);
}

TEST_CASE("meter selection: unknown kind, no hardware falls back to the model with a warning") {
  MeterRoots roots;
  roots.powercap = "/nonexistent/powercap";
  roots.perf_power = "/nonexistent/power";
  roots.coefficients = MQ_SOURCE_DIR "/data/energy_model.json";
  CHECK_THROWS_AS(select_meter("watts", roots), mq::UsageError);
  Selection s = select_meter("auto", roots);
  CHECK_FALSE(s.meter->measured());
  CHECK(s.meter->source() == "model:" + roots.coefficients);
  CHECK(s.warning.find("MODELLED") != std::string::npos);
  REQUIRE(s.probes.size() == 3);
  CHECK(s.probes[0].reason.find("missing") != std::string::npos);
  CHECK_THROWS_WITH_AS(select_meter("rapl", roots), doctest::Contains("--meter rapl: /nonexistent/powercap missing"), mq::Error);
  CHECK_THROWS_WITH_AS(select_meter("perf", roots), doctest::Contains("--meter perf:"), mq::Error);
  const nlohmann::json hw = hardware_json(s.probes, 2);
  CHECK(hw.at("threads_used") == 2);
  CHECK(hw.at("meters").size() == 3);
  CHECK(hw.contains("kernel"));
  CHECK(hw.contains("governor"));
  // With a fake RAPL tree, auto picks it.
  const fs::path r = fake_powercap();
  roots.powercap = r.string();
  Selection h = select_meter("auto", roots);
  CHECK(h.meter->measured());
  CHECK(h.meter->source() == "rapl:package+dram");
  CHECK(h.warning.empty());
  fs::remove_all(r);
}
