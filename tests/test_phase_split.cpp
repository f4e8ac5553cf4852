// Precision per inference phase: plan names and JSON, each phase running its own recipe (the logits of a
// split equal those of the uniform mode of each phase, given the same cache), bytes stored once or twice,
// and what the energy model is told per phase.
#include <doctest/doctest.h>

#include <vector>

#include "experiments/energy_work.h"
#include "miniquant/error.h"
#include "minigpt/batched_decode.h"
#include "minigpt/params.h"
#include "minigpt/phase_projection.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"

using namespace minigpt;

namespace {

ModelConfig tiny() { return ModelConfig{.vocab_size = 23, .n_ctx = 16, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512}; }

Model quantized(const std::string& name) {
  Model m(tiny(), 42);
  NormalSampler n(7);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.05 * n.next());
  quantize_model(m, QuantPlan::uniform(name));
  return m;
}

const std::vector<int32_t> kPrompt = {1, 4, 9, 16, 3, 22, 7};

// Logits of the prompt (prefill), the cache it leaves, then one decode step's logits from a given cache.
std::vector<float> prefill_logits(const Model& m, KVCache& cache) {
  cache = make_cache(m, tiny().n_ctx);
  std::vector<float> out(kPrompt.size() * tiny().vocab_size);
  m.forward(cache, kPrompt.data(), static_cast<int>(kPrompt.size()), out.data());
  return out;
}

std::vector<float> decode_logits(const Model& m, KVCache cache) {
  std::vector<float> out(tiny().vocab_size);
  const int32_t tok = 5;
  decode_batch(m, {&cache}, &tok, out.data());
  return out;
}

}  // namespace

TEST_CASE("phase split names: parsed, printed, round-tripped through JSON; bad splits refused") {
  const QuantPlan p = QuantPlan::uniform("int4-g64[prefill=+a8,decode=+bf16]");
  REQUIRE(p.phases);
  CHECK(p.id == "int4-g64[prefill=+a8,decode=+bf16]");
  CHECK(p.phases->shares_codes());
  CHECK(p.recipe_for(0, LinearKind::qkv).name() == "int4-g64");
  CHECK(p.recipe_for(1, LinearKind::mlp_down, Phase::prefill).name() == "int4-g64+a8");
  CHECK(p.recipe_for(1, LinearKind::mlp_down, Phase::decode).name() == "int4-g64+bf16");
  const QuantPlan back = QuantPlan::from_json(p.to_json());
  CHECK(back.phases == p.phases);
  CHECK(back.to_json() == p.to_json());
  // One phase only: the other runs the stored recipe; a phase of its own storage is a second copy.
  const QuantPlan q = QuantPlan::uniform("int4-g64+a8[decode=weight-only]");
  CHECK(q.recipe_for(0, LinearKind::qkv, Phase::prefill).name() == "int4-g64+a8");
  CHECK(q.recipe_for(0, LinearKind::qkv, Phase::decode).name() == "int4-g64");
  const QuantPlan two = QuantPlan::uniform("int4-g64[prefill=int8-per-channel+a8]");
  CHECK_FALSE(two.phases->shares_codes());
  CHECK(two.recipe_for(0, LinearKind::qkv, Phase::prefill).name() == "int8-per-channel+a8");
  CHECK(two.recipe_for(0, LinearKind::qkv, Phase::decode).name() == "int4-g64");
  // Refused: a mode the codes cannot run, unknown phases, fp32 bases, GPTQ beside a second copy, syntax.
  for (const char* bad : {"fp16[prefill=+a8]", "int4-g64[warmup=+a8]", "fp32[prefill=+a8]", "int4-g64[prefill=+a8",
                          "int4-g64[]", "int4-g64[prefill=+a8,prefill=+bf16]", "int4-g64-gptq[prefill=int8-per-channel]",
                          "int4-g64[prefill=int8-per-channel-gptq]", "int4-g64[decode=nonsense]"})
    CHECK_THROWS_AS(QuantPlan::uniform(bad), mq::UsageError);
  // The JSON form checks the same.
  nlohmann::json j = QuantPlan::uniform("int4-g64").to_json();
  j["phases"] = {{"prefill", "+a8"}, {"warmup", "+a8"}};
  CHECK_THROWS_AS(QuantPlan::from_json(j), mq::UsageError);
  j["phases"] = nlohmann::json::object();
  CHECK_THROWS_AS(QuantPlan::from_json(j), mq::UsageError);
}

