// Hostile input, issue 37, results: a number that is not a number is an error naming where it arose;
// a flipped bit in a file we wrote fails its load naming the tensor (checksums); and the issue's smaller
// items (empty scheme lists, group sizes, empty matrices, resume step numbers, config ranges, the
// vocabulary hash). Each class's test is named after it; errors are checked by text and exit code.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "experiments/divergence.h"
#include "hostile_helpers.h"
#include "miniquant/error.h"
#include "miniquant/gguf/io.h"
#include "miniquant/util/integrity.h"
#include "miniquant/util/io.h"
#include "miniquant/util/sysinfo.h"
#include "minigpt/batched_decode.h"
#include "minigpt/config.h"
#include "minigpt/eval.h"
#include "minigpt/gguf_export.h"
#include "minigpt/ops.h"
#include "minigpt/train.h"
#include "minigpt/train_config.h"

using namespace hostile;
using nlohmann::json;

namespace {

ModelConfig two_layers() { return {.vocab_size = 8, .n_ctx = 16, .d_model = 128, .n_layer = 2, .n_head = 2, .d_ff = 512}; }

void fill(Model& m, const std::string& param, size_t from, size_t count, float v) {
  float* p = m.param(param);
  for (size_t i = from; i < from + count; ++i) p[i] = v;
}

// The byte range of tensor `name` in a safetensors file's bytes, from its header.
std::pair<size_t, size_t> tensor_range(const std::string& file, const std::string& name) {
  uint64_t hlen = 0;
  std::memcpy(&hlen, file.data(), 8);
  const json h = json::parse(file.substr(8, hlen));
  const auto& o = h.at(name).at("data_offsets");
  return {8 + hlen + o[0].get<size_t>(), 8 + hlen + o[1].get<size_t>()};
}

}  // namespace

