// The one quantization recipe: plans (uniform and mixed, their JSON and errors), RTN equal to the
// kernels' own quantizer, GPTQ lowering every layer's output error, and quantized checkpoints that load
// back to the same logits without fp32 weights.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "minigpt/calibrate.h"
#include "minigpt/params.h"
#include "minigpt/embedding.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/safetensors.h"
#include "temp_dir.h"
#include "tiny_random_model.h"

using namespace minigpt;

using mqtest::calibration;
using mqtest::kTokens;
using mqtest::random_model;
using mqtest::tiny;

TEST_CASE("the recipe: RTN gives each Linear exactly mq::quantize's codes, and the plan's embedding") {
  Model a = random_model(), b = random_model();
  const ModelQuantReport rep = quantize_model(a, QuantPlan::uniform("int4-g64"));
  CHECK(rep.layers.size() == 8);
  // The same model built by hand from the kernels' own quantizer.
  for (const LinearInfo& li : b.linears())
    b.set_projection(li.name, std::make_unique<QuantizedProjection>(mq::QuantizedLinear(li.weight, li.out, li.in,
                                                                                          mq::Scheme::integer(4, 64))));
  b.set_embedding(std::make_unique<HalfEmbedding>(b.param("wte"), tiny().vocab_size, tiny().d_model));
  CHECK(a.logits(kTokens) == b.logits(kTokens));
  CHECK(a.embedding().format_name() == "fp16");
  // fp32 is the identity: nothing is swapped.
  Model c = random_model(), d = random_model();
  CHECK(quantize_model(c, QuantPlan::uniform("fp32")).layers.empty());
  CHECK(c.embedding().format_name() == "fp32");
  CHECK(c.logits(kTokens) == d.logits(kTokens));
}

TEST_CASE("GPTQ lowers every layer's output error, sequentially and not") {
  for (bool sequential : {true, false}) {
    Model m = random_model();
    QuantPlan p = QuantPlan::uniform("int4-g64-gptq");
    p.gptq.sequential = sequential;
    const ModelQuantReport rep = quantize_model(m, p, calibration());
    for (const auto& l : rep.layers) {
      CAPTURE(l.name);
      CHECK(l.has_hessian);
      CHECK(l.hessian.samples == 12 * 16);
      CHECK(l.output_error < l.output_error_rtn);
    }
  }
  Model m = random_model();
  CHECK_THROWS_AS(quantize_model(m, QuantPlan::uniform("int4-g64-gptq")), mq::UsageError);
}

TEST_CASE("a mixed plan: layer groups, then tensor-kind overrides, each Linear in its own scheme and mode") {
  const QuantPlan p = QuantPlan::from_json(nlohmann::json::parse(R"({
      "config_id": "mixed", "default": "int4-g64",
      "layer_groups": [{"layers": [0], "quant": "int8-per-channel+a8"}],
      "tensors": [{"match": "mlp_down", "quant": "int3-g64"}]})"));
  CHECK(p.recipe_for(0, LinearKind::qkv).name() == "int8-per-channel+a8");
  CHECK(p.recipe_for(1, LinearKind::qkv).name() == "int4-g64");
  CHECK(p.recipe_for(0, LinearKind::mlp_down).name() == "int3-g64");  // the tensor override beats the group
  CHECK(p.embedding == mq::Scheme::fp16());
  Model m = random_model();
  const ModelQuantReport rep = quantize_model(m, p);
  CHECK(rep.layers.size() == 8);
  CHECK(m.projection("h.0.attn.c_attn").format_name() == "int8-per-channel");
  CHECK(m.projection("h.1.attn.c_proj").format_name() == "int4-g64");
  CHECK(m.projection("h.1.mlp.c_proj").format_name() == "int3-g64");
  // The JSON form round-trips.
  CHECK(QuantPlan::from_json(p.to_json()).to_json() == p.to_json());
  // A plan with every Linear in one scheme through rules is exactly the uniform plan's model.
  Model u = random_model(), r = random_model();
  quantize_model(u, QuantPlan::uniform("int4-g128"));
  quantize_model(r, QuantPlan::from_json(nlohmann::json::parse(R"({"config_id": "all", "default": "fp32",
      "layer_groups": [{"layers": [0, 1], "quant": "int4-g128"}]})")));
  CHECK(u.logits(kTokens) == r.logits(kTokens));
}

TEST_CASE("plan errors name what is wrong") {
  const auto bad = [](const char* text) { return QuantPlan::from_json(nlohmann::json::parse(text)); };
  CHECK_THROWS_WITH_AS(bad(R"({"config_id": "x", "default": "int4-g64", "tensors": [{"match": "mlp_sideways", "quant": "int4-g64"}]})"),
                       doctest::Contains("unknown tensor kind \"mlp_sideways\""), mq::UsageError);
  CHECK_THROWS_WITH_AS(bad(R"({"config_id": "x", "default": "int5-g64"})"), doctest::Contains("int5-g64"), mq::UsageError);
  CHECK_THROWS_WITH_AS(bad(R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [0], "quant": "fp16"},
                                {"layers": [0, 1], "quant": "fp16"}]})"),
                       doctest::Contains("layer 0 is already in an earlier group"), mq::UsageError);
  CHECK_THROWS_WITH_AS(bad(R"({"config_id": "x", "default": "int4-g64", "colour": "blue"})"), doctest::Contains("unknown key \"colour\""),
                       mq::UsageError);
  CHECK_THROWS_WITH_AS(bad(R"({"config_id": "x", "default": "int4-g64", "embedding": "int8-per-channel"})"),
                       doctest::Contains("fp32 or fp16"), mq::UsageError);
  const QuantPlan out_of_range = bad(R"({"config_id": "x", "default": "int4-g64", "layer_groups": [{"layers": [2], "quant": "fp16"}]})");
  CHECK_THROWS_WITH_AS(out_of_range.validate(tiny()), doctest::Contains("layer 2 is out of range"), mq::UsageError);
  const QuantPlan no_fit = bad(R"({"config_id": "x", "default": "int4-g96"})");  // 96 does not divide 128
  CHECK_THROWS_WITH_AS(no_fit.validate(tiny()), doctest::Contains("layer 0 qkv in int4-g96"), mq::UsageError);
}

