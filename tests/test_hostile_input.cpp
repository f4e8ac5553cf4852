// Hostile and careless input (issue 14): one test per class of failure the bad-input probe found.
// Every input is built here; every error is checked by its text and, through the CLI, its exit
// code; nothing may be written when a command fails.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "hostile_helpers.h"
#include "miniquant/gguf/io.h"
#include "miniquant/util/checked.h"
#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/util/json_checked.h"
#include "miniquant/npy.h"
#include "miniquant/quantize.h"
#include "minigpt/checkpoint.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/quantized_projection.h"
#include "minigpt/safetensors.h"
#include "minigpt/tokenizer.h"
#include "minigpt/train_config.h"
#include "experiments/workspace.h"

using namespace minigpt;
using namespace hostile;


TEST_CASE("class 1, crashes: deep JSON, a long .npy field and overflowing size products give one clear line") {
  const std::string dir = fresh_dir("crashes");
  const std::string deep = nested(100000);

  // (a) 100,000-deep nesting in a safetensors shape, a checkpoint's model_config, and both configs.
  const std::string st = write_test_file(
      dir, "deep_shape.safetensors",
      safetensors_bytes(R"({"w": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 0]}})"));
  check_error(run_cli("generate --model " + st), 1, {"deep_shape.safetensors", "nested deeper than 64"});

  const std::string meta_deep =
      nlohmann::json{{"__metadata__", {{"format", kCheckpointFormat}, {"model_config", deep}}}}.dump();
  const std::string ck = write_test_file(dir, "deep_config.safetensors", safetensors_bytes(meta_deep));
  check_error(run_cli("generate --model " + ck), 1, {"deep_config.safetensors", "model_config", "nested deeper"});

  const std::string model_deep = write_test_file(dir, "model_deep.json", R"({"vocab_size": )" + deep + "}");
  const std::string train_deep = write_test_file(dir, "train_deep.json", R"({"steps": )" + deep + "}");
  const std::string model_ok = write_test_file(dir, "model.json", kModelJson);
  const std::string train_ok = write_test_file(dir, "train.json", valid_train_json());
  const std::string out = dir + "/m.safetensors";
  check_error(run_cli("train --config " + model_deep + " --train-config " + train_ok + " --out " + out), 1,
              {"model_deep.json", "nested deeper"});
  check_error(run_cli("train --config " + model_ok + " --train-config " + train_deep + " --out " + out), 1,
              {"train_deep.json", "nested deeper"});
  CHECK(!fs::exists(out));
  // The in-memory parser refuses at the limit, accepts just under it.
  CHECK_THROWS_WITH_AS(mq::parse_json_checked(nested(65), "x"), doctest::Contains("nested deeper than 64"), mq::Error);
  CHECK(mq::parse_json_checked(nested(64), "x").is_array());
  // A summary of a huge value stays short.
  CHECK(mq::json_summary(nlohmann::json(std::string(100000, 'a'))).size() < 80);

  // Keys and strings from a file are clipped in messages, so the line stays short.
  const std::string long_key = write_test_file(
      dir, "long_key.safetensors",
      safetensors_bytes(R"({")" + std::string(40000, 'k') + R"(": {"dtype": ")" + std::string(40000, 'F') +
                            R"(", "shape": [1], "data_offsets": [0, 4]}})", "abcd"));
  check_error(run_cli("generate --model " + long_key), 1, {"long_key.safetensors", "(40000 chars)", "unknown dtype \"FFFF"});
  const std::string long_field = write_test_file(dir, "long_field.json", "{\"" + std::string(40000, 'x') + "\": 1}");
  check_error(run_cli("train --config " + long_field + " --train-config " + train_ok + " --out " + out), 1,
              {"unknown field", "(40000 chars)"});

  // (b) A legal 40 KB descr: a clear "not supported", no stack overflow.
  const std::string long_descr = write_test_file(
      dir, "long_descr.npy", npy_bytes("{'descr': '" + std::string(40000, 'f') + "', 'fortran_order': False, 'shape': (1, 1), }", "", 2));
  check_error(run_cli("quant-report --npy " + long_descr), 1, {"long_descr.npy", "is not supported", "40000 chars"});

  // (c) Size products that overflow: a flag and a file.
  check_error(run_cli("quant-report --shape 4294967296x4294967296"), 2, {"--shape", "elements"});
  const std::string wrap = write_test_file(
      dir, "wrap.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"));
  check_error(run_cli("quant-report --npy " + wrap), 1, {"wrap.npy", "overflows"});
  const std::string big_shape = write_test_file(
      dir, "big_shape.safetensors",
      safetensors_bytes(R"({"w": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})"));
  check_error(run_cli("generate --model " + big_shape), 1, {"big_shape.safetensors", "overflows"});
  CHECK_THROWS_WITH_AS(mq::checked_mul(int64_t{1} << 40, int64_t{1} << 40, "t"), doctest::Contains("overflows"), mq::Error);
  CHECK_THROWS_AS(mq::checked_product({3, -1}, "t"), mq::Error);
  CHECK(mq::checked_product({3, 5, 7}, "t") == 105);
}

