// The mixed-precision study's pieces that need no trained model: a quant map giving every Linear the same
// recipe is exactly the uniform plan (same stored codes, same logits), the study's unit lists, unit keys,
// the validation of its options and config folders, the energy fit, and the answers drawn from paired rounds.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/core.h>

#include "experiments/energy_summary.h"
#include "experiments/mixed.h"
#include "experiments/mixed_answers.h"
#include "experiments/mixed_energy.h"
#include "experiments/mixed_report.h"
#include "miniquant/energy/model.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "temp_dir.h"

namespace {

const minigpt::ModelConfig kTiny{.vocab_size = 97, .n_ctx = 32, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512};

std::vector<std::vector<int32_t>> windows() {
  std::vector<std::vector<int32_t>> w;
  for (int k = 0; k < 4; ++k) {
    std::vector<int32_t> t;
    for (int i = 0; i < kTiny.n_ctx; ++i) t.push_back((i * 7 + k * 13) % kTiny.vocab_size);
    w.push_back(t);
  }
  return w;
}

void same_model(minigpt::Model& a, minigpt::Model& b) {
  const auto wa = minigpt::stored_weights(a), wb = minigpt::stored_weights(b);
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    CAPTURE(wa[i].first);
    const mq::QTensor &x = wa[i].second, &y = wb[i].second;
    CHECK(x.scheme.name() == y.scheme.name());
    REQUIRE(x.codes.size() == y.codes.size());
    CHECK(std::memcmp(x.codes.data(), y.codes.data(), x.codes.size()) == 0);
    CHECK(x.scales == y.scales);
  }
  const std::vector<int32_t> toks = windows()[1];
  CHECK(a.logits(toks) == b.logits(toks));  // bit for bit
}

}  // namespace

TEST_CASE("a map with every Linear at one recipe is exactly the uniform plan (RTN and GPTQ)") {
  for (const std::string recipe : {"int4-g64", "int3-g64-gptq", "int8-per-channel"}) {
    CAPTURE(recipe);
    // Both layers named in a group, and every tensor kind named again: the last matching rule wins, all of them say `recipe`.
    const nlohmann::json map = {{"config_id", "all-" + recipe}, {"default", "fp16"},
                                {"layer_groups", {{{"layers", {0, 1}}, {"quant", recipe}}}},
                                {"tensors", {{{"match", "qkv"}, {"quant", recipe}}, {{"match", "mlp_down"}, {"layers", {1}}, {"quant", recipe}}}}};
    const minigpt::QuantPlan mixed = minigpt::QuantPlan::from_json(map);
    const minigpt::QuantPlan uni = minigpt::QuantPlan::uniform(recipe);
    minigpt::Model a(kTiny, 42), b(kTiny, 42);
    minigpt::quantize_model(a, mixed, windows());
    minigpt::quantize_model(b, uni, windows());
    same_model(a, b);
  }
}

