// MiniGPT -> GGUF: every tensor under its llama.cpp gpt2 name and ggml shape, read back and
// dequantized equal to what the model runs (bit for bit), the hyperparameters and vocabulary keys,
// and `miniquant export-gguf`'s errors and exit codes.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"
#include "miniquant/half.h"
#include "minigpt/gguf_export.h"
#include "minigpt/calibrate.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/quantized_projection.h"
#include "experiments/workspace.h"
#include "temp_dir.h"

using namespace minigpt;
using mq::gguf::TensorType;

namespace {

const std::string kModel = MQ_SOURCE_DIR "/data/minigpt.safetensors";

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * 4) == 0; }

}  // namespace

TEST_CASE("gguf names follow llama.cpp's gpt2 tensors") {
  CHECK(gguf_tensor_name("wte") == "token_embd.weight");
  CHECK(gguf_tensor_name("wpe") == "position_embd.weight");
  CHECK(gguf_tensor_name("h.3.ln_1.bias") == "blk.3.attn_norm.bias");
  CHECK(gguf_tensor_name("h.0.attn.c_attn.weight") == "blk.0.attn_qkv.weight");
  CHECK(gguf_tensor_name("h.1.attn.c_proj.bias") == "blk.1.attn_output.bias");
  CHECK(gguf_tensor_name("h.2.ln_2.weight") == "blk.2.ffn_norm.weight");
  CHECK(gguf_tensor_name("h.0.mlp.c_fc.weight") == "blk.0.ffn_up.weight");
  CHECK(gguf_tensor_name("h.0.mlp.c_proj.weight") == "blk.0.ffn_down.weight");
  CHECK(gguf_tensor_name("ln_f.weight") == "output_norm.weight");
  CHECK_THROWS_AS(gguf_tensor_name("h.0.attn.bogus.weight"), mq::UsageError);
}

TEST_CASE("export of the shipped model: read back, every tensor equals what the model runs") {
  for (const char* scheme : {"fp32", "int8-per-channel", "int4-g64", "int4-g128-asym"}) {
    CAPTURE(scheme);
    mqexp::LoadedModel lm = mqexp::load_checkpoint(kModel);
    const ModelConfig c = lm.model.config();
    const QuantPlan plan = QuantPlan::uniform(scheme);
    const bool fp32 = plan.is_identity();
    quantize_model(lm.model, plan);
    const std::vector<std::pair<std::string, mq::QTensor>> layers = stored_weights(lm.model);  // what the model runs, to compare with
    GgufExportOptions eo;
    eo.embedding = fp32 ? TensorType::F32 : TensorType::F16;
    const std::string bytes = mq::gguf::serialize(to_gguf(lm.model, lm.tok, eo));
    const mq::gguf::File f = mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));

    CHECK(f.at("general.architecture").as_string() == "gpt2");
    CHECK(f.at("gpt2.context_length").as_uint() == static_cast<uint64_t>(c.n_ctx));
    CHECK(f.at("gpt2.embedding_length").as_uint() == static_cast<uint64_t>(c.d_model));
    CHECK(f.at("gpt2.block_count").as_uint() == static_cast<uint64_t>(c.n_layer));
    CHECK(f.at("gpt2.feed_forward_length").as_uint() == static_cast<uint64_t>(c.d_ff));
    CHECK(f.at("gpt2.attention.head_count").as_uint() == static_cast<uint64_t>(c.n_head));
    CHECK(f.at("gpt2.attention.layer_norm_epsilon").as_f32() == 1e-5f);
    CHECK(f.at("tokenizer.ggml.model").as_string() == "bert");
    const auto& vocab = f.at("tokenizer.ggml.tokens").strs;
    REQUIRE(vocab.size() == static_cast<size_t>(c.vocab_size));
    CHECK(vocab[0] == "<unk>");
    CHECK(vocab[1] == "<sep>");
    CHECK(vocab[5] == "\xe2\x96\x81" + lm.tok.token(5));
    CHECK(f.at("tokenizer.ggml.token_type").as_i32s()[1] == 3);  // control
    CHECK(f.tensor("output.weight") == nullptr);                  // tied: llama.cpp reuses token_embd

    // 2 embeddings + 4 * (2 LN x 2 + 4 Linears x 2) + 2 final LN tensors.
    CHECK(f.tensors.size() == static_cast<size_t>(2 + 12 * c.n_layer + 2));
    std::map<std::string, const mq::QTensor*> q;
    for (const auto& [n, t] : layers) q[n + ".weight"] = &t;
    for (const ParamTensor& p : lm.model.layout().tensors()) {
      CAPTURE(p.name);
      const mq::gguf::Tensor* t = f.tensor(gguf_tensor_name(p.name));
      REQUIRE(t != nullptr);
      // ggml order: ne[0] is the input width (the last of our row-major shape).
      std::vector<int64_t> ne(p.shape.rbegin(), p.shape.rend());
      CHECK(t->ne == ne);
      const std::vector<float> got = mq::gguf::dequantize(*t);
      REQUIRE(got.size() == p.size);
      const float* master = lm.model.params() + p.offset;
      if (p.name == "wte" && !fp32) {
        CHECK(t->type == TensorType::F16);
        bool all = true;
        for (size_t i = 0; i < p.size; ++i) all = all && got[i] == mq::f16_to_f32(mq::f32_to_f16(master[i]));
        CHECK(all);
      } else if (auto it = q.find(p.name); it != q.end()) {
        CHECK(t->type == mq::gguf::type_for(it->second->scheme));
        const std::vector<float> ours = mq::dequantize(*it->second);
        if (t->type == TensorType::Q4_1) {
          double worst = 0;
          for (size_t i = 0; i < p.size; ++i) {
            const int64_t r = static_cast<int64_t>(i) / it->second->cols, col = static_cast<int64_t>(i) % it->second->cols;
            worst = std::max(worst, std::fabs(double(ours[i]) - got[i]) /
                                        mq::gguf::q4_1_error_bound(it->second->scale_at(r, col), it->second->zero_at(r, col), got[i]));
          }
          CHECK(worst <= 1.0);
        } else {
          CHECK(same_bits(ours.data(), got.data(), p.size));
        }
      } else {
        CHECK(t->type == TensorType::F32);
        CHECK(same_bits(master, got.data(), p.size));
      }
    }
  }
}