TEST_CASE("class 1, crashes: a GGUF tensor with a zero dimension cannot hide an overflowing product of the others") {
  // Found reading the GGUF reader for fuzz_gguf: {0, 2^21, 2^21, 2^21} has 0 elements, so the old
  // per-product bound passed it, and Tensor::rows() (the int64 product of ne[1..]) overflowed.
  std::string b("GGUF", 4);
  auto put = [&](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(uint32_t{3});
  put(uint64_t{1});  // tensors
  put(uint64_t{0});  // metadata
  put(uint64_t{1});
  b += "t";
  put(uint32_t{4});
  for (uint64_t n : {uint64_t{0}, uint64_t{1} << 21, uint64_t{1} << 21, uint64_t{1} << 21}) put(n);
  put(uint32_t{0});  // F32
  put(uint64_t{0});  // offset
  b.resize(300000, '\0');
  CHECK_THROWS_WITH_AS(mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size())),
                       "gguf: tensor \"t\" dimension 3 = 2097152 makes its shape overflow 64 bits (at byte 69 of 300000)", mq::Error);
  // An empty tensor whose other dimensions fit is still a legal GGUF tensor.
  const uint64_t one = 1;
  b.replace(53, 8, reinterpret_cast<const char*>(&one), 8);  // ne[2] (ne[0] is at byte 37)
  b.replace(61, 8, reinterpret_cast<const char*>(&one), 8);  // ne[3]
  const mq::gguf::File f = mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
  REQUIRE(f.tensors.size() == 1);
  CHECK(f.tensors[0].ne == std::vector<int64_t>{0, 1 << 21, 1, 1});
  CHECK(f.tensors[0].rows() == int64_t{1} << 21);
  CHECK(f.tensors[0].data.empty());
  // Found by the long fuzz_gguf run: an empty tensor {0, 1, 1131, 0} passed in a 137-byte file (each
  // dimension was bounded by 8 x the file size) but not in the 96 bytes the writer makes of it: the
  // reader refused a file the writer wrote. Empty tensors' dimensions no longer depend on the file size.
  std::string e("GGUF", 4);
  auto put_e = [&](auto v) { e.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put_e(uint32_t{3});
  put_e(uint64_t{1});
  put_e(uint64_t{0});
  put_e(uint64_t{1});
  e += "k";
  put_e(uint32_t{4});
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{1131}, uint64_t{0}}) put_e(n);
  put_e(uint32_t{0});
  put_e(uint64_t{0});
  e.resize(137, '\0');
  const mq::gguf::File g = mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(e.data()), e.size()));
  const std::string again = mq::gguf::serialize(g);
  CHECK(again.size() == 96);
  const mq::gguf::File h = mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(again.data()), again.size()));
  REQUIRE(h.tensors.size() == 1);
  CHECK(h.tensors[0].ne == std::vector<int64_t>{0, 1, 1131, 0});
  // The largest empty shapes: fine; one past them overflows.
  const uint64_t big = uint64_t{1} << 62;
  std::string z = e;
  const uint64_t one_dim = 1;
  std::memcpy(z.data() + 53, &one_dim, 8);  // {2^62, 1, 1, 0}: the non-zero product fits int64
  std::memcpy(z.data() + 37, &big, 8);      // ne[0] = 2^62 (F32), rows 0
  CHECK(mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(z.data()), z.size())).tensors[0].ne[0] == int64_t{1} << 62);
  const uint64_t too_big = uint64_t{1} << 63;
  std::memcpy(z.data() + 37, &too_big, 8);
  CHECK_THROWS_WITH_AS(mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(z.data()), z.size())),
                       doctest::Contains("dimension 0 = 9223372036854775808 makes its shape overflow 64 bits"), mq::Error);
}

