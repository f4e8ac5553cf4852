// The energy driver: phase energies add up to the run's total (with a counting meter whose every
// reading is known), the batch curve's accounting, each Linear's operations charged as it runs, and
// the interleaved rounds, and `miniquant energy` end to end on the shipped MiniGPT: a failing method
// recorded while the others complete, the control, a phase split, the prompt-length curve, statements
// with their robustness, rounds.csv, a quant map's method, bad flags exiting 2 with one line,
// --calibrate refusing without a meter.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/energy_phases.h"
#include "experiments/energy_rounds.h"
#include "experiments/energy_run.h"
#include "experiments/energy_work.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/throughput.h"
#include "miniquant/energy/trial_stats.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace mqexp;
using nlohmann::json;

namespace {

// Every reading adds 1 J to zone "a" and 0.5 J to zone "b" and 1 ms: intervals are exact counts.
class CountingMeter final : public mq::energy::Meter {
 public:
  std::string source() const override { return "test:counting"; }
  bool measured() const override { return true; }
  mq::energy::Reading read() override {
    ++n_;
    mq::energy::Reading r;
    r.seconds = 1e-3 * n_;
    r.joules["a"] = n_;
    r.joules["b"] = 0.5 * n_;
    r.total = 1.5 * n_;
    return r;
  }
  void add_work(const mq::energy::Work& w) override { work_ += w; }
  int readings() const { return n_; }
  mq::energy::Work work_;