TEST_CASE("to_gguf refuses a scheme without a GGUF type") {
  mqexp::LoadedModel lm = mqexp::load_checkpoint(kModel);
  quantize_model(lm.model, QuantPlan::uniform("int3-g64"));
  CHECK_THROWS_WITH_AS(to_gguf(lm.model, lm.tok, {}), doctest::Contains("exportable"), mq::UsageError);
}

TEST_CASE("export-gguf: output, errors and exit codes") {
  const std::string dir = mqtest::temp_path("mq_test", "mq_export_gguf_test");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/m.gguf";

  CliResult r = run_cli("export-gguf --model " + kModel + " --scheme int4-g64 --out " + out);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const mq::gguf::File f = mq::gguf::read(out);
  CHECK(f.tensor("blk.0.attn_qkv.weight")->type == TensorType::Q4_0);
  CHECK(f.tensor("token_embd.weight")->type == TensorType::F16);
  CHECK(f.at("miniquant.scheme").as_string() == "int4-g64");

  auto fails = [&](const std::string& args, int code, const std::string& says) {
    const CliResult e = run_cli("export-gguf " + args);
    INFO(args, "\n", e.out);
    CHECK(e.code == code);
    CHECK(e.out.find(says) != std::string::npos);
    CHECK(std::count(e.out.begin(), e.out.end(), '\n') == 1);  // one line
  };
  fails("--model " + kModel + " --scheme int9-g64 --out " + dir + "/a.gguf", 2, "int9-g64");
  fails("--model " + kModel + " --scheme int3-g64 --out " + dir + "/a.gguf", 2, "exportable");
  fails("--model " + kModel + " --scheme int8-per-tensor --out " + dir + "/a.gguf", 2, "exportable");
  fails("--model " + kModel + " --scheme int4-g64+a8 --out " + dir + "/a.gguf", 2, "+a8");
  fails("--model " + kModel + " --out " + dir + "/a.gguf", 2, "--scheme or --quant-map is required");
  fails("--model " + kModel + " --scheme int4-g64", 2, "--out");
  fails("--model " + kModel + " --scheme fp32 --embedding fp8 --out " + dir + "/a.gguf", 2, "--embedding");
  fails("--model " + kModel + " --scheme fp32 --out " + dir + "/no/such/a.gguf", 1, "does not exist");
  fails("--model " + dir + "/missing.safetensors --scheme fp32 --out " + dir + "/a.gguf", 2, "missing.safetensors");
  const std::string junk = write_test_file(dir, "junk.safetensors", "not a checkpoint");
  fails("--model " + junk + " --scheme fp32 --out " + dir + "/a.gguf", 1, "junk.safetensors");
  CHECK_FALSE(std::filesystem::exists(dir + "/a.gguf"));
  CHECK_FALSE(std::filesystem::exists(dir + "/a.gguf.tmp"));

  // A quantized checkpoint exports its stored weights (no --scheme).
  const std::string qckpt = dir + "/q.safetensors";
  r = run_cli("quantize --model " + kModel + " --scheme int8-per-channel --out " + qckpt);
  REQUIRE(r.code == 0);
  r = run_cli("export-gguf --model " + qckpt + " --out " + dir + "/q.gguf");
  INFO(r.out);
  REQUIRE(r.code == 0);
  const mq::gguf::File qf = mq::gguf::read(dir + "/q.gguf");
  const mq::gguf::Tensor* down = qf.tensor("blk.3.ffn_down.weight");
  REQUIRE(down != nullptr);
  CHECK(down->type == TensorType::Q8_0);
  // The loader runs the stored codes (no fp32 copy): the export must dequantize to exactly them.
  const Model qm = load_any_model(qckpt);
  const std::vector<float> got = mq::gguf::dequantize(*down);
  const auto& stored = dynamic_cast<const QuantizedProjection&>(qm.projection("h.3.mlp.c_proj"));
  const std::vector<float> want = mq::dequantize(stored.linear().weight());
  REQUIRE(want.size() == got.size());
  CHECK(same_bits(want.data(), got.data(), got.size()));
  fails("--model " + qckpt + " --scheme int4-g64 --out " + dir + "/b.gguf", 2, "already quantized");
  std::filesystem::remove_all(dir);
}