TEST_CASE("class 4, absurd allocation: a GGUF alignment of 2^31 is refused, not padded to") {
  // Found by the long fuzz_gguf run: an empty file with general.alignment 2^31 parsed, and writing it
  // back padded the header to 2 GB.
  mq::gguf::File f;
  f.set(mq::gguf::kAlignmentKey, mq::gguf::Value::u32(0x80000000u));
  CHECK_THROWS_WITH_AS(mq::gguf::serialize(f), "gguf: general.alignment 2147483648 is above the limit 1048576", mq::Error);
  std::string b("GGUF", 4);
  auto put = [&](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(uint32_t{3});
  put(uint64_t{0});
  put(uint64_t{1});
  put(uint64_t{17});
  b += mq::gguf::kAlignmentKey;
  put(uint32_t{4});  // u32
  put(uint32_t{0x80000000u});
  const long before = max_rss_kb();
  CHECK_THROWS_WITH_AS(mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size())),
                       doctest::Contains("general.alignment 2147483648 is above the limit 1048576"), mq::Error);
  CHECK(max_rss_kb() - before < 100 * 1024);
  // The largest accepted alignment round-trips.
  f.set(mq::gguf::kAlignmentKey, mq::gguf::Value::u32(mq::gguf::kMaxAlignment));
  const std::string s = mq::gguf::serialize(f);
  CHECK(s.size() == mq::gguf::kMaxAlignment);
  CHECK(mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size())).alignment() == mq::gguf::kMaxAlignment);
}

