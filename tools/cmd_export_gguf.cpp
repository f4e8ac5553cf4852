// `miniquant export-gguf`: quantize a MiniGPT checkpoint's Linears (RTN or GPTQ) and write the model
// as a GGUF file llama.cpp runs (architecture gpt2; see src/minigpt/gguf_export.h).
#include <filesystem>
#include <string>

#include <unistd.h>

#include <fmt/core.h>

#include "commands.h"
#include "vocabulary.h"
#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"
#include "minigpt/calibrate.h"
#include "minigpt/gguf_export.h"
#include "minigpt/quantize_model.h"
#include "minigpt/quantized_checkpoint.h"
#include "minigpt/tokenizer.h"
#include "minigpt/quant_plan.h"
#include "quant_map.h"
#include "experiments/workspace.h"
#include "miniquant/util/io.h"
#include "verify_flag.h"

namespace mqcli {
namespace {

struct ExportOptions {
  std::string model = mqexp::kDefaultModel;
  std::string scheme;     // "" only for an already quantized checkpoint or with a quant map
  std::string quant_map;  // per-Linear schemes (quant_plan.h's JSON) instead of one --scheme
  std::string out;
  std::string embedding;  // "" = fp32 for an fp32 export, fp16 otherwise
  std::string lexicon = mqexp::kDefaultLexicon;
  uint64_t seed = kDefaultSeed;
  int calib = 128;
};

// An output we could not write must fail now, not after minutes of GPTQ; one that is an input
// (the checkpoint, the map) must never be written at all.
void check_output_path(const std::string& out, const ExportOptions& o) {
  namespace fs = std::filesystem;
  if (out.empty()) throw mq::UsageError("--out is empty: give the GGUF file to write");
  mq::check_not_an_input({"--out", out}, {{"--model", o.model}, {"--quant-map", o.quant_map}});
  mq::check_regular_or_absent(out);  // a device or FIFO: refused, not replaced by a regular file
  mq::check_utf8_path({"--out", out});
  const fs::path p(out);
  if (p.filename().empty()) throw mq::UsageError(fmt::format("--out {}: names a directory, not a file", out));
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw mq::UsageError(fmt::format("--out {}: is a directory", out));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) throw mq::Error(fmt::format("--out {}: directory {} does not exist", out, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0) throw mq::Error(fmt::format("--out {}: directory {} is not writable", out, dir.string()));
}

mq::gguf::TensorType embedding_type(const std::string& name) {
  if (name == "fp32") return mq::gguf::TensorType::F32;
  if (name == "fp16") return mq::gguf::TensorType::F16;
  if (name == "bf16") return mq::gguf::TensorType::BF16;
  throw mq::UsageError(fmt::format("--embedding {}: use fp32, fp16 or bf16", name));
}

void run(const ExportOptions& o) {
  // The sweep's plan for the scheme (what `miniquant quantize` would store), or a quant map.
  minigpt::QuantPlan plan;
  const bool requested = !o.scheme.empty() || !o.quant_map.empty();
  if (requested) {
    plan = plan_from_options(o.scheme, o.quant_map, "export-gguf");
    require_weight_only(plan, "export-gguf");
    // A scheme without a GGUF type fails before loading anything, not after minutes of GPTQ.
    for (const auto& r : plan.recipes()) mq::gguf::type_for(r.scheme);
  }
  const mq::gguf::TensorType emb_given = o.embedding.empty() ? mq::gguf::TensorType::F32 : embedding_type(o.embedding);
  check_output_path(o.out, o);

  minigpt::CheckpointMeta meta;
  minigpt::QuantPlan stored_plan;
  minigpt::Model model = minigpt::load_any_model(o.model, "", &meta, &stored_plan);
  if (meta.vocab_json.empty()) throw mq::Error(fmt::format("checkpoint '{}' carries no vocabulary", o.model));
  const minigpt::Tokenizer tok = minigpt::Tokenizer::from_json(meta.vocab_json);
  mqexp::check_vocab_hash(tok, meta, o.model);
  const bool stored = !stored_plan.is_identity();
  if (stored && requested)
    throw mq::UsageError(fmt::format("export-gguf: {} is already quantized; drop --scheme / --quant-map to export its stored weights, or "
                                     "give its fp32 checkpoint",
                                     o.model));
  if (!stored && !requested)
    throw mq::UsageError(fmt::format("export-gguf: {} is an fp32 checkpoint; --scheme or --quant-map is required", o.model));

  if (!stored) {
    std::vector<std::vector<int32_t>> calib;
    if (plan.needs_calibration()) {
      const mqexp::CorpusBundle c = mqexp::load_corpus(o.lexicon, o.seed);
      if (c.tok.hash() != tok.hash())
        throw mq::Error(fmt::format("export-gguf: {} was trained on another vocabulary than the corpus of seed {}", o.model, o.seed));
      const int windows = o.quant_map.empty() ? o.calib : plan.gptq.calibration_windows;
      calib = minigpt::calibration_windows(minigpt::encode_split(tok, c.corpus.val), windows, model.config().n_ctx);
    }
    if (o.quant_map.empty()) plan.gptq.calibration_windows = o.calib;
    plan.validate(model.config());
    minigpt::quantize_model(model, plan, calib);
  }
  const minigpt::QuantPlan& used = stored ? stored_plan : plan;
  minigpt::GgufExportOptions eo;
  eo.embedding = !o.embedding.empty()                          ? emb_given
                 : used.embedding.kind == mq::Kind::fp16 ? mq::gguf::TensorType::F16
                                                         : mq::gguf::TensorType::F32;
  eo.scheme_label = stored ? "stored: " + used.to_json().dump() : !o.quant_map.empty() ? "quant map: " + used.to_json().dump() : o.scheme;
  const mq::gguf::File f = minigpt::to_gguf(model, tok, eo);
  mq::gguf::write(o.out, f);
  int64_t bytes = 0;
  for (const auto& t : f.tensors) bytes += static_cast<int64_t>(t.data.size());
  fmt::print("{} -> {} ({}, token_embd {}): {} tensors, {} bytes of tensor data\n", o.model, o.out,
             stored ? "stored quantization" : !o.quant_map.empty() ? "quant map " + plan.id : o.scheme, mq::gguf::tensor_type_name(eo.embedding), f.tensors.size(), bytes);
}

}  // namespace

void register_export_gguf(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export-gguf", "Export a MiniGPT checkpoint, quantized, as GGUF for llama.cpp (gpt2)");
  add_model_option(cmd, o->model, "fp32 checkpoint, or a quantized one (then no --scheme)");
  cmd->add_option("--scheme", o->scheme,
                  "fp32, fp16, bf16, int8-per-channel, int8-g{32,64,128}, int4-g{32,64,128}[-asym], int4-per-channel; "
                  "-gptq appended for GPTQ; required for an fp32 checkpoint");
  cmd->add_option("--quant-map", o->quant_map, "a quant map (JSON: default, layer_groups, tensors, gptq) instead of --scheme: "
                                              "per-Linear GGUF types")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "GGUF file to write")->required();
  cmd->add_option("--embedding", o->embedding, "token embedding / tied head storage: fp32, fp16, bf16 (default: fp32 for "
                                               "--scheme fp32, else fp16 as the quantized models use)");
  add_corpus_options(cmd, o->lexicon, o->seed, "GPTQ: corpus seed");
  cmd->add_option("--calibration", o->calib, "GPTQ: calibration windows of n_ctx tokens from the val split")
      ->check(CLI::PositiveNumber)->capture_default_str();
  add_no_verify_flag(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace mqcli