TEST_CASE("export-gguf and quantize --quant-map: per-layer GGUF types, and the map's errors") {
  const std::string dir = mqtest::temp_path("mq_test", "mq_export_gguf_map_test");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Layer 0 in Q8_0, layers 1-3 in Q4_0, every MLP down projection Q4_1 (a tensor kind beats a group).
  const std::string map = write_test_file(dir, "map.json", R"({"config_id": "protect-early",
      "default": "int4-g64", "layer_groups": [{"layers": [0], "quant": "int8-per-channel"}],
      "tensors": [{"match": "mlp_down", "quant": "int4-g128-asym"}]})");
  CliResult r = run_cli("export-gguf --model " + kModel + " --quant-map " + map + " --out " + dir + "/m.gguf");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("protect-early") != std::string::npos);
  const mq::gguf::File f = mq::gguf::read(dir + "/m.gguf");
  CHECK(f.tensor("blk.0.attn_qkv.weight")->type == TensorType::Q8_0);
  CHECK(f.tensor("blk.0.ffn_up.weight")->type == TensorType::Q8_0);
  CHECK(f.tensor("blk.1.attn_qkv.weight")->type == TensorType::Q4_0);
  CHECK(f.tensor("blk.3.attn_output.weight")->type == TensorType::Q4_0);
  for (int l = 0; l < 4; ++l) CHECK(f.tensor(fmt::format("blk.{}.ffn_down.weight", l))->type == TensorType::Q4_1);
  CHECK(f.tensor("token_embd.weight")->type == TensorType::F16);

  // The same map through the library: the exported blocks dequantize to exactly what the model runs.
  mqexp::LoadedModel lm = mqexp::load_checkpoint(kModel);
  const QuantPlan plan = QuantPlan::from_json(nlohmann::json::parse(mq::read_file(map)), "map");
  quantize_model(lm.model, plan);
  for (const auto& [name_, t] : stored_weights(lm.model)) {
    const std::string& name = name_;  // CAPTURE's lambda cannot capture a structured binding under clang 14
    if (!t.scheme.symmetric) continue;  // Q4_1's fp16 minimum rounds: bounded in the test above
    CAPTURE(name);
    const mq::gguf::Tensor* g = f.tensor(gguf_tensor_name(name + ".weight"));
    REQUIRE(g != nullptr);
    const std::vector<float> ours = mq::dequantize(t), got = mq::gguf::dequantize(*g);
    REQUIRE(ours.size() == got.size());
    CHECK(same_bits(ours.data(), got.data(), got.size()));
  }

  auto fails = [&](const std::string& args, int code, const std::string& says) {
    const CliResult e = run_cli(args);
    INFO(args, "\n", e.out);
    CHECK(e.code == code);
    CHECK(e.out.find(says) != std::string::npos);
    CHECK(std::count(e.out.begin(), e.out.end(), '\n') == 1);
  };
  const std::string int3 = write_test_file(dir, "int3.json", R"({"config_id": "x", "default": "int4-g64",
      "layer_groups": [{"layers": [2], "quant": "int3-g64"}]})");
  fails("export-gguf --model " + kModel + " --quant-map " + int3 + " --out " + dir + "/b.gguf", 2, "exportable");
  const std::string a8 = write_test_file(dir, "a8.json", R"({"config_id": "x", "default": "int4-g64+a8"})");
  fails("export-gguf --model " + kModel + " --quant-map " + a8 + " --out " + dir + "/b.gguf", 2, "+a8");
  const std::string range = write_test_file(dir, "range.json", R"({"config_id": "x", "default": "int4-g64",
      "layer_groups": [{"layers": [7], "quant": "int8-per-channel"}]})");
  fails("export-gguf --model " + kModel + " --quant-map " + range + " --out " + dir + "/b.gguf", 2, "7");
  const std::string kind = write_test_file(dir, "kind.json", R"({"config_id": "x", "default": "int4-g64",
      "tensors": [{"match": "mlp_sideways", "quant": "int8-per-channel"}]})");
  fails("export-gguf --model " + kModel + " --quant-map " + kind + " --out " + dir + "/b.gguf", 2, "mlp_sideways");
  const std::string dup = write_test_file(dir, "dup.json", R"({"config_id": "x", "default": "int4-g64", "default": "fp32"})");
  // Not valid JSON for a map (a key twice) is a corrupt file, exit 1; a bad value in a valid map is exit 2 like the flag.
  fails("export-gguf --model " + kModel + " --quant-map " + dup + " --out " + dir + "/b.gguf", 1, "duplicate JSON key");
  fails("export-gguf --model " + kModel + " --scheme int4-g64 --quant-map " + map + " --out " + dir + "/b.gguf", 2, "not both");
  fails("quantize --model " + kModel + " --scheme int4-g64 --quant-map " + map, 2, "not both");
  fails("quantize --model " + kModel + " --quant-map " + map + " --percdamp 0.1", 2, "gptq");
  fails("quantize --model " + kModel + " --quant-map " + dir + "/missing.json", 2, "missing.json");
  CHECK_FALSE(std::filesystem::exists(dir + "/b.gguf"));

  // quantize --quant-map stores the mixed plan; export-gguf of that checkpoint gives the same types.
  r = run_cli("quantize --model " + kModel + " --quant-map " + map + " --out " + dir + "/q.safetensors");
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("protect-early") != std::string::npos);
  r = run_cli("export-gguf --model " + dir + "/q.safetensors --out " + dir + "/q.gguf");
  REQUIRE(r.code == 0);
  const mq::gguf::File qf = mq::gguf::read(dir + "/q.gguf");
  for (const auto& t : f.tensors) CHECK(qf.tensor(t.name)->type == t.type);
  std::filesystem::remove_all(dir);
}