TEST_CASE("the study's units: the baseline, every map, every Linear x recipe and layer x recipe below 8 bits") {
  const std::string dir = mqtest::temp_path("mq_test", "mq_test_mixed/configs");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  mq::write_file_atomic(dir + "/b.json", R"({"config_id": "protect-early", "default": "int4-g64", "layer_groups": [{"layers": [0], "quant": "int8-per-channel"}]})");
  mq::write_file_atomic(dir + "/a.json", R"({"config_id": "uniform-int3", "default": "int3-g64-gptq"})");
  mqexp::MixedOptions o;
  o.configs_dir = dir;
  o.calibration = 7;
  const auto cu = mqexp::config_units(o);
  REQUIRE(cu.size() == 3);
  CHECK(cu[0].id == "fp32");
  CHECK(cu[1].id == "uniform-int3");  // files in name order
  CHECK(cu[2].id == "protect-early");
  CHECK(cu[1].plan.gptq.calibration_windows == 7);  // the study's setting applies to every map
  const auto su = mqexp::sensitivity_units(o, kTiny);
  // base + 2 layers x 4 kinds x 4 recipes + 2 layers x 3 recipes below 8 bits
  CHECK(su.size() == 1 + 2 * 4 * 4 + 2 * 3);
  CHECK(su[0].id == "base-fp16");
  CHECK(su[1].id == "L0-qkv-int2-g64-gptq");
  // A sensitivity unit: one Linear in the recipe, everything else fp16.
  const minigpt::QuantPlan& p = su[1].plan;
  CHECK(p.recipe_for(0, minigpt::LinearKind::qkv).name() == "int2-g64-gptq");
  CHECK(p.recipe_for(0, minigpt::LinearKind::mlp_up).name() == "fp16");
  CHECK(p.recipe_for(1, minigpt::LinearKind::qkv).name() == "fp16");
  CHECK(su.back().id == "L1-all-int4-g64-gptq");

  SUBCASE("unit keys change with the plan and with what the unit measures, not with the shard") {
    const std::string k = mqexp::unit_key(o, cu[1], "sha");
    mqexp::MixedOptions o2 = o;
    o2.shard = 1;
    o2.shards = 3;
    CHECK(mqexp::unit_key(o2, cu[1], "sha") == k);
    o2.ppl_tokens = 99;
    CHECK(mqexp::unit_key(o2, cu[1], "sha") != k);
    CHECK(mqexp::unit_key(o2, su[1], "sha") == mqexp::unit_key(o, su[1], "sha"));  // sensitivity units do not use ppl_tokens
    CHECK(mqexp::unit_key(o, cu[1], "other checkpoint") != k);
    CHECK(mqexp::unit_key(o, cu[2], "sha") != k);
  }
  SUBCASE("config folders: duplicate ids, ids that cannot name a file, bad maps, no maps") {
    mq::write_file_atomic(dir + "/c.json", R"({"config_id": "uniform-int3", "default": "int4-g64"})");
    CHECK_THROWS_WITH_AS(mqexp::load_mixed_configs(dir), doctest::Contains("used by another configuration"), mq::UsageError);
    mq::write_file_atomic(dir + "/c.json", R"({"config_id": "../escape", "default": "int4-g64"})");
    CHECK_THROWS_WITH_AS(mqexp::load_mixed_configs(dir), doctest::Contains("config_id \"../escape\" cannot name a file: it contains a path separator"), mq::UsageError);
    mq::write_file_atomic(dir + "/c.json", R"({"config_id": "fp32", "default": "int4-g64"})");
    CHECK_THROWS_WITH_AS(mqexp::load_mixed_configs(dir), doctest::Contains("used by another"), mq::UsageError);
    mq::write_file_atomic(dir + "/c.json", R"({"config_id": "x", "default": "int5-g64"})");
    CHECK_THROWS_AS(mqexp::load_mixed_configs(dir), mq::UsageError);
    mq::write_file_atomic(dir + "/c.json", R"({"config_id": "x", "default": )");
    CHECK_THROWS_AS(mqexp::load_mixed_configs(dir), mq::Error);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    CHECK_THROWS_WITH_AS(mqexp::load_mixed_configs(dir), doctest::Contains("no *.json"), mq::UsageError);
    CHECK_THROWS_WITH_AS(mqexp::load_mixed_configs(dir + "/missing"), doctest::Contains("not a folder"), mq::UsageError);
  }
}

TEST_CASE("the study's options are checked before anything runs") {
  mqexp::MixedOptions o;
  CHECK_NOTHROW(mqexp::validate(o));
  auto bad = [](auto change) {
    mqexp::MixedOptions x;
    change(x);
    CHECK_THROWS_AS(mqexp::validate(x), mq::UsageError);
  };
  bad([](mqexp::MixedOptions& x) { x.rounds = 1; });
  bad([](mqexp::MixedOptions& x) { x.gens = 0; });
  bad([](mqexp::MixedOptions& x) { x.shard = 2; x.shards = 2; });
  bad([](mqexp::MixedOptions& x) { x.shard = -1; });
  bad([](mqexp::MixedOptions& x) { x.shards = 0; });
  bad([](mqexp::MixedOptions& x) { x.calibration = 0; });
  bad([](mqexp::MixedOptions& x) { x.gen_tokens = 1; });
  bad([](mqexp::MixedOptions& x) { x.max_rounds = 20; });  // below --rounds (30)
  bad([](mqexp::MixedOptions& x) { x.add_rounds = 0; });
  bad([](mqexp::MixedOptions& x) { x.sensitivity_recipes = {"fp16"}; });
  bad([](mqexp::MixedOptions& x) { x.sensitivity_recipes = {"int9-g64"}; });
}

