// The energy driver: phase energies add up to the run's total (with a counting meter whose every
// reading is known), the batch curve's accounting, each Linear's operations charged as it runs, and
// `miniquant energy` end to end on the shipped MiniGPT: a failing method recorded while the others
// complete, every trial's CSV row in its JSON, the model's label everywhere, a quant map's method,
// bad flags exiting 2 with one line, --calibrate refusing without a meter.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/energy_phases.h"
#include "experiments/energy_run.h"
#include "experiments/energy_work.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/throughput.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"

namespace fs = std::filesystem;
using namespace mqexp;

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

TEST_CASE("method names map to schemes") {
  CHECK(scheme_for_method("float32") == "fp32");
  CHECK(scheme_for_method("float16") == "fp16");
  CHECK(scheme_for_method("bfloat16") == "bf16");
  CHECK(scheme_for_method("int8") == "int8-per-channel");
  CHECK(scheme_for_method("int8_dynamic") == "int8-per-channel+a8");
  CHECK(scheme_for_method("int4-g64-gptq+a8") == "int4-g64-gptq+a8");
}

TEST_CASE("bad energy flags exit 2 with one line") {
  for (const char* args : {"energy --trials 1", "energy --trials x", "energy --meter watts", "energy --batch 0",
                           "energy --batch 1,a", "energy --gen-tokens 1", "energy --warmup -1", "energy --bogus",
                           "energy --prompt-tokens 0"}) {
    CAPTURE(args);
    const CliResult r = run_cli(std::string(args) + " --out /tmp/mq_energy_badflags");
    CHECK(r.code == 2);
    CHECK(lines(r.out) == 1);
    CHECK(r.out.rfind("miniquant: error: ", 0) == 0);
  }
  const CliResult r = run_cli("energy --meter watts --out /tmp/mq_energy_badflags");
  CHECK(r.out.find("expected auto, rapl, perf or model") != std::string::npos);
  fs::remove_all("/tmp/mq_energy_badflags");
}

TEST_CASE("--calibrate without a meter fails with one clear line, before any work") {
  const std::string out = (fs::temp_directory_path() / "mq_energy_calib").string();
  const CliResult r = run_cli("energy --calibrate --powercap-root /nonexistent --perf-root /nonexistent --out " + out);
  CHECK(r.code == 1);
  CHECK(r.out.find("--calibrate needs a real energy meter") != std::string::npos);
  CHECK_FALSE(fs::exists(out + "/summary.json"));
  fs::remove_all(out);
}

TEST_CASE("miniquant energy end to end: a failing method is recorded, the others complete; CSV in JSON") {
  const std::string out = (fs::temp_directory_path() / "mq_energy_e2e").string();
  fs::remove_all(out);
  const CliResult r = run_cli(
      "energy --methods float32 int5-nonsense int8_dynamic --no-gpt2 --trials 2 --warmup 1 --prompt-tokens 8 --gen-tokens 6 "
      "--batch 1,3 --batch-prompt 4 --batch-steps 2 --ppl-tokens 300 --max-slots 8 --no-plot --powercap-root /nonexistent "
      "--perf-root /nonexistent --out " + out);
  INFO(r.out);
  CHECK(r.code == 1);  // one method failed
  CHECK(r.out.find("1 of 3 methods failed") != std::string::npos);
  const nlohmann::json s = nlohmann::json::parse(mq::read_file(out + "/summary.json"));
  const std::string coef = MQ_SOURCE_DIR "/data/energy_model.json";
  CHECK(s["energy_source"] == "model:" + coef);
  CHECK(s["measured"] == false);
  CHECK(s["warning"].get<std::string>().find("MODELLED") != std::string::npos);
  const auto& ms = s["models"]["minigpt"]["methods"];
  REQUIRE(ms.size() == 3);
  CHECK(ms[0]["method"] == "float32");
  CHECK(ms[0]["status"] == "ok");
  CHECK(ms[1]["status"] == "failed");
  CHECK(ms[1]["error"].get<std::string>().find("unknown scheme 'int5-nonsense'") != std::string::npos);
  CHECK(ms[2]["status"] == "ok");
  CHECK(ms[0]["accuracy"]["greedy_agreement_with_float32"] == 1.0);
  const double agree = ms[2]["accuracy"]["greedy_agreement_with_float32"].get<double>();
  CHECK(agree >= 0.0);
  CHECK(agree <= 1.0);
  CHECK(ms[2]["accuracy"]["ppl"].get<double>() > 1.0);
  CHECK(ms[2]["savings_vs_float32"]["energy_per_token"]["total"].contains("saving_ci95_low"));
  CHECK(ms[2]["phases"]["total"]["joules_per_token"]["n"] == 2);
  CHECK(ms[2]["warmup"]["total"]["joules_per_token"]["n"] == 1);
  CHECK(ms[2]["batch"].size() == 2);
  CHECK(ms[2]["peak_rss_bytes"].get<double>() > 1e6);
  // Phase joules add to the total in every method's means.
  for (const auto& m : {ms[0], ms[2]}) {
    const auto& p = m["phases"];
    CHECK(p["prefill"]["joules"]["mean"].get<double>() + p["decode"]["joules"]["mean"].get<double>() +
              p["post"]["joules"]["mean"].get<double>() == doctest::Approx(p["total"]["joules"]["mean"].get<double>()).epsilon(1e-9));
  }
  // Every trial: a JSON and a CSV whose every column is the JSON's value.
  for (const std::string method : {"float32", "int8_dynamic"})
    for (const std::string f : {"trial_0", "trial_1", "warmup_0"}) {
      const std::string base = out + "/trials/" + method + "/" + f;
      REQUIRE(fs::exists(base + ".json"));
      REQUIRE(fs::exists(base + ".csv"));
      const nlohmann::json t = nlohmann::json::parse(mq::read_file(base + ".json"));
      CHECK(t["energy_source"] == "model:" + coef);
      std::istringstream csv(mq::read_file(base + ".csv"));
      std::string head, row;
      std::getline(csv, head);
      std::getline(csv, row);
      const auto fields = trial_fields(t);
      CHECK(std::count(head.begin(), head.end(), ',') + 1 == static_cast<long>(fields.size()));
      CHECK(std::count(row.begin(), row.end(), ',') == std::count(head.begin(), head.end(), ','));
      std::istringstream hs(head), rs(row);
      std::string h, v;
      for (const auto& [k, val] : fields) {
        std::getline(hs, h, ',');
        std::getline(rs, v, ',');
        CHECK(h == k);
        CHECK(v == (val.is_null() ? std::string() : val.is_string() ? val.get<std::string>() : val.dump()));
      }
      CHECK(t["phases"]["decode"]["zones"].contains("static"));
    }
  CHECK_FALSE(fs::exists(out + "/trials/int5-nonsense"));
  const std::string report = mq::read_file(out + "/report.txt");
  CHECK(report.find("MODELLED") != std::string::npos);
  CHECK(report.find(coef) != std::string::npos);
  CHECK(report.find("int5-nonsense") != std::string::npos);
  const std::string readme = mq::read_file(out + "/README.md");
  CHECK(readme.find("<!-- generated:begin -->") != std::string::npos);
  CHECK(readme.find("Most energy saved per token: int8_dynamic") != std::string::npos);
  const nlohmann::json man = nlohmann::json::parse(mq::read_file(out + "/manifest.json"));
  CHECK(man["energy_source"] == "model:" + coef);
  CHECK(man["hardware"]["meters"].size() == 3);
  fs::remove_all(out);
}