 private:
  int n_ = 0;
};

const minigpt::ModelConfig kTiny{.vocab_size = 61, .n_ctx = 32, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512};

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("phase energies sum to the total: one reading per boundary, nothing lost") {
  minigpt::Model m(kTiny, 42);
  CountingMeter meter;
  WorkContext w;
  w.caches = {{1, "Data", 32 << 10, "0"}, {2, "Unified", 1 << 20, "0"}, {3, "Unified", 32 << 20, "0-1"}};
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  const int gen = 6;
  const RunResult r = run_generation(m, meter, prompt, gen, nullptr, w);
  // Readings: start, prefill end, then (post, decode) boundaries: post after the prefill's token,
  // decode + post per step, and the final bookkeeping.
  CHECK(meter.readings() == 1 + 1 + 1 + 2 * (gen - 1) + 1);
  CHECK(r.prefill.joules == 1.5);
  CHECK(r.decode.joules == 1.5 * (gen - 1));
  CHECK(r.post.joules == 1.5 * (1 + (gen - 1) + 1));
  CHECK(r.prefill.joules + r.decode.joules + r.post.joules == r.total.joules);
  CHECK(r.prefill.seconds + r.decode.seconds + r.post.seconds == doctest::Approx(r.total.seconds).epsilon(1e-12));
  CHECK(r.prefill.zones.at("a") + r.decode.zones.at("a") + r.post.zones.at("a") == r.total.zones.at("a"));
  CHECK(r.total.zones.at("b") == doctest::Approx(0.5 * (meter.readings() - 1)));
  CHECK(r.prefill.tokens == 5);
  CHECK(r.decode.tokens == gen - 1);
  CHECK(r.total.tokens == gen);
  CHECK(r.generated.size() == static_cast<size_t>(gen));
  // The work each phase reports is what the meter was told, all of it.
  CHECK(r.total.work.flops_fp32 == doctest::Approx(meter.work_.flops_fp32));
  CHECK(r.total.work.total_bytes() == doctest::Approx(meter.work_.total_bytes()));
  CHECK(r.decode.work.flops_fp32 > 0);
  // Greedy and deterministic: the same prompt generates the same tokens again.
  CountingMeter again;
  CHECK(run_generation(m, again, prompt, gen, nullptr, w).generated == r.generated);
  CHECK_THROWS_AS(run_generation(m, again, prompt, kTiny.n_ctx, nullptr, w), mq::UsageError);

  // The batch curve: decode and post alternate once per step.
  BatchDecoder bd(m, {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}, 3);
  CountingMeter bm;
  const BatchRun br = bd.run(bm, w);
  CHECK(br.decode.joules == 1.5 * 3);
  CHECK(br.post.joules == 1.5 * 3);
  CHECK(br.decode.joules + br.post.joules == br.total.joules);
  CHECK(br.total.tokens == 12);
  // Rewound before each run: a second run does the same work.
  CountingMeter bm2;
  CHECK(bd.run(bm2, w).total.work.total_bytes() == doctest::Approx(br.total.work.total_bytes()));
}

TEST_CASE("the energy model charges each Linear's operations as that Linear runs: +a8 as int8, the others fp32") {
  WorkContext w;
  w.caches = {{1, "Data", 32 << 10, "0"}, {2, "Unified", 1 << 20, "0"}, {3, "Unified", 32 << 20, "0-1"}};
  const int context = 10, batch = 4, prompt = 8;
  minigpt::Model fp(kTiny, 42), a8(kTiny, 42), half(kTiny, 42);
  minigpt::quantize_model(a8, minigpt::QuantPlan::uniform("int8-per-channel+a8"));
  // Layer 0 runs +a8, layer 1 stores the same codes weight-only.
  minigpt::quantize_model(half, minigpt::QuantPlan::from_json(nlohmann::json::parse(R"({"config_id": "half",
      "default": "int8-per-channel", "layer_groups": [{"layers": [0], "quant": "int8-per-channel+a8"}]})")));
  double all = 0, layer0 = 0;  // Linear operations per token: 2 per multiply-add
  for (const auto& li : fp.linears()) {
    all += 2.0 * li.in * li.out;
    if (li.layer == 0) layer0 += 2.0 * li.in * li.out;
  }
  REQUIRE(layer0 > 0);
  REQUIRE(layer0 < all);
  const double flops = minigpt::decode_traffic(fp, context).flops, flops0 = minigpt::decode_traffic(fp, 0).flops;
  const double d = kTiny.d_model, L = kTiny.n_layer, P = prompt;

  // fp32: every operation fp32.
  const mq::energy::Work f = decode_step_work(fp, context, batch, w);
  CHECK(f.ops_int8 == 0);
  CHECK(f.flops_fp32 == doctest::Approx(flops * batch).epsilon(1e-12));
  // Uniform +a8: what one "the Linears run int8" flag charged, to the bit: every Linear int8, the rest fp32.
  const mq::energy::Work u = decode_step_work(a8, context, batch, w);
  CHECK(u.ops_int8 == all * batch);
  CHECK(u.flops_fp32 == (flops - all) * batch);
  const mq::energy::Work up = prefill_work(a8, prompt, w);
  CHECK(up.ops_int8 == all * P);
  CHECK(up.flops_fp32 == (flops0 - all) * P + 4.0 * L * d * P * P);
  // Half and half: layer 0's Linears int8, layer 1's fp32 with everything else.
  const mq::energy::Work h = decode_step_work(half, context, batch, w);
  CHECK(h.ops_int8 == layer0 * batch);
  CHECK(h.flops_fp32 == doctest::Approx((flops - layer0) * batch).epsilon(1e-12));
  CHECK(h.ops_int8 == doctest::Approx(u.ops_int8 / 2).epsilon(1e-12));  // the two layers have the same shapes
  const mq::energy::Work hp = prefill_work(half, prompt, w);
  CHECK(hp.ops_int8 == layer0 * P);
  CHECK(hp.flops_fp32 == doctest::Approx((flops0 - layer0) * P + 4.0 * L * d * P * P).epsilon(1e-12));
  // How the Linears run moves operations between datatypes, never bytes: the same codes are read.
  CHECK(h.total_bytes() == u.total_bytes());
  CHECK(hp.total_bytes() == up.total_bytes());
  // +a16 runs two int8 dot products per weight (the codes' high and low halves): twice +a8's int8 work.
  minigpt::Model a16(kTiny, 42);
  minigpt::quantize_model(a16, minigpt::QuantPlan::uniform("int8-per-channel+a16"));
  const mq::energy::Work v = decode_step_work(a16, context, batch, w);
  CHECK(v.ops_int8 == 2 * all * batch);
  CHECK(v.flops_fp32 == u.flops_fp32);
  CHECK(v.total_bytes() == u.total_bytes());
  CHECK(activations_of(a16) == "16-bit (dynamic, per token, two int8 halves)");
  CHECK(activations_of(a8) == "int8 (dynamic, per token)");
  CHECK(activations_of(fp) == "fp32");
}

TEST_CASE("method names map to schemes and back") {
  CHECK(scheme_for_method("float32") == "fp32");
  CHECK(scheme_for_method("float16") == "fp16");
  CHECK(scheme_for_method("bfloat16") == "bf16");
  CHECK(scheme_for_method("int8") == "int8-per-channel");
  CHECK(scheme_for_method("int8_dynamic") == "int8-per-channel+a8");
  CHECK(scheme_for_method("int4-g64-gptq+a8") == "int4-g64-gptq+a8");
  CHECK(method_for_scheme("int8-per-channel+a8") == "int8_dynamic");
  CHECK(method_for_scheme("fp32") == "float32");
  CHECK(method_for_scheme("int4-g64") == "");
}

TEST_CASE("interleaved rounds: every configuration once per round, in a seeded random order whose neighbours vary") {
  // A permutation, the same for the same round, warm-up (negative) rounds included.
  for (const int round : {-3, -1, 0, 1, 7, 100}) {
    std::vector<int> o = round_order(5, round);
    CHECK(o == round_order(5, round));
    std::sort(o.begin(), o.end());
    CHECK(o == std::vector<int>{0, 1, 2, 3, 4});
  }
  CHECK(round_order(1, 5) == std::vector<int>{0});
  CHECK(round_order(0, 5).empty());
  // Two configurations: both orders, each in 25-75% of 40 rounds (a rotation's neighbours never change).
  int first = 0;
  for (int round = 0; round < 40; ++round) first += round_order(2, round)[0] == 0;
  CHECK(first >= 10);
  CHECK(first <= 30);
  // Four: over 30 rounds every configuration follows every other one at least once, and each leads a round.
  std::set<std::pair<int, int>> follows;
  std::set<int> leads;
  for (int round = 0; round < 30; ++round) {
    const std::vector<int> o = round_order(4, round);
    leads.insert(o[0]);
    for (size_t i = 1; i < o.size(); ++i) follows.insert({o[i - 1], o[i]});
  }
  CHECK(follows.size() == 12);
  CHECK(leads.size() == 4);
  // A drift shared by a round cancels in the paired ratio: config b costs 2x a in every round, whatever the round's speed.
  std::vector<std::string> log;
  const auto task = [&](const std::string& c, int round) {
    log.push_back(c);
    Measurement m;
    PhaseStats p;
    p.tokens = 1;
    p.seconds = (c == "b" ? 2.0 : 1.0) * (1.0 + 0.5 * std::max(round, 0));
    p.joules = p.seconds;
    m.phases["total"] = p;
    return m;
  };
  const RoundsResult r = run_rounds({{"t", {"a", "b"}, task}}, {4, 1}, [](const std::string&) {});
  CHECK(log.size() == 10);  // 1 warm-up + 4 rounds, 2 configurations each
  CHECK(r.of("t", "a").size() == 4);
  CHECK(r.order.size() == 4);
  const mq::energy::Ratio x = mq::energy::paired_ratio(r.series("t", "b", "total", "joules_per_token"), r.series("t", "a", "total", "joules_per_token"));
  CHECK(x.ratio == doctest::Approx(2.0));
  CHECK(x.high - x.low < 1e-9);
  CHECK_THROWS_AS(run_rounds({{"t", {"a"}, task}}, {0, 0}, [](const std::string&) {}), mq::UsageError);
  CHECK_THROWS_AS(run_rounds({{"t", {}, task}}, {2, 0}, [](const std::string&) {}), mq::UsageError);
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("x\"y") == "\"x\"\"y\"");
  CHECK(csv_field("plain") == "plain");
}

TEST_CASE("bad energy flags exit 2 with one line") {
  for (const char* args : {"energy --rounds 1", "energy --rounds x", "energy --meter watts", "energy --batch 0",
                           "energy --batch 1,a", "energy --gen-tokens 1", "energy --warmup -1", "energy --bogus",
                           "energy --prompt-tokens 0", "energy --batch 4,4", "energy --splits fp16[prefill=+a8]",
                           "energy --splits int4-g64", "energy --curve-gen 1", "energy --curve-lengths 0", "energy --schemes fp32 fp32", "energy --schemes float32 fp32",
                           "energy --batch-rounds 1",
                           // Checked against the model's context once it is loaded: still the only line (no banner before it).
                           "energy --prompt-tokens 100 --gen-tokens 100 --no-gpt2"}) {
    CAPTURE(args);
    const CliResult r = run_cli(std::string(args) + " --out " + mqtest::temp_path("mq_test", "mq_energy_badflags"));
    CHECK(r.code == 2);
    CHECK(lines(r.out) == 1);
    CHECK(r.out.rfind("miniquant: error: ", 0) == 0);
  }
  const CliResult r = run_cli("energy --meter watts --out " + mqtest::temp_path("mq_test", "mq_energy_badflags"));
  CHECK(r.out.find("expected auto, rapl, perf or model") != std::string::npos);
  fs::remove_all(mqtest::temp_path("mq_test", "mq_energy_badflags"));
}

TEST_CASE("--calibrate without a meter fails with one clear line, before any work") {
  const std::string out = mqtest::temp_path("mq_test", "mq_energy_calib");
  const CliResult r = run_cli("energy --calibrate --powercap-root /nonexistent --perf-root /nonexistent --out " + out);
  CHECK(r.code == 1);
  CHECK(r.out.find("--calibrate needs a real energy meter") != std::string::npos);
  CHECK(r.out.find("energy: seed") == std::string::npos);  // no banner announcing a run that does not start
  CHECK_FALSE(fs::exists(out + "/summary.json"));
  fs::remove_all(out);
}

namespace {
const json* find_config(const json& ms, const std::string& name) {
  for (const auto& m : ms)
    if (m["name"] == name) return &m;
  return nullptr;
}
}  // namespace

TEST_CASE("miniquant energy end to end: rounds, the control, a phase split, the curve, statements; a failing method recorded") {
  const std::string out = mqtest::temp_path("mq_test", "mq_energy_e2e");
  fs::remove_all(out);
  const CliResult r = run_cli(
      "energy --schemes float32 int5-nonsense int8_dynamic --splits int8-per-channel[prefill=+a8,decode=weight-only] --no-gpt2 "
      "--rounds 3 --max-rounds 7 --add-rounds 2 --warmup 1 --prompt-tokens 8 --gen-tokens 6 --batch 1,3 --batch-prompt 4 --batch-steps 2 --batch-rounds 2 --curve-lengths 4,16 "
      "--curve-gen 4 --curve-rounds 2 --curve-schemes float32 int8_dynamic --ppl-tokens 300 --max-slots 8 --max-items 140 --no-plot --no-fp32-check "
      "--powercap-root /nonexistent --perf-root /nonexistent --out " + out);
  INFO(r.out);
  CHECK(r.code == 1);  // one method failed
  CHECK(r.out.find("1 of 6 methods failed") != std::string::npos);  // fp32, its control, 3 methods (int8 joins for the split), the split
  // The documents' names are read as the schemes they name, each with a note; everything after names the scheme.
  CHECK(r.out.find("note: --schemes float32: the source documents' name of fp32; use fp32") != std::string::npos);
  CHECK(r.out.find("note: --curve-schemes int8_dynamic: the source documents' name of int8-per-channel+a8; use int8-per-channel+a8") != std::string::npos);
  const json s = json::parse(mq::read_file(out + "/summary.json"));
  CHECK(s["measured"] == false);
  CHECK(s["warning"].get<std::string>().find("MODELLED") != std::string::npos);
  const json& md = s["models"]["minigpt"];
  const json& ms = md["methods"];
  const json* base = find_config(ms, "fp32");
  const json* ctl = find_config(ms, "fp32 (control)");
  const json* dyn = find_config(ms, "int8-per-channel+a8");
  const json* split = find_config(ms, "int8-per-channel[prefill=+a8,decode=weight-only]");
  const json* bad = find_config(ms, "int5-nonsense");
  REQUIRE(base);
  REQUIRE(ctl);
  REQUIRE(dyn);
  REQUIRE(split);
  REQUIRE(bad);
  REQUIRE(find_config(ms, "int8-per-channel"));  // the split's decode mode, added to compare with
  CHECK((*bad)["status"] == "failed");
  CHECK((*bad)["error"].get<std::string>().find("unknown scheme 'int5-nonsense'") != std::string::npos);
  CHECK((*ctl)["role"] == "control");
  CHECK((*dyn)["source_name"] == "int8_dynamic");
  CHECK((*dyn)["scheme"] == "int8-per-channel+a8");
  // Each configuration measured once per round; the phases add up in every round.
  // Adaptive rounds: 3 planned, then 2 at a time while the control does not pass, 7 at most.
  const int n_rounds = (*dyn)["phases"]["total"]["joules_per_token"]["n"].get<int>();
  CHECK((n_rounds == 3 || n_rounds == 5 || n_rounds == 7));
  for (const json* m : {base, dyn, split}) {
    const auto& p = (*m)["phases"];
    CHECK(p["prefill"]["joules"]["mean"].get<double>() + p["decode"]["joules"]["mean"].get<double>() + p["post"]["joules"]["mean"].get<double>() ==
          doctest::Approx(p["total"]["joules"]["mean"].get<double>()).epsilon(1e-9));
    CHECK((*m)["batch"].size() == 2);
  }
  CHECK((*dyn)["savings_vs_fp32"]["energy_per_token"]["total"].contains("ratio_ci95_low"));
  CHECK((*base)["accuracy"]["greedy_agreement_with_fp32"] == 1.0);
  // The generalization benchmark's accuracy (test half, 10 items of each paradigm): inside its interval, int8
  // activations within the band the full run's 0.914 sits in.
  const double acc = (*dyn)["accuracy"]["accuracy"].get<double>();
  CHECK(acc > 0.80);
  CHECK(acc < 0.99);
  CHECK((*dyn)["accuracy"]["accuracy_ci95"][0].get<double>() < acc);
  CHECK((*dyn)["accuracy"]["accuracy_ci95"][1].get<double>() > acc);
  CHECK((*dyn)["accuracy"]["accuracy_items"] == 110);  // the 11 scored paradigms' items; the diagnostics apart
  // The split runs +a8 in prefill and weight-only in decode, read from the model itself.
  CHECK((*split)["phases_run"]["prefill"]["activations"] == "int8 (dynamic, per token)");
  CHECK((*split)["phases_run"]["decode"]["activations"] == "fp32");
  CHECK((*split)["linear_weight_bytes"] == find_config(ms, "int8-per-channel")->at("linear_weight_bytes"));  // the codes stored once
  REQUIRE(md["splits"].size() == 1);
  CHECK(md["splits"][0]["prefill_uniform"] == "int8-per-channel+a8");
  CHECK(md["splits"][0]["decode_uniform"] == "int8-per-channel");
  CHECK(md["splits"][0]["vs_prefill_uniform"].contains("ratio"));
  // The control and the ranking.
  CHECK(md["control"]["name"] == "fp32 (control)");
  CHECK(md["control"].contains("passes"));
  CHECK(md["control"]["rounds"] == n_rounds);
  CHECK(md["control"]["planned_rounds"] == 3);
  CHECK(md["control"]["added_rounds"] == n_rounds - 3);
  CHECK(md["control"]["load_average"].size() == static_cast<size_t>(n_rounds));
  if (n_rounds < 7) CHECK(md["control"]["passes"] == true);  // it stopped early only because the control passed
  CHECK(r.out.find(std::to_string(n_rounds) + " rounds") != std::string::npos);
  CHECK(md["ranking"]["order"].size() == 4);  // the control is not ranked; the failed one is not measured
  // The prompt-length curve: the given lengths below the longest, then the longest prompt that fits.
  const json& pc = md["prompt_curve"];
  CHECK(pc["lengths"] == json::array({4, 16, 128 - 4 + 1}));  // MiniGPT: n_ctx 128
  CHECK(pc["methods"]["fp32"].size() == 3);
  CHECK(pc["crossover"].contains("int8-per-channel+a8"));
  // Statements with their robustness over the coefficient box (the model meter: 128 corners).
  REQUIRE(!s["statements"].empty());
  for (const auto& st : s["statements"]) {
    CHECK(st["corners"] == 128);
    CHECK(st.contains("mark"));
  }
  // rounds.csv: one row per (task, configuration, round, phase), re-priceable.
  const std::string csv = mq::read_file(out + "/rounds.csv");
  CHECK(csv.rfind("model,task,config,round,position,phase,tokens,seconds,joules,", 0) == 0);
  CHECK(csv.find("\"int8-per-channel[prefill=+a8,decode=weight-only]\"") != std::string::npos);  // quoted: it holds a comma
  CHECK(csv.find("minigpt,prompt16,fp32,1,") != std::string::npos);
  CHECK(csv.find("minigpt,batch3,fp32,1,") != std::string::npos);   // the batch curve's own rounds: 0 and 1
  CHECK(csv.find("minigpt,batch3,fp32,2,") == std::string::npos);
  CHECK(csv.find("minigpt,generation,fp32,2,") != std::string::npos);  // three generation rounds
  CHECK(csv.find("\nmodel,") == std::string::npos);                      // one header for every model and round set
  const std::string report = mq::read_file(out + "/report.txt");
  CHECK(report.find("MODELLED") != std::string::npos);
  CHECK(report.find("control: fp32 (control) / fp32") != std::string::npos);
  CHECK(report.find("int5-nonsense") != std::string::npos);
  const std::string readme = mq::read_file(out + "/README.md");
  CHECK(readme.find("<!-- generated:begin -->") != std::string::npos);
  CHECK(readme.find("Precision per phase") != std::string::npos);
  const json man = json::parse(mq::read_file(out + "/manifest.json"));
  CHECK(man["hardware"]["meters"].size() == 3);
  // --report-only redraws from what the run wrote: the summary passes check_energy_summary's shape check.
  const CliResult again = run_cli("energy --report-only --no-plot --out " + out);
  INFO(again.out);
  CHECK(again.code == 0);
  CHECK(mq::read_file(out + "/report.txt") == report);
  fs::remove_all(out);
}

TEST_CASE("miniquant energy --quant-map: the map is a method named by its config_id, its Linears charged as each runs") {
  const std::string out = mqtest::temp_path("mq_test", "mq_energy_map");
  fs::remove_all(out);
  // The shipped MiniGPT has 4 layers: the first two run +a8, the last two store the same codes weight-only.
  const std::string map = write_test_file(out + "_in", "half.json", R"({"config_id": "half-a8", "default": "int8-per-channel",
      "layer_groups": [{"layers": [0, 1], "quant": "int8-per-channel+a8"}]})");
  // One benchmark item per paradigm (--max-items 14): this case checks how the map is charged, not accuracy.
  const std::string common = " --no-gpt2 --no-control --splits none --rounds 2 --warmup 0 --prompt-tokens 8 --gen-tokens 4 --batch 1 "
                             "--batch-prompt 4 --batch-steps 2 --curve-rounds 0 --ppl-tokens 300 --max-slots 8 --max-items 14 --no-plot --no-fp32-check "
                             "--powercap-root /nonexistent --perf-root /nonexistent --out " + out;
  const CliResult r = run_cli("energy --schemes fp32 int8-per-channel+a8 --quant-map " + map + common);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const json s = json::parse(mq::read_file(out + "/summary.json"));
  const auto& ms = s["models"]["minigpt"]["methods"];
  REQUIRE(ms.size() == 3);
  CHECK(ms[2]["name"] == "half-a8");
  CHECK(ms[2]["status"] == "ok");
  CHECK(ms[2]["scheme"] == "mixed");
  CHECK(ms[2]["quant_map"]["config_id"] == "half-a8");
  CHECK(ms[2]["activations"] == "int8 (dynamic, per token) in 8 of 16 Linears, fp32 in the others");
  CHECK(ms[1]["activations"] == "int8 (dynamic, per token)");
  CHECK(ms[0]["activations"] == "fp32");
  CHECK_FALSE(ms[1].contains("quant_map"));
  CHECK(ms[2].contains("savings_vs_fp32"));
  CHECK_FALSE(s["models"]["minigpt"].contains("control"));
  // --curve-rounds 0: no prompt-length curve, so no statement about where prefill overtakes decode.
  CHECK_FALSE(s["models"]["minigpt"].contains("prompt_curve"));
  for (const auto& st : s["statements"]) CHECK(st["text"].get<std::string>().find("prompt") == std::string::npos);
  // Every layer has the same shapes: half of int8-per-channel+a8's Linear operations move to fp32.
  const auto work = [&](size_t i) { return ms[i]["phases"]["decode"]["work"]; };
  CHECK(work(2)["ops_int8"].get<double>() == doctest::Approx(work(1)["ops_int8"].get<double>() / 2).epsilon(1e-12));
  CHECK(work(2)["ops_int8"].get<double>() + work(2)["flops_fp32"].get<double>() ==
        doctest::Approx(work(1)["ops_int8"].get<double>() + work(1)["flops_fp32"].get<double>()).epsilon(1e-12));
  CHECK(work(2)["bytes_total"] == work(1)["bytes_total"]);
  CHECK(s["options"]["quant_maps"][0] == map);