TEST_CASE("the energy fit recovers known per-weight prices and refuses what it cannot separate") {
  // Three recipes with prices 2, 1 and 0.5 nJ per weight; configurations mix them in different proportions
  // (each stores the same 1M weights, as every map of the study does).
  const std::map<std::string, double> price = {{"a", 2e-9}, {"b", 1e-9}, {"c", 0.5e-9}};
  const std::vector<std::map<std::string, double>> w = {
      {{"a", 1e6}}, {{"b", 1e6}}, {{"c", 1e6}}, {{"a", 5e5}, {"b", 5e5}}, {{"b", 2.5e5}, {"c", 7.5e5}}, {{"a", 1e5}, {"c", 9e5}}};
  std::vector<double> j;
  for (const auto& x : w) {
    double s = 0;
    for (const auto& [r, n] : x) s += price.at(r) * n;
    j.push_back(s);
  }
  const auto f = mqexp::fit_energy_per_weight(w, j);
  REQUIRE(f.has_value());
  CHECK(f->configs == 6);
  for (const auto& [r, p] : price) CHECK(f->joules_per_weight.at(r) == doctest::Approx(p).epsilon(1e-9));
  CHECK(f->r2 == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(f->max_abs_residual < 1e-12);

  // Noise in one measurement shows as a residual and an R² below 1.
  std::vector<double> noisy = j;
  noisy[3] *= 1.05;
  const auto g = mqexp::fit_energy_per_weight(w, noisy);
  REQUIRE(g.has_value());
  CHECK(g->r2 < 1.0);
  CHECK(g->r2 > 0.9);
  CHECK(g->max_abs_residual > 1e-6 * 0.05);

  // Too few measurements for three prices, and two recipes that always appear together.
  CHECK_FALSE(mqexp::fit_energy_per_weight({w.begin(), w.begin() + 4}, {j.begin(), j.begin() + 4}).has_value());
  const std::vector<std::map<std::string, double>> tied = {{{"a", 5e5}, {"b", 5e5}}, {{"a", 2e5}, {"b", 2e5}, {"c", 6e5}},
                                                           {{"c", 1e6}}, {{"a", 1e5}, {"b", 1e5}, {"c", 8e5}}, {{"a", 4e5}, {"b", 4e5}, {"c", 2e5}}};
  CHECK_FALSE(mqexp::fit_energy_per_weight(tied, {1, 2, 3, 4, 5}).has_value());
  CHECK_THROWS_AS(mqexp::fit_energy_per_weight(w, {1.0}), mq::Error);
}

namespace {
// A configuration as merge_mixed() writes it, with the fields the answers read; its plan a uniform map.
nlohmann::json fake_config(const std::string& id, const std::string& kind, const std::string& scheme, double bytes, double ppl, double kl,
                           double acc) {
  nlohmann::json c;
  c["config_id"] = id;
  c["kind"] = kind;
  minigpt::QuantPlan p = minigpt::QuantPlan::uniform(scheme);
  p.id = id;
  c["plan"] = p.to_json();
  c["row"] = {{"ppl", ppl}, {"bytes", bytes}, {"divergence", {{"kl", {{"mean", kl}}}, {"delta_ppl", {{"ci95", {-0.01, 0.01}}}}}}};
  c["accuracy"] = acc;
  return c;
}

// Rounds whose speed drifts 1x..2x; each configuration costs `j` (J/token at drift 1) in every round.
mqexp::EnergySetData fake_rounds(const std::map<std::string, double>& j, int rounds) {
  mqexp::EnergySetData d;
  d.rounds.rounds = rounds;
  d.expected_rounds = rounds;
  for (int k = 0; k < rounds; ++k) {
    d.round_indices.push_back(k);
    for (const auto& [id, v] : j) {
      mqexp::Measurement m;
      mqexp::PhaseStats p;
      p.tokens = 10;
      p.seconds = 0.01 * (1 + k / double(rounds));
      p.joules = 10 * v * (1 + k / double(rounds)) * (1 + 1e-4 * ((k * 7 + static_cast<int>(id.size())) % 5));  // a little noise
      p.work.bytes[3] = 1e6;
      for (const char* ph : {"prefill", "decode", "post", "total"}) m.phases[ph] = p;
      d.rounds.results["generation"][id].push_back(m);
    }
  }
  return d;
}
}  // namespace

TEST_CASE("the study's answers: paired EPI of perplexity-matched pairs, the control, the frontier, the EPI optimum, statements") {
  nlohmann::json configs = nlohmann::json::array(
      {fake_config("fp32", "baseline", "fp32", 400, 15.0, 0, 0.80),
       fake_config("u", "uniform", "int4-g64", 100, 15.1, 1e-4, 0.79),
       fake_config("m1", "mixed", "int4-g128", 120, 15.101, 2e-4, 0.79),   // matched to u, 1.1x its joules
       fake_config("m2", "mixed", "int8-per-channel", 200, 15.102, 3e-4, 0.795),  // matched, 2x u's joules, more accurate
       fake_config("far", "mixed", "int2-g64", 90, 16.0, 1e-2, 0.70)});   // not matched; cheapest but least accurate
  const mqexp::EnergySetData e =
      fake_rounds({{"fp32", 3e-3}, {mqexp::kMixedControl, 3e-3}, {"u", 2e-3}, {"m1", 2.2e-3}, {"m2", 4e-3}, {"far", 1e-3}}, 8);
  const nlohmann::json set = mqexp::mixed_energy_json(e, "all", configs);
  CHECK(set["control"]["contains_one"] == true);
  CHECK(set["control"]["passes"] == true);
  CHECK(configs[1]["energy"]["vs_fp32"]["total"]["ratio"].get<double>() == doctest::Approx(2.0 / 3).epsilon(1e-3));
  CHECK(configs[1]["epi"].get<double>() == doctest::Approx(2e-3 * 1.5 / 0.79).epsilon(1e-2));  // mean over the drifting rounds
  const mq::energy::Coefficients coeffs = mq::energy::load_coefficients(MQ_SOURCE_DIR "/data/energy_model.json");
  const nlohmann::json a = mqexp::mixed_answers(configs, e, &coeffs, nlohmann::json::object(), 4);
  // RQ1: fp32, u, m1 and m2 are pairwise within the ΔPPL half-widths' reach (0.01): 3 pairs among u, m1, m2.
  CHECK(a["pairs_total"] == 3);
  CHECK(a["rq1"]["differ"] == 3);  // paired, the drift cancels: even 1.1x is resolved
  CHECK(a["rq1"]["largest"]["a"] == "u");
  CHECK(a["rq1"]["largest"]["b"] == "m2");
  // RQ2: "far" is cheapest, m2 is the most accurate quantized map... and fp32 the most accurate; u beats m1 on both axes.
  std::set<std::string> front;
  for (const auto& f : a["rq2"]["frontier"]) front.insert(f["config_id"]);
  CHECK(front.count("far"));
  CHECK(front.count("fp32"));
  CHECK_FALSE(front.count("m1"));
  // RQ4: EPI far = 1e-3/0.70 is the lowest; smaller than u (the uniform 4-bit reference here is absent: no comparison).
  CHECK(a["rq4"]["epi_optimal"] == "far");
  // Statements re-priced over the box: each has 128 corners and a mark.
  REQUIRE(!a["statements"].empty());
  for (const auto& st : a["statements"]) {
    CHECK(st["corners"] == 128);
    CHECK(st["holds"] == true);
  }
  // A measured run has no coefficients to vary.
  const nlohmann::json m = mqexp::mixed_answers(configs, e, nullptr, nlohmann::json::object(), 4);
  for (const auto& st : m["statements"]) CHECK(st["measured"] == true);
}

namespace {
// One round of two configurations, fp32 and its control: the control's J/token is fp32's times `factor`.
void add_round(mqexp::EnergySetData& d, double factor) {
  for (const auto& [id, v] : std::map<std::string, double>{{"fp32", 3e-3}, {mqexp::kMixedControl, 3e-3 * factor}}) {
    mqexp::Measurement m;
    mqexp::PhaseStats p;
    p.tokens = 10;
    p.seconds = 0.01;
    p.joules = 10 * v;
    for (const char* ph : {"prefill", "decode", "post", "total"}) m.phases[ph] = p;
    d.rounds.results["generation"][id].push_back(m);
  }
  d.round_indices.push_back(d.rounds.rounds++);
}
// A fixed stream in [-1, 1) (splitmix64), the same on every platform.
double unit_noise(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return 2.0 * static_cast<double>((z ^ (z >> 31)) >> 11) / 9007199254740992.0 - 1.0;
}
// The adaptive loop of run_mixed_energy on synthetic rounds: `control(k)` is round k's control factor.
int adapt(mqexp::EnergySetData& d, int planned, int bound, int step, const std::function<double(int)>& control) {
  for (int k = 0; k < planned; ++k) add_round(d, control(k));
  for (int add; (add = mqexp::mixed_rounds_to_add(mqexp::mixed_control_ratio(d.rounds), d.rounds.rounds, bound, step)) > 0;)
    for (int i = 0; i < add; ++i) add_round(d, control(d.rounds.rounds));
  return d.rounds.rounds;
}
}  // namespace

TEST_CASE("adaptive energy rounds: added while the control does not pass, up to the bound, said in the report") {
  // The rule itself.
  CHECK(mqexp::mixed_rounds_to_add({1.0, 0.99, 1.01}, 30, 90, 15) == 0);   // passes
  CHECK(mqexp::mixed_rounds_to_add({1.0, 0.96, 1.04}, 30, 90, 15) == 15);  // too wide
  CHECK(mqexp::mixed_rounds_to_add({1.02, 1.01, 1.03}, 30, 90, 15) == 15); // excludes 1.00
  CHECK(mqexp::mixed_rounds_to_add({1.0, 0.96, 1.04}, 80, 90, 15) == 10);  // the last step stops at the bound
  CHECK(mqexp::mixed_rounds_to_add({1.0, 0.96, 1.04}, 90, 90, 15) == 0);
  // A quiet machine: +-1% per round, the 30 planned rounds answer.
  uint64_t s = 42;
  mqexp::EnergySetData quiet;
  CHECK(adapt(quiet, 30, 90, 15, [&](int) { return 1.0 + 0.01 * unit_noise(s); }) == 30);
  // A shared machine: +-15% per round and one round in four disturbed by up to +-25% more: the planned rounds fail
  // on width, the added ones bring the interval inside +-3% before the bound.
  mqexp::EnergySetData busy;
  s = 7;
  const auto disturbed = [&](int k) { return 1.0 + 0.15 * unit_noise(s) + (k % 4 == 3 ? 0.25 * unit_noise(s) : 0.0); };
  {
    mqexp::EnergySetData first;
    uint64_t s2 = 7;
    const auto same = [&](int k) { return 1.0 + 0.15 * unit_noise(s2) + (k % 4 == 3 ? 0.25 * unit_noise(s2) : 0.0); };
    for (int k = 0; k < 30; ++k) add_round(first, same(k));
    CHECK_FALSE(mqexp::control_passes(mqexp::mixed_control_ratio(first.rounds)));  // the planned rounds alone fail
  }
  const int n = adapt(busy, 30, 300, 15, disturbed);
  CHECK(n > 30);
  CHECK(n < 300);
  CHECK(mqexp::control_passes(mqexp::mixed_control_ratio(busy.rounds)));
  // A control 5% off in every round (a real bias, not noise) is never answered: the loop stops at the bound.
  mqexp::EnergySetData biased;
  s = 9;
  CHECK(adapt(biased, 30, 90, 15, [&](int) { return 1.05 + 0.01 * unit_noise(s); }) == 90);
  CHECK_FALSE(mqexp::control_passes(mqexp::mixed_control_ratio(biased.rounds)));
  // The report names the planned and the added rounds.
  busy.expected_rounds = 30;
  nlohmann::json configs = nlohmann::json::array({fake_config("fp32", "baseline", "fp32", 400, 15.0, 0, 0.80)});
  const nlohmann::json set = mqexp::mixed_energy_json(busy, "configs", configs);
  CHECK(set["rounds"] == n);
  CHECK(set["expected_rounds"] == 30);
  const std::string md = mqexp::mixed_summary_text(nlohmann::json{{"energy", set}});
  CHECK(md.find(fmt::format("{} paired rounds (30 planned, {} added while the control did not pass", n, n - 30)) != std::string::npos);
}
