// The mixed-precision study's pieces that need no trained model: a quant map giving every Linear the same
// recipe is exactly the uniform plan (same stored codes, same logits), the study's unit lists, unit keys,
// and the validation of its options and config folders.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>

#include "experiments/mixed.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"

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
  const std::string dir = "/tmp/mq_test_mixed/configs";
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
    CHECK_THROWS_WITH_AS(mqexp::load_mixed_configs(dir), doctest::Contains("names the result file"), mq::UsageError);
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
  bad([](mqexp::MixedOptions& x) { x.reps = 0; });
  bad([](mqexp::MixedOptions& x) { x.shard = 2; x.shards = 2; });
  bad([](mqexp::MixedOptions& x) { x.shard = -1; });
  bad([](mqexp::MixedOptions& x) { x.shards = 0; });
  bad([](mqexp::MixedOptions& x) { x.calibration = 0; });
  bad([](mqexp::MixedOptions& x) { x.gen_tokens = 1; });
  bad([](mqexp::MixedOptions& x) { x.sensitivity_recipes = {"fp16"}; });
  bad([](mqexp::MixedOptions& x) { x.sensitivity_recipes = {"int9-g64"}; });
}