TEST_CASE("phase split: each phase runs its own recipe, the logits equal the uniform mode's for that phase") {
  const Model split = quantized("int4-g64[prefill=+a8,decode=+bf16]");
  const Model a8 = quantized("int4-g64+a8"), bf16 = quantized("int4-g64+bf16"), wo = quantized("int4-g64");
  KVCache cs, ca, cb;
  const std::vector<float> ps = prefill_logits(split, cs), pa = prefill_logits(a8, ca), pb = prefill_logits(bf16, cb);
  CHECK(ps == pa);                // prefill ran +a8 ...
  CHECK(ps != pb);                // ... and not +bf16 (the test can tell the two apart)
  CHECK(cs.k[1] == ca.k[1]);      // the same cache follows
  // Decode from the split's own cache: the +bf16 model's decode of the same cache, not the +a8 one's.
  CHECK(decode_logits(split, cs) == decode_logits(bf16, ca));
  CHECK(decode_logits(split, cs) != decode_logits(a8, ca));
  // Model::decode runs in the decode phase and leaves the model resting in prefill.
  CHECK(split.phase() == Phase::prefill);
  // Shared codes: stored once, as the uniform model stores them.
  for (const LinearInfo& li : split.linears()) {
    CHECK(split.projection(li.name).weight_bytes() == wo.projection(li.name).weight_bytes());
    CHECK(split.projection(li.name).format_name() == "prefill int4-g64+a8 / decode int4-g64+bf16");
  }
  // What the energy model is told per phase: int8 dot products in prefill, bf16-rounded fp32 in decode.
  const mqexp::WorkContext wc{{}, 1};
  mq::energy::Work pre, dec;
  {
    const Model::PhaseGuard g = split.use_phase(Phase::prefill);
    CHECK(split.projection(split.linears()[0].name).int8_dots() == 1);
    pre = mqexp::prefill_work(split, 8, wc);
  }
  {
    const Model::PhaseGuard g = split.use_phase(Phase::decode);
    CHECK(split.projection(split.linears()[0].name).int8_dots() == 0);
    CHECK(split.projection(split.linears()[0].name).bf16_activations());
    dec = mqexp::decode_step_work(split, 8, 1, wc);
  }
  CHECK(pre.ops_int8 > 0);
  CHECK(dec.ops_int8 == 0);
  // A split model is not a file format.
  CHECK_THROWS_AS(stored_weights(split), mq::UsageError);
}

TEST_CASE("phase split with its own stored copy: bytes of both, each phase reads its own") {
  const Model two = quantized("int4-g64[prefill=int8-per-channel+a8]");
  const Model i8 = quantized("int8-per-channel+a8"), i4 = quantized("int4-g64");
  KVCache c2, c8;
  CHECK(prefill_logits(two, c2) == prefill_logits(i8, c8));
  CHECK(decode_logits(two, c2) == decode_logits(i4, c8));
  for (const LinearInfo& li : two.linears()) {
    const Projection& p = two.projection(li.name);
    CHECK(p.weight_bytes() == i8.projection(li.name).weight_bytes() + i4.projection(li.name).weight_bytes());
    {
      const Model::PhaseGuard g = two.use_phase(Phase::decode);
      CHECK(p.read_bytes() == i4.projection(li.name).weight_bytes());
    }
    CHECK(p.read_bytes() == i8.projection(li.name).weight_bytes());
  }
}

TEST_CASE("Model::relocate: every buffer in new memory, the same logits, fp32 views following the parameters") {
  for (const char* name : {"fp32", "int4-g64", "int8-per-channel+a8", "int3-g64", "int4-g64[prefill=+a8,decode=+bf16]",
                           "int4-g64[prefill=int8-per-channel+a8]"}) {
    CAPTURE(name);
    Model m = quantized(name);
    const std::vector<float> prefill_before = m.prefill(kPrompt), decode_before = m.decode(5);
    const float* params_before = m.params();
    m.relocate();
    CHECK(m.params() != params_before);
    CHECK(m.prefill(kPrompt) == prefill_before);  // bit for bit: a copy, not a recomputation
    CHECK(m.decode(5) == decode_before);
    m.relocate();  // with a filled cache too: the next pass starts from it as before
    CHECK(m.prefill(kPrompt) == prefill_before);
  }
  // fp32 Linears and the fp32 embedding view the parameter buffer: after a move they read the new one (a stale
  // view would read the freed buffer, where this change is not).
  Model m = quantized("fp32");
  m.relocate();
  const std::vector<float> before = m.prefill(kPrompt);
  const LinearInfo li = m.linears().front();
  m.params()[li.weight - m.params()] += 1.0f;
  const std::vector<float> linear_changed = m.prefill(kPrompt);
  CHECK(linear_changed != before);
  m.param("wte")[3] += 1.0f;
  CHECK(m.prefill(kPrompt) != linear_changed);
}