TEST_CASE("class 2, a file our tool writes is a file our tool reads: float schemes and zero-length tensors") {
  const std::string dir = fresh_dir("round_trip");
  // Zero-length tensors are legal anywhere, also at the same offset as a non-empty one.
  TensorFile f;
  const float one[2] = {1.0f, 2.0f};
  f.add_f32("a", {2}, one);
  f.add_f32("empty", {0}, nullptr);
  f.add_f32("b", {1, 2}, one);
  f.add_f32("empty2", {3, 0}, nullptr);
  write_safetensors(dir + "/zero.safetensors", f);
  const TensorFile g = read_safetensors(dir + "/zero.safetensors");
  REQUIRE(g.tensors.size() == 4);
  CHECK(g.find("empty")->bytes.empty());
  CHECK(g.find("empty2")->shape == std::vector<int64_t>{3, 0});
  CHECK(g.find("b")->bytes == f.find("b")->bytes);

  // Every float scheme (the ones whose codes are the values) and one integer scheme round-trip
  // bit-exactly: the loaded model runs exactly the stored codes (fp32 is the unmodified model).
  const Tokenizer tok = toy_tokenizer();
  for (const mq::Scheme& s : {mq::Scheme::fp16(), mq::Scheme::bf16(), mq::Scheme::fp32(), mq::Scheme::integer(4, 64, false)}) {
    CAPTURE(s.name());
    const std::string p = quantized_checkpoint(dir + "/q_" + s.name() + ".safetensors", tok, s);
    const Model loaded = load_any_model(p);
    const Model ref(tiny_config(tok.size()), 42);
    for (const LinearInfo& li : ref.linears()) {
      const std::vector<float> want = mq::dequantize(mq::quantize(li.weight, li.out, li.in, s, li.name));
      const auto* qp = dynamic_cast<const QuantizedProjection*>(&loaded.projection(li.name));
      const std::vector<float> got = qp ? mq::dequantize(qp->linear().weight())
                                        : std::vector<float>(loaded.param(li.name + ".weight"),
                                                             loaded.param(li.name + ".weight") + want.size());
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
    const CliResult r = run_cli("generate --model " + p + " --gen-tokens 3 --temperature 0");
    INFO(r.out);
    CHECK(r.code == 0);
  }

  // Through the CLI, as the probe found it: quantize --scheme fp16 writes a file eval/generate load.
  const mqexp::CorpusBundle c = mqexp::load_corpus(mqexp::kDefaultLexicon, 42);
  const std::string fp32 = fp32_checkpoint(dir + "/corpus_vocab.safetensors", c.tok);
  for (const char* scheme : {"fp16", "bf16", "fp32"}) {
    CAPTURE(scheme);
    const std::string q = dir + "/cli_" + scheme + ".safetensors";
    const CliResult w = run_cli("quantize --model " + fp32 + " --scheme " + scheme + " --out " + q);
    INFO(w.out);
    REQUIRE(w.code == 0);
    const CliResult r = run_cli("generate --model " + q + " --gen-tokens 3 --temperature 0");
    INFO(r.out);
    CHECK(r.code == 0);
  }
}

TEST_CASE("class 3, silent wrong numbers: out-of-range integers, duplicate keys, NaN/Inf values, scheme mismatches") {
  const std::string dir = fresh_dir("wrong_numbers");
  const std::string train_ok = write_test_file(dir, "train.json", valid_train_json());
  const std::string model_ok = write_test_file(dir, "model.json", kModelJson);
  const std::string out = dir + "/m.safetensors";

  // (a) Integers outside int and duplicate keys: rejected naming the key, never truncated.
  const std::string wide = write_test_file(
      dir, "wide.json", R"({"vocab_size": 8, "n_ctx": 16, "d_model": 4294967552, "n_layer": 1, "n_head": 2, "d_ff": 512})");
  // A bad value is a usage error (exit 2) beyond 32 bits as below them (issue 37: one class, one code).
  check_error(run_cli("train --config " + wide + " --train-config " + train_ok + " --out " + out), 2,
              {"\"d_model\"", "4294967552", "must be an integer in"});
  const std::string steps = write_test_file(dir, "steps.json", R"({"steps": 5000000000})");
  check_error(run_cli("train --config " + model_ok + " --train-config " + steps + " --out " + out), 2,
              {"\"steps\"", "5000000000", "must be an integer in"});
  const std::string dup = write_test_file(
      dir, "dup.json", R"({"vocab_size": 8, "n_ctx": 16, "d_model": 128, "d_model": 256, "n_layer": 1, "n_head": 2, "d_ff": 512})");
  check_error(run_cli("train --config " + dup + " --train-config " + train_ok + " --out " + out),
              1, {"duplicate JSON key \"d_model\""});
  const std::string lr_inf = write_test_file(dir, "lr.json", R"({"lr": 1e999})");
  check_error(run_cli("train --config " + model_ok + " --train-config " + lr_inf + " --out " + out), 1,
              {"lr.json", "number overflow"});
  CHECK_THROWS_WITH_AS(train_config_from_text(R"({"lr": "fast"})", "t"), doctest::Contains("\"lr\" must be a finite number"), mq::Error);
  CHECK(!fs::exists(out));
  CHECK_THROWS_WITH_AS(train_config_from_text(R"({"seed": -1})", "t"), doctest::Contains("\"seed\""), mq::Error);

  // (b) NaN or Inf weights, and NaN/Inf fp16 scales: rejected at load naming the tensor.
  const Tokenizer tok = toy_tokenizer();
  const std::string nan_w = fp32_checkpoint(dir + "/nan_weight.safetensors", tok, [](TensorFile& f) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(tensor(f, "h.0.mlp.c_fc.weight").bytes.data() + 4 * 7, &nan, 4);
  });
  check_error(run_cli("generate --model " + nan_w), 1, {"nan_weight.safetensors", "h.0.mlp.c_fc.weight", "NaN or Inf", "element 7"});
  const std::string inf_w = fp32_checkpoint(dir + "/inf_weight.safetensors", tok, [](TensorFile& f) {
    const float inf = std::numeric_limits<float>::infinity();
    std::memcpy(tensor(f, "wte").bytes.data(), &inf, 4);
  });
  check_error(run_cli("generate --model " + inf_w), 1, {"\"wte\"", "NaN or Inf"});
  for (uint16_t bad : {uint16_t{0x7E00}, uint16_t{0x7C00}, uint16_t{0xFC00}}) {  // NaN, +Inf, -Inf in fp16
    const std::string p = quantized_checkpoint(dir + "/bad_scale.safetensors", tok, mq::Scheme::integer(8, mq::kPerChannel),
                                               [&](TensorFile& f) {
                                                 std::memcpy(tensor(f, "h.0.attn.c_proj.weight.scales").bytes.data() + 2 * 3, &bad, 2);
                                               });
    check_error(run_cli("generate --model " + p), 1, {"bad_scale.safetensors", "h.0.attn.c_proj.weight.scales", "element 3"});
  }

  // (c) Tensors checked against the scheme the metadata names: fp16 relabelled bf16, wrong dtypes and shapes.
  const std::string relabel = quantized_checkpoint(dir + "/relabel.safetensors", tok, mq::Scheme::fp16(), [](TensorFile& f) {
    nlohmann::json q = nlohmann::json::parse(f.metadata[kMetaQuantization]);
    q["layers"]["h.0.mlp.c_fc"] = "bf16";
    f.metadata[kMetaQuantization] = q.dump();
  });
  check_error(run_cli("generate --model " + relabel), 1,
              {"relabel.safetensors", "h.0.mlp.c_fc.weight.codes is F16 [512, 128] but the scheme stores BF16 [512, 128]"});
  const std::string shape = quantized_checkpoint(dir + "/shape.safetensors", tok, mq::Scheme::integer(4, 64), [](TensorFile& f) {
    NamedTensor& s = tensor(f, "h.0.attn.c_attn.weight.scales");  // same bytes, 2-D shape
    s.shape = {s.shape[0] / 2, 2};
  });
  check_error(run_cli("generate --model " + shape), 1, {"h.0.attn.c_attn.weight.scales is F16 [", "but the scheme stores F16 ["});
  const std::string zeros = quantized_checkpoint(dir + "/zeros.safetensors", tok, mq::Scheme::integer(4, 64, false), [](TensorFile& f) {
    nlohmann::json q = nlohmann::json::parse(f.metadata[kMetaQuantization]);
    q["layers"]["h.0.mlp.c_proj"] = "int4-g64";  // symmetric: its zeros tensor is now foreign
    f.metadata[kMetaQuantization] = q.dump();
  });
  check_error(run_cli("generate --model " + zeros), 1, {"h.0.mlp.c_proj.weight.zeros is present"});
}

