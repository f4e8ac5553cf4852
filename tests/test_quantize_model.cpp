// Model-level quantization: RTN through quantize_linears equals the kernels' own quantize_model,
// GPTQ lowers every layer's output error, and quantized checkpoints load back to the same logits.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "miniquant/error.h"
#include "miniquant/io.h"
#include "minigpt/calibrate.h"
#include "minigpt/params.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/safetensors.h"

using namespace minigpt;

namespace {

ModelConfig tiny() { return ModelConfig{.vocab_size = 23, .n_ctx = 16, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512}; }

Model random_model() {
  Model m(tiny(), 42);
  NormalSampler n(7);
  for (size_t i = 0; i < m.num_params(); ++i) m.params()[i] += static_cast<float>(0.05 * n.next());
  return m;
}

std::unique_ptr<Projection> make(mq::QTensor q) { return std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(q))); }

const std::vector<int32_t> kTokens = {1, 4, 9, 16, 3, 22, 7, 7, 0, 11};

std::vector<std::vector<int32_t>> calibration() {
  std::vector<int32_t> stream(16 * 12);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<int32_t>((i * 7 + i / 5) % 23);
  return calibration_windows(stream, 12, 16);
}

}  // namespace

TEST_CASE("RTN through quantize_linears runs the same model as quantize_model") {
  Model a = random_model(), b = random_model();
  QuantizeModelOptions o;
  o.scheme = mq::Scheme::parse("int4-g64");
  const ModelQuantReport rep = quantize_linears(a, o, {}, make);
  quantize_model(b, o.scheme);
  CHECK(rep.layers.size() == 8);
  CHECK(a.logits(kTokens) == b.logits(kTokens));
}

TEST_CASE("GPTQ lowers every layer's output error, sequentially and not") {
  for (bool sequential : {true, false}) {
    Model m = random_model();
    QuantizeModelOptions o;
    o.scheme = mq::Scheme::parse("int4-g64");
    o.gptq = true;
    o.sequential = sequential;
    const ModelQuantReport rep = quantize_linears(m, o, calibration(), make);
    for (const auto& l : rep.layers) {
      CAPTURE(l.name);
      CHECK(l.has_hessian);
      CHECK(l.hessian.samples == 12 * 16);
      CHECK(l.output_error < l.output_error_rtn);
    }
  }
  Model m = random_model();
  QuantizeModelOptions o;
  o.gptq = true;
  CHECK_THROWS_AS(quantize_linears(m, o, {}, make), mq::UsageError);
}

TEST_CASE("a quantized checkpoint loads back to the same logits, and a damaged one is refused") {
  Model m = random_model();
  QuantizeModelOptions o;
  o.scheme = mq::Scheme::parse("int4-g64-asym");
  std::vector<std::pair<std::string, mq::QTensor>> layers;
  quantize_linears(m, o, {}, make, &layers);
  const std::string path = "/tmp/mq_test_quantized.safetensors";
  save_quantized_model(path, m, layers, CheckpointMeta{"", "", "{}"}, R"({"scheme": "int4-g64-asym"})");
  std::string info;
  const Model back = load_any_model(path, "", nullptr, &info);
  CHECK(info.find("\"h.1.mlp.c_proj\":\"int4-g64-asym\"") != std::string::npos);
  CHECK(back.projection("h.0.mlp.c_fc").format_name() == "int4-g64-asym");
  CHECK(back.logits(kTokens) == m.logits(kTokens));

  TensorFile f = read_safetensors(path);
  std::erase_if(f.tensors, [](const NamedTensor& t) { return t.name == "h.1.attn.c_attn.weight.scales"; });
  write_safetensors(path, f);
  CHECK_THROWS_WITH_AS(load_any_model(path), doctest::Contains("tensor h.1.attn.c_attn.weight.scales is missing"),
                       mq::Error);
}

TEST_CASE("scheme names: -gptq and +a8 suffixes, and the errors for ones that cannot apply") {
  const QuantizeModelOptions a = quantize_options_for("int4-g64");
  CHECK(a.scheme == mq::Scheme::integer(4, 64));
  CHECK_FALSE(a.gptq);
  CHECK(a.act == mq::ActMode::weight_only);
  const QuantizeModelOptions b = quantize_options_for("int4-g64-gptq+a8");
  CHECK(b.scheme == mq::Scheme::integer(4, 64));
  CHECK(b.gptq);
  CHECK(b.act == mq::ActMode::dynamic_int8);
  CHECK(quantize_options_for("int8-per-channel+a8").act == mq::ActMode::dynamic_int8);
  CHECK_THROWS_WITH_AS(quantize_options_for("fp16+a8"), doctest::Contains("need int8 or int4 weights"), mq::UsageError);
  CHECK_THROWS_WITH_AS(quantize_options_for("int3-g128+a8"), doctest::Contains("+a8"), mq::UsageError);
  CHECK_THROWS_WITH_AS(quantize_options_for("fp16-gptq"), doctest::Contains("GPTQ needs an integer scheme"), mq::UsageError);
  CHECK_THROWS_AS(quantize_options_for("int4-g64+a4"), mq::UsageError);  // not a suffix we know: an unknown scheme
}