TEST_CASE("class non-finite results: a NaN or Inf logit is an error naming its position and the layer that made it") {
  const int32_t toks[4] = {1, 2, 3, 4};
  const std::vector<int32_t> ids(toks, toks + 4);
  // As the probe found it: one LayerNorm weight of 3e38 (finite, so the file loads) overflows its output.
  Model ln(two_layers(), 42);
  fill(ln, "h.1.ln_2.weight", 0, 128, 3e38f);
  CHECK_THROWS_WITH_AS((void)ln.logits(ids),
                       doctest::Contains("non-finite logit at position 0 (token id 1): the first non-finite value arose in layer 1 (ln_2) at "
                                         "position 0"),
                       mq::Error);
  // Only from a later position on: an infinite position embedding row at position 2 (in memory; a file
  // holding one is refused when it loads).
  const float inf = std::numeric_limits<float>::infinity();
  Model pos(two_layers(), 42);
  fill(pos, "wpe", 2 * 128, 128, inf);
  // The logits of positions 0 and 1 are NaN too: the attention multiplies the masked (later) positions'
  // values by 0, and 0 x NaN is NaN. The step that made the first one names position 2.
  CHECK_THROWS_WITH_AS((void)pos.logits(ids),
                       doctest::Contains("non-finite logit at position 0 (token id 1): the first non-finite value arose in the token and "
                                         "position embeddings at position 2"),
                       mq::Error);
  CHECK_THROWS_WITH_AS((void)pos.logits({1, 2, 3}), doctest::Contains("no result"), mq::Error);  // position 2 reached
  CHECK(pos.logits({1, 2}).size() == 2 * 8);                                                // not reached
  // Decoding: the position counts the cached ones.
  Model later(two_layers(), 42);
  fill(later, "wpe", 3 * 128, 128, inf);
  (void)later.prefill({1, 2, 3});
  CHECK_THROWS_WITH_AS((void)later.decode(5), doctest::Contains("non-finite logit at position 3 (token id 5): the first non-finite "
                                                                  "value arose in the token and position embeddings at position 3"),
                       mq::Error);
  // Inside the parallel loops (an exception must not leave an OpenMP region): perplexity, the divergence
  // pass, and the batched decode of the energy runs, each naming where.
  const std::vector<int32_t> stream = {2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5, 2, 3};
  CHECK_THROWS_WITH_AS((void)minigpt::perplexity(ln, stream, 16, 8), doctest::Contains("perplexity window 0 (split tokens 0..16)"), mq::Error);
  const Model good(two_layers(), 42);
  CHECK_THROWS_WITH_AS((void)mqexp::divergence_pass(good, {&ln}, stream, 16, 8),
                       doctest::Contains("compared model, window 0 (split tokens 0..15): non-finite logit at position 0"), mq::Error);
  std::vector<KVCache> caches(3, minigpt::make_cache(pos, 8));
  std::vector<KVCache*> ptrs = {&caches[0], &caches[1], &caches[2]};
  std::vector<float> lg(3 * 8);
  const int32_t batch[3] = {1, 2, 3};
  minigpt::decode_batch(pos, ptrs, batch, lg.data());  // position 0: finite
  minigpt::decode_batch(pos, ptrs, batch, lg.data());  // position 1
  CHECK_THROWS_WITH_AS(minigpt::decode_batch(pos, ptrs, batch, lg.data()),
                       doctest::Contains("non-finite logit at position 2 (token id 1): the first non-finite value arose in the token and "
                                         "position embeddings at position 2"),
                       mq::Error);
  // The finite model is untouched by the check.
  CHECK(good.logits(ids).size() == 4 * 8);
  // The check itself (exponent bits, vectorized) against std::isfinite: every length to 67, each special
  // value at each position, among the largest and smallest finite floats.
  const float specials[] = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
  const float finite[] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                          -0.0f, 1.0f};
  for (size_t n = 0; n <= 67; ++n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = finite[i % 5];
    CHECK(minigpt::ops::all_finite(v.data(), n));
    for (size_t i = 0; i < n; ++i)
      for (float x : specials) {
        std::vector<float> w = v;
        w[i] = x;
        CHECK_FALSE(minigpt::ops::all_finite(w.data(), n));
      }
  }

  // Through the CLI: a checkpoint with the probe's LayerNorm weight; generate no longer prints words.
  const std::string dir = fresh_dir("non_finite");
  const std::string ck = fp32_checkpoint(dir + "/ln.safetensors", toy_tokenizer(), [](TensorFile& f) {
    const float big = 3e38f;
    for (int i = 0; i < 128; ++i) std::memcpy(tensor(f, "h.0.ln_1.weight").bytes.data() + 4 * i, &big, 4);
  });
  check_error(run_cli("generate --model " + ck + " --prompt \"the dog\" --gen-tokens 5"), 1,
              {"non-finite logit at position 0", "in layer 0 (ln_1)", "no result to report"});
  // A perplexity that is finite but absurd (the probe's 4096 scales set to 65504: 1075) is not a
  // non-finite result; it is a changed file, which the checksums below catch.
}