TEST_CASE("class 3, silent wrong numbers: a quant map's layer numbers and GPTQ settings are range-checked, never truncated") {
  // get<int> used to read layer 4294967296 as layer 0 and 2.5 as 2 (and 1e300 was undefined behaviour,
  // found reading from_json for fuzz_quant_map); percdamp 1e999 (inf) passed the "> 0" check.
  const auto plan = [](const std::string& text) { return QuantPlan::from_json(mq::parse_json_checked(text, "map.json"), "map.json"); };
  const std::string head = R"({"config_id": "x", "default": "int4-g64", )";
  CHECK_THROWS_WITH_AS(plan(head + R"("layer_groups": [{"layers": [4294967296], "quant": "fp16"}]})"),
                       "map.json layer_groups[0]: layers[0] must be an integer in [0, 1023], got 4294967296", mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("tensors": [{"match": "qkv", "layers": [1, 2.5], "quant": "fp16"}]})"),
                       "map.json tensors[0]: layers[1] must be an integer in [0, 1023], got 2.5", mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("tensors": [{"match": "qkv", "layers": [1e300], "quant": "fp16"}]})"),
                       doctest::Contains("layers[0] must be an integer in [0, 1023], got 1e+300"), mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("layer_groups": [{"layers": [-1], "quant": "fp16"}]})"),
                       doctest::Contains("layers[0] must be an integer in [0, 1023], got -1"), mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("layer_groups": [{"layers": 1, "quant": "fp16"}]})"),
                       doctest::Contains("\"layers\" is missing or is not an array"), mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("gptq": {"calibration_windows": 5000000000}})"),
                       "map.json gptq: calibration_windows must be an integer in [1, 2147483647], got 5000000000", mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("gptq": {"block": 0}})"), doctest::Contains("block must be an integer in [1, 2147483647], got 0"),
                       mq::UsageError);
  CHECK_THROWS_WITH_AS(QuantPlan::from_json({{"config_id", "x"}, {"default", "int4-g64"}, {"gptq", {{"percdamp", INFINITY}}}}),
                       doctest::Contains("percdamp must be a finite positive number"), mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(head + R"("gptq": {"percdamp": 0}})"), doctest::Contains("percdamp must be a finite positive number, got 0"),
                       mq::UsageError);
  CHECK_THROWS_WITH_AS(plan(R"({"config_id": "x", "default": "int4-g64", "default": "fp16"})"),
                       doctest::Contains("duplicate JSON key \"default\""), mq::Error);
  // Legal values still read exactly.
  const QuantPlan ok = plan(head + R"("layer_groups": [{"layers": [0, 1023], "quant": "fp16"}],
      "gptq": {"calibration_windows": 2147483647, "percdamp": 0.5, "block": 64}})");
  CHECK(ok.rules.at(0).layers == std::vector<int>{0, 1023});
  CHECK(ok.gptq.calibration_windows == 2147483647);
  CHECK(ok.gptq.options.percdamp == 0.5);
  CHECK(ok.gptq.options.block == 64);
  // A 40 KB scheme, kind or key is cut short in the message: one readable line.
  for (const std::string& text : {head + "\"" + std::string(40000, '7') + "\": 1}",
                                  R"({"config_id": "x", "default": "int4-g)" + std::string(40000, '6') + "\"}",
                                  head + R"("tensors": [{"match": ")" + std::string(40000, 'q') + R"(", "quant": "fp16"}]})"}) {
    try {
      plan(text);
      FAIL("accepted");
    } catch (const mq::UsageError& e) {
      CHECK(std::string(e.what()).size() < 600);
    }
  }

  // A 40 KB config_id cannot name a file (issue 37): refused when read, in a short line.
  try {
    (void)plan(R"({"config_id": ")" + std::string(40000, 'i') + R"(", "default": "int4-g96"})");
    FAIL("accepted");
  } catch (const mq::UsageError& e) {
    CHECK(std::string(e.what()).size() < 600);
    CHECK(std::string(e.what()).find("cannot name a file: it is 40000 characters long") != std::string::npos);
  }
  try {
    plan(R"({"config_id": "i", "default": "int4-g96"})").validate(tiny_config(8));
    FAIL("validated");
  } catch (const mq::UsageError& e) {
    CHECK(std::string(e.what()).find("int4-g96") != std::string::npos);
  }

  // Through the CLI: a quantized checkpoint whose recorded plan names layer 4294967296 is a bad file (exit 1).
  const std::string dir = fresh_dir("plan_numbers");
  const std::string p = quantized_checkpoint(dir + "/plan.safetensors", toy_tokenizer(), mq::Scheme::integer(8, mq::kPerChannel),
                                             [](TensorFile& f) {
                                               nlohmann::json q = nlohmann::json::parse(f.metadata[kMetaQuantization]);
                                               q["plan"]["layer_groups"] = nlohmann::json::parse(R"([{"layers": [4294967296], "quant": "int8-per-channel"}])");
                                               f.metadata[kMetaQuantization] = q.dump();
                                             });
  check_error(run_cli("generate --model " + p), 1,
              {"plan.safetensors", "its recorded plan is not valid", "layers[0] must be an integer in [0, 1023], got 4294967296"});
}