TEST_CASE("a quantized checkpoint loads back to the same model without fp32 weights, and a damaged one is refused") {
  for (const char* scheme : {"int4-g64-asym", "int8-per-channel+a8"}) {
    CAPTURE(scheme);
    Model m = random_model();
    const QuantPlan plan = QuantPlan::uniform(scheme);
    quantize_model(m, plan);
    const std::string path = mqtest::temp_path("mq_test", "mq_test_quantized.safetensors");
    save_quantized_model(path, m, plan, CheckpointMeta{"", "", "{}"});
    QuantPlan back_plan;
    const Model back = load_any_model(path, "", nullptr, &back_plan);
    CHECK(back_plan.to_json() == plan.to_json());
    CHECK(back.projection("h.0.mlp.c_fc").format_name() == plan.base.scheme.name());
    CHECK(back.embedding().format_name() == "fp16");
    CHECK(back.logits(kTokens) == m.logits(kTokens));
    // No dequantized fp32 copy stands behind the quantized layers, so nothing can quantize it again.
    CHECK_FALSE(back.has_master("h.0.mlp.c_fc"));
    CHECK(back.linears()[0].weight == nullptr);
    Model again = load_any_model(path);
    CHECK_THROWS_WITH_AS(quantize_model(again, QuantPlan::uniform("int4-g64")), doctest::Contains("no fp32 weight"),
                         mq::UsageError);
    // The file holds the embedding as F16 and no fp32 weight of a quantized Linear.
    const TensorFile f = read_safetensors(path);
    CHECK(f.find("wte")->dtype == DType::F16);
    CHECK(f.find("h.0.mlp.c_fc.weight") == nullptr);
  }
  const std::string path = mqtest::temp_path("mq_test", "mq_test_quantized.safetensors");
  TensorFile f = read_safetensors(path);
  std::erase_if(f.tensors, [](const NamedTensor& t) { return t.name == "h.1.attn.c_attn.weight.scales"; });
  write_safetensors(path, f);
  CHECK_THROWS_WITH_AS(load_any_model(path), doctest::Contains("tensor h.1.attn.c_attn.weight.scales is missing"),
                       mq::Error);
}