TEST_CASE("class unnoticed corruption: one flipped bit in any tensor kind of a quantized checkpoint fails its load, naming the tensor") {
  const std::string dir = fresh_dir("corruption");
  // int4-g64-asym Linears (codes, fp16 scales, zero-points), the fp16 embedding, fp32 LayerNorms and biases.
  Model m(tiny_config(6), 42);
  const QuantPlan plan = QuantPlan::uniform("int4-g64-asym");  // embedding fp16
  minigpt::quantize_model(m, plan);
  const std::string path = dir + "/q.safetensors";
  minigpt::save_quantized_model(path, m, plan, meta_of(toy_tokenizer()));
  const std::string clean = mq::read_file(path);
  CHECK(read_safetensors(path).checksums == minigpt::Checksums::verified);
  CHECK(run_cli("generate --model " + path + " --gen-tokens 2 --temperature 0").code == 0);
  for (const char* name : {"h.0.mlp.c_fc.weight.codes", "h.0.attn.c_attn.weight.scales", "h.0.mlp.c_proj.weight.zeros", "wte",
                           "h.0.ln_2.weight", "h.0.attn.c_proj.bias"}) {
    CAPTURE(name);
    const auto [b, e] = tensor_range(clean, name);
    REQUIRE(e > b);
    std::string bad = clean;
    bad[(b + e) / 2] ^= 0x10;  // one bit in the middle of the tensor's data
    const std::string f = write_test_file(dir, "flipped.safetensors", bad);
    check_error(run_cli("generate --model " + f + " --gen-tokens 2"), 1,
                {"flipped.safetensors", std::string("checksum mismatch in tensor '") + name + "'", "--no-verify"});
  }
  // --no-verify loads the flipped codes anyway (what the flag is for), as another model.
  {
    const auto [b, e] = tensor_range(clean, "h.0.mlp.c_fc.weight.codes");
    std::string bad = clean;
    bad[b] ^= 0x01;
    const std::string f = write_test_file(dir, "codes.safetensors", bad);
    CHECK(run_cli("generate --model " + f + " --gen-tokens 2").code == 1);
    const CliResult r = run_cli("generate --model " + f + " --gen-tokens 2 --temperature 0 --no-verify");
    INFO(r.out);
    CHECK(r.code == 0);
  }
  // A file without checksums (another tool's, or written before them) loads, with a one-line note.
  {
    uint64_t hlen = 0;
    std::memcpy(&hlen, clean.data(), 8);
    json h = json::parse(clean.substr(8, hlen));
    h["__metadata__"].erase(kMetaChecksums);
    std::string text = h.dump();
    text.append(hlen - text.size(), ' ');  // same length: the data offsets stay valid
    const std::string f = write_test_file(dir, "unsummed.safetensors", clean.substr(0, 8) + text + clean.substr(8 + hlen));
    const CliResult r = run_cli("generate --model " + f + " --gen-tokens 2 --temperature 0");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(r.out.rfind("miniquant: note: " + f + " records no tensor checksums", 0) == 0);
    CHECK(read_safetensors(f).checksums == minigpt::Checksums::absent);
    // A checksum entry that is not 64 hex digits, or names no tensor, is a corrupt file.
    h["__metadata__"][kMetaChecksums] = R"({"wte": "xyz"})";
    text = h.dump();
    const std::string g = write_test_file(dir, "badsum.safetensors",
                                          safetensors_bytes(text + std::string((8 - text.size() % 8) % 8, ' '), clean.substr(8 + hlen)));
    CHECK_THROWS_WITH_AS(read_safetensors(g), doctest::Contains("tensor_sha256 of \"wte\" is not 64 hex digits"), mq::Error);
  }
  // GGUF exports carry one key per tensor; a flipped bit fails the reader naming the tensor.
  minigpt::GgufExportOptions o;
  o.embedding = mq::gguf::TensorType::F16;
  o.scheme_label = "int4-g64-asym";
  const std::string g = mq::gguf::serialize(minigpt::to_gguf(m, toy_tokenizer(), o));
  auto parse = [](const std::string& b) { return mq::gguf::parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size())); };
  const mq::gguf::File ok = parse(g);
  for (const auto& t : ok.tensors) CHECK(ok.find(std::string(mq::gguf::kChecksumPrefix) + t.name) != nullptr);
  std::string flipped = g;
  flipped[g.size() - 3] ^= 0x04;  // the last tensor's data
  CHECK_THROWS_WITH_AS(parse(flipped), doctest::Contains(("checksum mismatch in tensor '" + ok.tensors.back().name + "'").c_str()), mq::Error);
  mq::set_verify_checksums(false);
  CHECK_NOTHROW(parse(flipped));
  mq::set_verify_checksums(true);
  // The shipped checkpoint carries its checksums (written again with them, its tensor bytes unchanged),
  // and its content hash is the SHA-256 the file had before, which the committed results record (the
  // mixed study keys its units by it).
  CHECK(read_safetensors(mqexp::kDefaultModel).checksums == minigpt::Checksums::verified);
  CHECK(minigpt::content_sha256(mqexp::kDefaultModel) == "f6eaef733c53b7b9cb3433edcd9d9d14f7746e0070cf6b23df4ff56d4ca87253");
  CHECK(mq::sha256_file(mqexp::kDefaultModel) != minigpt::content_sha256(mqexp::kDefaultModel));
}

