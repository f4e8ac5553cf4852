// MiniGPT -> GGUF (llama.cpp gpt2 architecture, WordPiece vocabulary of whole words).
#include "minigpt/gguf_export.h"

#include <map>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/gguf/convert.h"
#include "miniquant/gguf/io.h"
#include "minigpt/ops.h"
#include "minigpt/embedding.h"
#include "minigpt/quantize_model.h"

namespace minigpt {

namespace {
using mq::gguf::TensorType;
using mq::gguf::Value;

constexpr const char* kWordStart = "\xe2\x96\x81";  // U+2581, llama.cpp's WordPiece word-start mark

// llama_token_type values (llama.h).
constexpr int32_t kTokenNormal = 1, kTokenUnknown = 2, kTokenControl = 3;

const std::map<std::string, std::string>& suffix_map() {
  static const std::map<std::string, std::string> m = {
      {"ln_1", "attn_norm"},       {"attn.c_attn", "attn_qkv"}, {"attn.c_proj", "attn_output"},
      {"ln_2", "ffn_norm"},        {"mlp.c_fc", "ffn_up"},      {"mlp.c_proj", "ffn_down"}};
  return m;
}
}  // namespace

std::string gguf_tensor_name(const std::string& n) {
  if (n == "wte") return "token_embd.weight";
  if (n == "wpe") return "position_embd.weight";
  if (n == "ln_f.weight") return "output_norm.weight";
  if (n == "ln_f.bias") return "output_norm.bias";
  // h.<i>.<module>.<weight|bias>
  if (n.rfind("h.", 0) == 0) {
    const size_t dot = n.find('.', 2), last = n.rfind('.');
    if (dot != std::string::npos && last > dot) {
      const std::string layer = n.substr(2, dot - 2), module = n.substr(dot + 1, last - dot - 1), kind = n.substr(last + 1);
      auto it = suffix_map().find(module);
      if (it != suffix_map().end() && (kind == "weight" || kind == "bias"))
        return fmt::format("blk.{}.{}.{}", layer, it->second, kind);
    }
  }
  throw mq::UsageError(fmt::format("gguf export: no GGUF name for MiniGPT parameter \"{}\"", n));
}

std::vector<std::string> gguf_vocab(const Tokenizer& tok) {
  std::vector<std::string> out;
  out.reserve(tok.vocab().size());
  for (int32_t i = 0; i < tok.size(); ++i)
    out.push_back(i == Tokenizer::kUnkId || i == Tokenizer::kSepId ? tok.token(i) : kWordStart + tok.token(i));
  return out;
}

mq::gguf::File to_gguf(const Model& m, const Tokenizer& tok, const GgufExportOptions& o) {
  const ModelConfig& c = m.config();
  if (tok.size() != c.vocab_size)
    throw mq::UsageError(fmt::format("gguf export: tokenizer has {} tokens, the model {}", tok.size(), c.vocab_size));
  if (o.embedding != TensorType::F32 && o.embedding != TensorType::F16 && o.embedding != TensorType::BF16)
    throw mq::UsageError("gguf export: the embedding is stored as F32, F16 or BF16");
  // The stored weights of the quantized Linears, by parameter name.
  std::map<std::string, mq::QTensor> q;
  for (auto& [name, t] : stored_weights(m)) {
    mq::gguf::type_for(t.scheme);  // an unexportable scheme fails before any work
    q[name + ".weight"] = std::move(t);
  }

  mq::gguf::File f;
  f.set(mq::gguf::kAlignmentKey, Value::u32(mq::gguf::kDefaultAlignment));
  f.set("general.architecture", Value::string("gpt2"));
  f.set("general.name", Value::string(o.name));
  f.set("gpt2.context_length", Value::u32(static_cast<uint32_t>(c.n_ctx)));
  f.set("gpt2.embedding_length", Value::u32(static_cast<uint32_t>(c.d_model)));
  f.set("gpt2.block_count", Value::u32(static_cast<uint32_t>(c.n_layer)));
  f.set("gpt2.feed_forward_length", Value::u32(static_cast<uint32_t>(c.d_ff)));
  f.set("gpt2.attention.head_count", Value::u32(static_cast<uint32_t>(c.n_head)));
  f.set("gpt2.attention.layer_norm_epsilon", Value::f32(static_cast<float>(ops::kLayerNormEps)));
  f.set("gpt2.vocab_size", Value::u32(static_cast<uint32_t>(c.vocab_size)));
  if (!o.scheme_label.empty()) f.set("miniquant.scheme", Value::string(o.scheme_label));

  std::vector<int32_t> types(static_cast<size_t>(tok.size()), kTokenNormal);
  types[Tokenizer::kUnkId] = kTokenUnknown;
  types[Tokenizer::kSepId] = kTokenControl;
  f.set("tokenizer.ggml.model", Value::string("bert"));
  f.set("tokenizer.ggml.tokens", Value::strings(gguf_vocab(tok)));
  f.set("tokenizer.ggml.token_type", Value::i32s(types));
  f.set("tokenizer.ggml.unknown_token_id", Value::u32(Tokenizer::kUnkId));
  // <sep> ends every story, so it is also where a story begins and where generation ends.
  f.set("tokenizer.ggml.seperator_token_id", Value::u32(Tokenizer::kSepId));  // sic: llama.cpp's key
  f.set("tokenizer.ggml.bos_token_id", Value::u32(Tokenizer::kSepId));
  f.set("tokenizer.ggml.eos_token_id", Value::u32(Tokenizer::kSepId));
  f.set("tokenizer.ggml.padding_token_id", Value::u32(Tokenizer::kUnkId));
  f.set("tokenizer.ggml.add_bos_token", Value::boolean(false));
  f.set("tokenizer.ggml.add_eos_token", Value::boolean(false));
  f.set("tokenizer.ggml.add_sep_token", Value::boolean(false));
  f.set("tokenizer.ggml.normalizer.lowercase", Value::boolean(true));

  // Tensors in MiniGPT's layout order (wte, wpe, blocks, ln_f): the file reads like the checkpoint.
  for (const ParamTensor& p : m.layout().tensors()) {
    const float* data = m.params() + p.offset;  // (rows, cols) fp32 master
    std::string name = gguf_tensor_name(p.name);
    if (p.shape.size() == 1) {
      f.tensors.push_back(mq::gguf::from_floats(data, 1, p.shape[0], TensorType::F32, std::move(name), true));
      continue;
    }
    const int64_t rows = p.shape[0], cols = p.shape[1];
    if (p.name == "wte") {
      std::vector<float> table;
      if (!m.has_master("wte")) {  // a quantized checkpoint holds only the stored (fp16) table
        const auto* he = dynamic_cast<const HalfEmbedding*>(&m.embedding());
        if (!he) throw mq::Error("gguf export: the model has neither an fp32 nor an fp16 embedding table");
        table = mq::dequantize(he->table().weight());
        data = table.data();
      }
      f.tensors.push_back(mq::gguf::from_floats(data, rows, cols, o.embedding, std::move(name)));
    } else if (auto it = q.find(p.name); it != q.end()) {
      const mq::QTensor& t = it->second;
      if (t.rows != rows || t.cols != cols)
        throw mq::UsageError(fmt::format("gguf export: {} is ({}, {}) in the model but ({}, {}) quantized", p.name, rows, cols,
                                         t.rows, t.cols));
      f.tensors.push_back(mq::gguf::from_qtensor(t, std::move(name)));
    } else {
      f.tensors.push_back(mq::gguf::from_floats(data, rows, cols, TensorType::F32, std::move(name)));
    }
  }
  // Last, over the final tensor data: a loader of ours verifies each tensor; llama.cpp ignores the keys.
  mq::gguf::add_tensor_checksums(f);
  return f;
}

}  // namespace minigpt