TEST_CASE("class 4, absurd allocation: sizes are checked against limits and the file before allocating") {
  const std::string dir = fresh_dir("allocation");
  // A tiny file whose config asks for ~4 GB of parameters (n_ctx 60000 x d_model 16384 positions
  // alone): refused on the missing tensors, with no allocation of that size.
  auto tiny_file = [&](int n_ctx, int d_model) {
    nlohmann::json cfg = {{"vocab_size", 8}, {"n_ctx", n_ctx}, {"d_model", d_model}, {"n_layer", 1}, {"n_head", 2}, {"d_ff", 4 * d_model}};
    TensorFile f;
    f.metadata[kMetaFormat] = kCheckpointFormat;
    f.metadata[kMetaConfig] = cfg.dump();
    return f;
  };
  const long before = max_rss_kb();
  CHECK_THROWS_WITH_AS(model_from_tensor_file(tiny_file(60000, 8192), "tiny"), doctest::Contains("is missing"), mq::Error);
  CHECK(max_rss_kb() - before < 200 * 1024);  // the model would need ~2 GB
  write_safetensors(dir + "/n_ctx.safetensors", tiny_file(200000, 128));
  CHECK(fs::file_size(dir + "/n_ctx.safetensors") < 400);
  check_error(run_cli("generate --model " + dir + "/n_ctx.safetensors"), 1, {"n_ctx = 200000 is above the limit"});
  write_safetensors(dir + "/missing.safetensors", tiny_file(60000, 8192));
  check_error(run_cli("generate --model " + dir + "/missing.safetensors"), 1, {"tensor \"wte\" is missing"});
  // The same through the quantized loader, which used to build a whole model just for the shapes.
  TensorFile q = tiny_file(60000, 8192);
  q.metadata[kMetaQuantization] = R"({"layers": {"h.0.attn.c_attn": "int8-per-channel"}, "embedding": "fp32",
      "plan": {"config_id": "qkv8", "default": "fp32", "tensors": [{"match": "qkv", "quant": "int8-per-channel"}]}})";
  write_safetensors(dir + "/q_missing.safetensors", q);
  check_error(run_cli("generate --model " + dir + "/q_missing.safetensors"), 1, {"c_attn.weight.codes is missing"});
  // Configs from a user: limits named with the field.
  const std::string huge = write_test_file(
      dir, "huge.json", R"({"vocab_size": 8, "n_ctx": 16, "d_model": 1048576, "n_layer": 1, "n_head": 2, "d_ff": 4194304})");
  const std::string train = write_test_file(dir, "train.json", valid_train_json());
  check_error(run_cli("train --config " + huge + " --train-config " + train + " --out " + dir + "/m.safetensors"), 2,
              {"d_model = 1048576 is above the limit"});
  CHECK(!fs::exists(dir + "/m.safetensors"));
  const std::string batch = write_test_file(dir, "batch.json", R"({"batch": 2000000000})");
  check_error(run_cli("train --config " + write_test_file(dir, "model.json", kModelJson) + " --train-config " + batch + " --out " +
                      dir + "/m.safetensors"),
              2, {"batch 2000000000 is above the limit"});
  // A .npy whose shape asks for far more than its bytes: refused before allocating.
  const std::string npy = write_test_file(
      dir, "claims.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", std::string(16, '\0')));
  check_error(run_cli("quant-report --npy " + npy), 1, {"truncated data", "4000000000000 bytes"});

  // The KV cache grows with the positions used, not n_ctx up front.
  ModelConfig big_ctx = tiny_config(8);
  big_ctx.n_ctx = 4096;
  Model m(big_ctx, 1);
  KVCache cache = m.make_cache();
  CHECK(cache.k.size() == 1);
  CHECK(cache.k[0].empty());
  std::vector<float> logits(3 * 8);
  const int32_t toks[3] = {1, 2, 3};
  m.forward(cache, toks, 3, logits.data());
  CHECK(cache.k[0].size() == 3 * 128);
  CHECK(cache.v[0].size() == 3 * 128);
  // Decoding on: the cache still agrees with a fresh whole-sequence pass.
  std::vector<float> last(8);
  const int32_t next = 4;
  m.forward(cache, &next, 1, last.data());
  const std::vector<float> whole = m.logits({1, 2, 3, 4});
  for (int j = 0; j < 8; ++j) CHECK(last[j] == doctest::Approx(whole[3 * 8 + j]).epsilon(1e-5));
}

