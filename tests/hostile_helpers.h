// What the hostile-input tests share (test_hostile_*.cpp): files built byte by byte, tiny checkpoints
// written by the project's writers, and the CLI error format (one line, the documented exit code).
#pragma once
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>

#include "cli_run.h"
#include "temp_dir.h"
#include "experiments/workspace.h"
#include "miniquant/format.h"
#include "minigpt/checkpoint.h"
#include "minigpt/quant_plan.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/safetensors.h"
#include "minigpt/tokenizer.h"

namespace hostile {

namespace fs = std::filesystem;
using namespace minigpt;

// A clean folder `name` in this test process's own temporary folder (tests/temp_dir.h).
inline std::string fresh_dir(const std::string& name) { return mqtest::fresh_subdir("mq_hostile", name); }

inline std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

// A safetensors file from a raw header text and data bytes.
inline std::string safetensors_bytes(const std::string& header, const std::string& data = "") {
  const uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + data;
}

// A .npy (format 1.0) from a raw header dict text and data bytes.
inline std::string npy_bytes(const std::string& dict, const std::string& data = "", int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::string h = dict + "\n";
  if (major == 1) {
    out += static_cast<char>(h.size() & 0xFF);
    out += static_cast<char>((h.size() >> 8) & 0xFF);
  } else {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xFF);
  }
  return out + h + data;
}

inline std::string valid_train_json(int steps = 2) {
  return "{\"steps\": " + std::to_string(steps) +
         R"(, "batch": 2, "lr": 0.001, "warmup": 1, "min_lr": 0.0001, "eval_interval": 2, "eval_batches": 1})";
}
inline const char* kModelJson = R"({"vocab_size": 8, "n_ctx": 16, "d_model": 128, "n_layer": 1, "n_head": 2, "d_ff": 512})";

inline ModelConfig tiny_config(int vocab) { return {.vocab_size = vocab, .n_ctx = 16, .d_model = 128, .n_layer = 1, .n_head = 2, .d_ff = 512}; }

// A small made-up vocabulary: enough for `generate`, which does not need the corpus.
inline Tokenizer toy_tokenizer() { return Tokenizer({"<unk>", "<sep>", "the", "dog", "walks", "walked"}); }

inline CheckpointMeta meta_of(const Tokenizer& tok) { return {tok.to_json(), mqexp::hash_hex(tok.hash()), "{}"}; }

// Writes a random fp32 checkpoint after `edit` changed its tensors or metadata; returns the path.
inline std::string fp32_checkpoint(const std::string& path, const Tokenizer& tok,
                            const std::function<void(TensorFile&)>& edit = {}) {
  const Model m(tiny_config(tok.size()), 42);
  TensorFile f = model_to_tensor_file(m, meta_of(tok));
  if (edit) edit(f);
  write_safetensors(path, f);
  return path;
}

// Writes every Linear of a random model quantized in `s`, then lets `edit` change the file.
inline std::string quantized_checkpoint(const std::string& path, const Tokenizer& tok, const mq::Scheme& s,
                                 const std::function<void(TensorFile&)>& edit = {}) {
  Model m(tiny_config(tok.size()), 42);
  QuantPlan plan = QuantPlan::uniform(s.name());
  plan.embedding = mq::Scheme::fp32();  // only the Linears change: the tests edit their tensors
  quantize_model(m, plan);
  save_quantized_model(path, m, plan, meta_of(tok));
  if (edit) {
    TensorFile f = read_safetensors(path);
    edit(f);
    write_safetensors(path, f);
  }
  return path;
}

inline NamedTensor& tensor(TensorFile& f, const std::string& name) {
  for (auto& t : f.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  throw 0;
}

// One line, ending in a newline, and nothing else: the CLI's error format.
inline void check_one_line(const CliResult& r) {
  INFO(r.out);
  CHECK(!r.out.empty());
  CHECK(r.out.find('\n') == r.out.size() - 1);
  CHECK(r.out.size() < 600);
  CHECK(r.out.find("json.exception") == std::string::npos);
}

inline void check_error(const CliResult& r, int code, std::initializer_list<std::string> needles) {
  INFO(r.out);
  CHECK(r.code == code);
  for (const std::string& n : needles) CHECK_MESSAGE(r.out.find(n) != std::string::npos, "missing: " << n);
  check_one_line(r);
}

inline long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}


}  // namespace hostile