TEST_CASE("export of an AWQ and a SmoothQuant plan: the scales are folded, so the file holds the folded norms and V rows "
          "llama.cpp's gpt2 graph runs as usual") {
  for (const char* scheme : {"int4-g64-awq", "int8-per-channel-smooth+a8"}) {
    CAPTURE(scheme);
    mqexp::LoadedModel lm = mqexp::load_checkpoint(kModel), orig = mqexp::load_checkpoint(kModel);
    const ModelConfig c = lm.model.config();
    std::vector<int32_t> stream(static_cast<size_t>(8 * c.n_ctx));
    for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<int32_t>(2 + (i * 37 + i / 11) % static_cast<size_t>(c.vocab_size - 2));
    const ModelQuantReport rep = quantize_model(lm.model, QuantPlan::uniform(scheme), calibration_windows(stream, 8, c.n_ctx));
    GgufExportOptions eo;
    eo.embedding = TensorType::F16;
    const std::string bytes = mq::gguf::serialize(to_gguf(lm.model, lm.tok, eo));
    const mq::gguf::File f = mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    // Each tensor and the Linear whose scale it holds; SmoothQuant may keep s = 1 for a Linear (its note says so),
    // and then the tensor is the checkpoint's.
    const std::pair<const char*, const char*> folds[] = {
        {"h.0.ln_1.weight", "h.0.attn.c_attn"}, {"h.2.ln_2.bias", "h.2.mlp.c_fc"}, {"h.1.attn.c_attn.bias", "h.1.attn.c_proj"}};
    for (const auto& fold : folds) {
      const std::string name = fold.first, linear = fold.second;  // not a structured binding: CAPTURE's lambda takes it (clang 14)
      CAPTURE(name);
      bool kept = false;
      for (const LinearQuantReport& lr : rep.layers)
        if (lr.name == linear)
          for (const std::string& n : lr.notes) kept = kept || n.find("s = 1 kept") != std::string::npos;
      CAPTURE(kept);
      const ParamTensor* p = nullptr;
      for (const ParamTensor& t : lm.model.layout().tensors())
        if (t.name == name) p = &t;
      REQUIRE(p != nullptr);
      const std::vector<float> got = mq::gguf::dequantize(*f.tensor(gguf_tensor_name(name)));
      CHECK(same_bits(lm.model.params() + p->offset, got.data(), p->size));         // the folded values
      CHECK(same_bits(orig.model.params() + p->offset, got.data(), p->size) == kept);  // the checkpoint's only where s = 1
    }
  }
}