TEST_CASE("scheme names: -gptq, +a8 and +a16 suffixes, and the errors for ones that cannot apply") {
  const LinearRecipe a = LinearRecipe::parse("int4-g64");
  CHECK(a.scheme == mq::Scheme::integer(4, 64));
  CHECK_FALSE(a.gptq);
  CHECK(a.act == mq::ActMode::weight_only);
  const LinearRecipe b = LinearRecipe::parse("int4-g64-gptq+a8");
  CHECK(b.scheme == mq::Scheme::integer(4, 64));
  CHECK(b.gptq);
  CHECK(b.act == mq::ActMode::dynamic_int8);
  CHECK(b.name() == "int4-g64-gptq+a8");
  CHECK(LinearRecipe::parse("int8-per-channel+a8").act == mq::ActMode::dynamic_int8);
  CHECK_THROWS_WITH_AS(LinearRecipe::parse("fp16+a8"), doctest::Contains("need integer or K weights"), mq::UsageError);
  CHECK(LinearRecipe::parse("int3-g128+a8").act == mq::ActMode::dynamic_int8);
  const LinearRecipe c = LinearRecipe::parse("int4-g64-gptq+a16");
  CHECK(c.act == mq::ActMode::dynamic_int16);
  CHECK(c.gptq);
  CHECK(c.name() == "int4-g64-gptq+a16");
  CHECK(LinearRecipe::parse("int8-per-channel+a16").act == mq::ActMode::dynamic_int16);
  CHECK(LinearRecipe::parse("int3-g64+a16").act == mq::ActMode::dynamic_int16);
  CHECK(LinearRecipe::parse("int2-g64-gptq+a16").act == mq::ActMode::dynamic_int16);
  CHECK_THROWS_WITH_AS(LinearRecipe::parse("fp32+a16"), doctest::Contains("need integer or K weights"), mq::UsageError);
  CHECK(QuantPlan::uniform("int3-g64-gptq-act-order").base.act == mq::ActMode::weight_only);
  CHECK(QuantPlan::uniform("int4-g64-gptq-act-order+a16").base == c);
  const LinearRecipe bf = LinearRecipe::parse("int4-g64-gptq+bf16");
  CHECK(bf.act == mq::ActMode::bf16);
  CHECK(bf.gptq);
  CHECK(bf.name() == "int4-g64-gptq+bf16");
  CHECK(LinearRecipe::parse("int3-g64+bf16").scheme == mq::Scheme::integer(3, 64));  // any stored scheme, not only int8 / int4
  CHECK(LinearRecipe::parse("fp16+bf16").act == mq::ActMode::bf16);
  CHECK_THROWS_WITH_AS(LinearRecipe::parse("fp32+bf16"), doctest::Contains("fp32 Linears stay fp32"), mq::UsageError);
  CHECK(QuantPlan::uniform("int4-g64-gptq-act-order+bf16").base == bf);
  CHECK_THROWS_WITH_AS(LinearRecipe::parse("fp16-gptq"), doctest::Contains("GPTQ needs an integer or K scheme"), mq::UsageError);
  CHECK_THROWS_AS(LinearRecipe::parse("int4-g64+a4"), mq::UsageError);  // not a suffix we know: an unknown scheme
}

TEST_CASE("-act-order: a plan-level GPTQ setting in a uniform plan's name, its id round-trips, misuse is refused") {
  const QuantPlan p = QuantPlan::uniform("int3-g64-gptq-act-order");
  CHECK(p.id == "int3-g64-gptq-act-order");
  CHECK(p.base == LinearRecipe::parse("int3-g64-gptq"));
  CHECK(p.gptq.options.act_order);
  CHECK(p.embedding == mq::Scheme::fp16());
  CHECK_FALSE(QuantPlan::uniform("int3-g64-gptq").gptq.options.act_order);
  // With +a8 after it: act-order is how GPTQ picks codes, +a8 how they run.
  const QuantPlan a8 = QuantPlan::uniform("int4-g64-gptq-act-order+a8");
  CHECK(a8.gptq.options.act_order);
  CHECK(a8.base == LinearRecipe::parse("int4-g64-gptq+a8"));
  // The JSON (a checkpoint's, a results row's) gives back the same plan and id.
  const QuantPlan back = QuantPlan::from_json(p.to_json());
  CHECK(back.id == p.id);
  CHECK(back.gptq.options.act_order);
  CHECK(back.to_json() == p.to_json());
  // Anywhere but right after -gptq, or on round-to-nearest, it is one clear error.
  for (const char* name : {"int3-g64-act-order", "int3-g64-act-order-gptq", "fp16-act-order", "int3-g64-gptq-act-order-x",
                           "int3-g64-gptq+a8-act-order", "-act-order"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(QuantPlan::uniform(name), doctest::Contains("-act-order is a GPTQ setting and follows -gptq"), mq::UsageError);
  }
  CHECK_THROWS_WITH_AS(QuantPlan::uniform("int5-g64-gptq-act-order"), doctest::Contains("int5-g64"), mq::UsageError);
  CHECK_THROWS_WITH_AS(QuantPlan::uniform("fp16-gptq-act-order"), doctest::Contains("GPTQ needs an integer or K scheme"), mq::UsageError);
}

TEST_CASE("GPTQ with act-order: other codes than without, every layer's output error still below RTN's") {
  Model plain = random_model(), ordered = random_model();
  const ModelQuantReport rp = quantize_model(plain, QuantPlan::uniform("int3-g64-gptq"), calibration());
  const ModelQuantReport ro = quantize_model(ordered, QuantPlan::uniform("int3-g64-gptq-act-order"), calibration());
  REQUIRE(ro.layers.size() == rp.layers.size());
  int differ = 0;
  for (size_t i = 0; i < ro.layers.size(); ++i) {
    const auto& l = ro.layers[i];
    CAPTURE(l.name);
    CHECK(l.recipe == "int3-g64-gptq");
    CHECK(l.storage.total() == rp.layers[i].storage.total());  // the same format, so the same bytes
    CHECK(l.output_error < l.output_error_rtn);                // a valid GPTQ result
    differ += l.output_error != rp.layers[i].output_error;
  }
  CHECK(differ == static_cast<int>(ro.layers.size()));  // act-order changed every Linear's codes
  const std::vector<float> a = plain.logits(kTokens), b = ordered.logits(kTokens);
  CHECK(a != b);
  for (float x : b) CHECK(std::isfinite(x));
}