  // A map named like a method, or two maps of one name: one line, exit 2, before any work.
  const std::string dup = write_test_file(out + "_in", "dup.json", R"({"config_id": "int8-per-channel+a8", "default": "int4-g64"})");
  fs::remove_all(out);
  for (const std::string& args : {"--schemes fp32 int8-per-channel+a8 --quant-map " + dup, "--schemes fp32 --quant-map " + map + " --quant-map " + map}) {
    CAPTURE(args);
    const CliResult d = run_cli("energy " + args + common);
    CHECK(d.code == 2);
    CHECK(lines(d.out) == 1);
    CHECK(d.out.find("already a method's name") != std::string::npos);
    CHECK_FALSE(fs::exists(out + "/summary.json"));
  }
  const std::string bad = write_test_file(out + "_in", "bad.json", R"({"config_id": "x", "default": "int5-g64"})");
  const CliResult b = run_cli("energy --schemes fp32 --quant-map " + bad + common);
  CHECK(b.code == 2);
  CHECK(lines(b.out) == 1);
  CHECK(b.out.find("int5-g64") != std::string::npos);
  fs::remove_all(out);
  fs::remove_all(out + "_in");
}

TEST_CASE("under load the energy study's OpenMP threads wait passively; a policy the user set is kept and recorded") {
  const std::string out = mqtest::temp_path("mq_test", "mq_energy_wait");
  fs::remove_all(out);
  // One benchmark item per paradigm (--max-items 14): the case checks the wait policy, not accuracy.
  const std::string common = " --schemes fp32 --no-gpt2 --no-control --splits none --rounds 2 --warmup 0 --prompt-tokens 8 --gen-tokens 4 "
                             "--batch 1 --batch-prompt 4 --batch-steps 2 --curve-rounds 0 --ppl-tokens 300 --max-slots 8 --max-items 14 --no-plot "
                             "--no-fp32-check --powercap-root /nonexistent --perf-root /nonexistent --out " + out;
  // Two busy shells beside it, started before it and stopped after; the policy the test environment sets is removed.
  const mq::CommandOutput loaded = mq::run_command(
      "env -u OMP_WAIT_POLICY -u MQ_OMP_WAIT_CHOICE sh -c '(while :; do :; done) & A=$!; (while :; do :; done) & B=$!; sleep 0.5; " +
      std::string(MQ_CLI_PATH) + " energy" + common + "; rc=$?; kill $A $B; exit $rc' 2>&1");
  INFO(loaded.out);
  REQUIRE(loaded.code == 0);
  const json m = json::parse(mq::read_file(out + "/manifest.json"));
  CHECK(m["machine"]["omp_wait_policy"]["policy"] == "passive");
  CHECK(m["machine"]["omp_wait_policy"]["chosen_by"].get<std::string>().rfind("load: ", 0) == 0);
  CHECK(loaded.out.find("threads waiting passive (load: ") != std::string::npos);
  CHECK(mq::read_file(out + "/README.md").find("OpenMP threads waiting passive, chosen by load: ") != std::string::npos);

  const mq::CommandOutput user = mq::run_command("env -u MQ_OMP_WAIT_CHOICE OMP_WAIT_POLICY=active " + std::string(MQ_CLI_PATH) + " energy" + common + " 2>&1");
  INFO(user.out);
  REQUIRE(user.code == 0);
  const json u = json::parse(mq::read_file(out + "/manifest.json"));
  CHECK(u["machine"]["omp_wait_policy"]["policy"] == "active");
  CHECK(u["machine"]["omp_wait_policy"]["chosen_by"] == "the user (OMP_WAIT_POLICY=active)");
  fs::remove_all(out);
}