TEST_CASE("miniquant energy --quant-map: the map is a method named by its config_id, its Linears charged as each runs") {
  const std::string out = (fs::temp_directory_path() / "mq_energy_map").string();
  fs::remove_all(out);
  // The shipped MiniGPT has 4 layers: the first two run +a8, the last two store the same codes weight-only.
  const std::string map = write_test_file(out + "_in", "half.json", R"({"config_id": "half-a8", "default": "int8-per-channel",
      "layer_groups": [{"layers": [0, 1], "quant": "int8-per-channel+a8"}]})");
  const std::string common = " --no-gpt2 --trials 2 --warmup 0 --prompt-tokens 8 --gen-tokens 4 --batch 1 --batch-prompt 4 "
                             "--batch-steps 2 --ppl-tokens 300 --max-slots 8 --no-plot --powercap-root /nonexistent "
                             "--perf-root /nonexistent --out " + out;
  const CliResult r = run_cli("energy --methods float32 int8_dynamic --quant-map " + map + common);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const nlohmann::json s = nlohmann::json::parse(mq::read_file(out + "/summary.json"));
  const auto& ms = s["models"]["minigpt"]["methods"];
  REQUIRE(ms.size() == 3);
  CHECK(ms[2]["method"] == "half-a8");
  CHECK(ms[2]["status"] == "ok");
  CHECK(ms[2]["scheme"] == "mixed");
  CHECK(ms[2]["quant_map"]["config_id"] == "half-a8");
  CHECK(ms[2]["activations"] == "int8 (dynamic, per token) in 8 of 16 Linears, fp32 in the others");
  CHECK(ms[1]["activations"] == "int8 (dynamic, per token)");
  CHECK(ms[0]["activations"] == "fp32");
  CHECK_FALSE(ms[1].contains("quant_map"));
  CHECK(ms[2].contains("savings_vs_float32"));
  // Every layer has the same shapes: half of int8_dynamic's Linear operations move to fp32.
  const auto work = [&](size_t i) { return ms[i]["phases"]["decode"]["work"]; };
  CHECK(work(2)["ops_int8"].get<double>() == doctest::Approx(work(1)["ops_int8"].get<double>() / 2).epsilon(1e-12));
  CHECK(work(2)["ops_int8"].get<double>() + work(2)["flops_fp32"].get<double>() ==
        doctest::Approx(work(1)["ops_int8"].get<double>() + work(1)["flops_fp32"].get<double>()).epsilon(1e-12));
  CHECK(work(2)["bytes_total"] == work(1)["bytes_total"]);
  CHECK(fs::exists(out + "/trials/half-a8/trial_0.json"));
  CHECK(nlohmann::json::parse(mq::read_file(out + "/trials/half-a8/trial_1.json"))["scheme"] == "mixed");
  CHECK(s["options"]["quant_maps"][0] == map);

  // A map named like a method, or two maps of one name: one line, exit 2, before any work.
  const std::string dup = write_test_file(out + "_in", "dup.json", R"({"config_id": "int8_dynamic", "default": "int4-g64"})");
  fs::remove_all(out);
  for (const std::string& args : {"--methods float32 int8_dynamic --quant-map " + dup, "--methods float32 --quant-map " + map + " --quant-map " + map}) {
    CAPTURE(args);
    const CliResult d = run_cli("energy " + args + common);
    CHECK(d.code == 2);
    CHECK(lines(d.out) == 1);
    CHECK(d.out.find("already a method's name") != std::string::npos);
    CHECK_FALSE(fs::exists(out + "/summary.json"));
  }
  const std::string bad = write_test_file(out + "_in", "bad.json", R"({"config_id": "x", "default": "int5-g64"})");
  const CliResult b = run_cli("energy --methods float32 --quant-map " + bad + common);
  CHECK(b.code == 2);
  CHECK(lines(b.out) == 1);
  CHECK(b.out.find("int5-g64") != std::string::npos);
  fs::remove_all(out);
  fs::remove_all(out + "_in");
}