TEST_CASE("class 5, unclear errors and wrong exit codes: one clear line with the documented code") {
  const std::string dir = fresh_dir("errors");
  const Tokenizer tok = toy_tokenizer();
  // A corrupt scheme name inside a file is the file's fault: exit 1, naming the file.
  const std::string bad_scheme = quantized_checkpoint(dir + "/bad_scheme.safetensors", tok, mq::Scheme::integer(8, mq::kPerChannel),
                                                      [](TensorFile& f) {
                                                        nlohmann::json q = nlohmann::json::parse(f.metadata[kMetaQuantization]);
                                                        q["layers"]["h.0.attn.c_attn"] = "int9-bogus";
                                                        f.metadata[kMetaQuantization] = q.dump();
                                                      });
  check_error(run_cli("generate --model " + bad_scheme), 1, {"bad_scheme.safetensors", "h.0.attn.c_attn", "unknown scheme \"int9-bogus\""});
  // Values of the wrong JSON type: our message, not the library's.
  const std::string typed = quantized_checkpoint(dir + "/typed.safetensors", tok, mq::Scheme::integer(8, mq::kPerChannel),
                                                 [](TensorFile& f) {
                                                   nlohmann::json q = nlohmann::json::parse(f.metadata[kMetaQuantization]);
                                                   q["layers"]["h.0.attn.c_attn"] = 7;
                                                   f.metadata[kMetaQuantization] = q.dump();
                                                 });
  check_error(run_cli("generate --model " + typed), 1, {"scheme must be a string, got 7"});
  const std::string vocab = fp32_checkpoint(dir + "/vocab.safetensors", tok, [](TensorFile& f) {
    f.metadata[kMetaVocab] = R"({"format": 5, "tokens": ["<unk>", "<sep>"]})";
  });
  check_error(run_cli("generate --model " + vocab), 1, {"vocabulary JSON lacks format"});
  const std::string long_dim = write_test_file(
      dir, "long_dim.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }"));
  check_error(run_cli("quant-report --npy " + long_dim), 1, {"does not fit in 64 bits"});
  const std::string negative = write_test_file(
      dir, "negative.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }"));
  check_error(run_cli("quant-report --npy " + negative), 1, {"negative.npy", "negative dimension"});

  // Permission errors say so (root reads everything, so the CLI part needs another user).
  CHECK(mq::errno_reason(EACCES) == "permission denied");
  const std::string locked = fp32_checkpoint(dir + "/locked.safetensors", tok);
  ::chmod(locked.c_str(), 0);
  if (::geteuid() != 0) check_error(run_cli("generate --model " + locked), 1, {"locked.safetensors", "permission denied"});
  ::chmod(locked.c_str(), 0644);

  // A FIFO as --model: refused at once instead of blocking on open (timeout turns a hang into 124).
  const std::string fifo = dir + "/fifo.safetensors";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const mq::CommandOutput ff = mq::run_command("timeout 20 " + std::string(MQ_CLI_PATH) + " generate --model " + fifo + " 2>&1");
  check_error({ff.code, ff.out}, 1, {"fifo.safetensors", "not a regular file"});
  const mq::CommandOutput fq = mq::run_command("timeout 20 " + std::string(MQ_CLI_PATH) + " quant-report --npy " + fifo + " 2>&1");
  check_error({fq.code, fq.out}, 1, {"not a regular file"});

  // Flag ranges: readable bounds, NaN and Inf refused.
  check_error(run_cli("generate --gen-tokens=-5"), 2, {"--gen-tokens", "must be a positive number"});
  check_error(run_cli("generate --temperature nan"), 2, {"--temperature", "not a finite number"});
  check_error(run_cli("generate --temperature inf"), 2, {"not a finite number"});
  check_error(run_cli("generate --temperature=-1"), 2, {"must be a number >= 0"});
  check_error(run_cli("eval --window 0"), 2, {"--window"});

  // Scheme lists take commas and spaces everywhere.
  for (const char* list : {"\"fp16, int8-per-channel\"", "fp16,int8-per-channel", "fp16 int8-per-channel"}) {
    CAPTURE(list);
    const CliResult r = run_cli(std::string("quant-report --shape 4x128 --json --schemes ") + list);
    INFO(r.out);
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["schemes"].size() == 2);
    CHECK(j["schemes"][1]["scheme"] == "int8-per-channel");
  }
  for (const char* list : {"fp16,bogus", "\"fp16 bogus\"", "fp16 bogus"}) {
    CAPTURE(list);
    check_error(run_cli(std::string("sweep --schemes ") + list), 2, {"unknown scheme 'bogus'"});
  }
  check_error(run_cli("sweep --add-scheme \"int8-per-channel, nope\""), 2, {"'nope'"});

  // An unknown subcommand is named.
  check_error(run_cli("frobnicate --x 1"), 2, {"unknown subcommand 'frobnicate'"});
  CHECK(run_cli("").code == 2);
}