TEST_CASE("class smaller items: empty lists, groups that do not fit, empty matrices, step numbers, config ranges, vocabulary hash") {
  const std::string dir = fresh_dir("smaller");
  // quant-report: an empty --schemes is a usage error again (it ran the whole table); a group that
  // does not divide the width, when no scheme fits, says why; the default table keeps its n/a rows.
  check_error(run_cli("quant-report --schemes \"\""), 2, {"--schemes is empty: name at least one"});
  check_error(run_cli("sweep --schemes \" , \""), 2, {"--schemes is empty"});
  check_error(run_cli("quant-report --shape 4x100 --schemes int4-g64"), 2, {"group size 64 does not divide the input width 100"});
  const CliResult table = run_cli("quant-report --shape 4x100 --json");
  REQUIRE(table.code == 0);
  CHECK(json::parse(table.out)["schemes"].size() > 5);
  const std::string empty = write_test_file(dir, "empty.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }"));
  check_error(run_cli("quant-report --npy " + empty), 2, {"the matrix is empty (0x5); there is nothing to quantize"});

  // A resume checkpoint's train_step: exactly a non-negative decimal integer.
  Model m(tiny_config(8), 42);
  minigpt::TrainConfig tc;
  tc.steps = 5;
  tc.batch = 1;
  minigpt::Trainer tr(m, tc);
  const std::string ck = dir + "/resume.safetensors";
  tr.save(ck, meta_of(toy_tokenizer()));
  for (const char* step : {"12abc", "-1", "", " 3", "99999999999"}) {
    CAPTURE(step);
    TensorFile f = read_safetensors(ck);
    f.metadata["train_step"] = step;
    write_safetensors(dir + "/bad_step.safetensors", f);
    minigpt::Trainer again(m, tc);
    CHECK_THROWS_WITH_AS(again.load(dir + "/bad_step.safetensors"),
                         doctest::Contains("is not a step number (a non-negative integer); the checkpoint is corrupt"), mq::Error);
  }
  minigpt::Trainer fine(m, tc);
  CHECK_NOTHROW(fine.load(ck));
  // Through the CLI: refused before the corpus is generated, in one line (the file holds the last of the
  // bad steps above, 99999999999, beyond int).
  const std::string model_json = write_test_file(dir, "model.json", kModelJson);
  check_error(run_cli("train --config " + model_json + " --train-config " + write_test_file(dir, "t.json", valid_train_json()) +
                      " --resume " + dir + "/bad_step.safetensors --out " + dir + "/after.safetensors"),
              1, {"bad_step.safetensors: train_step metadata \"99999999999\" is not a step number"});

  // Config values out of range are one class with one code (2) beyond 32 bits as below them.
  const std::string train = dir + "/t.json";
  for (const char* field : {R"({"d_model": 4294967552})", R"({"d_model": 1048576})", R"({"n_ctx": 5000000000})", R"({"n_ctx": 200000})"}) {
    CAPTURE(field);
    json j = json::parse(std::string(kModelJson));
    j.update(json::parse(field));
    CHECK_THROWS_AS(minigpt::model_config_from_text(j.dump(), "c"), mq::UsageError);
    const std::string cfg = write_test_file(dir, "cfg.json", j.dump());
    CHECK(run_cli("train --config " + cfg + " --train-config " + train + " --out " + dir + "/m.safetensors").code == 2);
  }
  CHECK_THROWS_AS(minigpt::train_config_from_text(R"({"steps": 5000000000})", "t"), mq::UsageError);
  CHECK_THROWS_AS(minigpt::train_config_from_text(R"({"batch": 2000000000})", "t"), mq::UsageError);

  // generate checks the vocabulary hash as eval's loader does: the recorded hash must be the stored
  // vocabulary's (eval also compares it with the corpus's).
  const std::string vocab = fp32_checkpoint(dir + "/vocab.safetensors", toy_tokenizer(), [](TensorFile& f) {
    f.metadata[kMetaVocabHash] = "deadbeefdeadbeef";
  });
  check_error(run_cli("generate --model " + vocab), 1, {"its vocabulary hash deadbeefdeadbeef is not the hash", "of the vocabulary it stores"});
  check_error(run_cli("export-gguf --model " + vocab + " --scheme fp32 --out " + dir + "/v.gguf"), 1, {"is not the hash"});
}