TEST_CASE("class 6, work lost to a bad output path: outputs are checked before the work, writes leave no .tmp") {
  const std::string dir = fresh_dir("output_path");
  const std::string model = write_test_file(dir, "model.json", kModelJson);
  const std::string train = write_test_file(dir, "train.json", valid_train_json(50));
  // train checks --out (and --log, and the config's checkpoint_path) before generating the corpus.
  const CliResult t = run_cli("train --config " + model + " --train-config " + train + " --out " + dir + "/missing/m.safetensors");
  check_error(t, 1, {"cannot write", "missing/m.safetensors", "no such file or directory"});
  CHECK(t.out.find("corpus:") == std::string::npos);
  check_error(run_cli("train --config " + model + " --train-config " + train + " --out " + dir), 1, {"it is a folder"});
  check_error(run_cli("train --config " + model + " --train-config " + train + " --out " + dir + "/m.safetensors --log " + dir +
                      "/nope/train.log"),
              1, {"nope/train.log"});
  CHECK(!fs::exists(dir + "/m.safetensors"));

  // quantize checks --out before loading and GPTQ.
  const std::string ck = fp32_checkpoint(dir + "/fp32.safetensors", toy_tokenizer());
  const CliResult q = run_cli("quantize --model " + ck + " --scheme int4-g64-gptq --out " + dir + "/missing/q.safetensors");
  check_error(q, 1, {"cannot write", "missing/q.safetensors"});
  // Folder outputs: a path under a regular file cannot be created.
  check_error(run_cli("roofline --no-plot --out " + ck + "/sub"), 1, {"cannot create the output folder"});
  check_error(run_cli("sweep --no-plot --out " + ck + "/sub"), 1, {"cannot create the output folder"});

  // Atomic writes: the temporary is write_file_atomic's own (`.<name>.mq-XXXXXX`, issue 53), so a file named
  // like the old fixed temporary is someone's file and stays; a failed write removes its temporary and
  // leaves the target alone.
  const std::string target = dir + "/atomic.bin";
  write_test_file(dir, "atomic.bin.tmp", "stale half-written data");
  mq::write_file_atomic(target, "new");
  CHECK(mq::read_file(target) == "new");
  CHECK(mq::read_file(target + ".tmp") == "stale half-written data");
  fs::create_directories(dir + "/is_a_dir");
  CHECK_THROWS_AS(mq::write_file_atomic(dir + "/is_a_dir", "x"), mq::Error);
  CHECK(!fs::exists(dir + "/is_a_dir.tmp"));
  CHECK(fs::is_directory(dir + "/is_a_dir"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find(".mq-") == std::string::npos);
  CHECK_THROWS_WITH_AS(mq::check_writable_output(dir + "/missing/x"), doctest::Contains("no such file or directory"), mq::Error);
  CHECK_NOTHROW(mq::check_writable_output(dir + "/fine.bin"));
  CHECK(!fs::exists(dir + "/fine.bin"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find(".mq-write-probe") == std::string::npos);
}
