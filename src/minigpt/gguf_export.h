// MiniGPT -> GGUF in llama.cpp's `gpt2` architecture, so llama.cpp runs the same network.
//
// Why gpt2 fits exactly: MiniGPT is GPT-2's block (pre-LN, fused q|k|v Linear with bias, GELU-tanh
// MLP with biases, learned position embeddings, final LayerNorm, LM head tied to the token
// embedding), LayerNorm eps 1e-5, attention scale 1/sqrt(head_dim). llama.cpp's gpt2 graph is
// that network; its GELU is the same tanh form (ggml evaluates it from an fp16 table: an
// input-side rounding our fp32 GELU does not have, part of the fp32 tolerance).
//
// Tensor map (GGUF ne = {input width, rows}):
//   wte (vocab, d)           -> token_embd.weight   {d, vocab}   (also the output: no output.weight,
//                                                                 llama.cpp's gpt2 loader ties it)
//   wpe (n_ctx, d)           -> position_embd.weight {d, n_ctx}  F32
//   h.i.ln_1.{weight,bias}   -> blk.i.attn_norm.{weight,bias}    F32
//   h.i.attn.c_attn (3d, d)  -> blk.i.attn_qkv.weight {d, 3d}, rows q|k|v as llama.cpp splits them
//   h.i.attn.c_proj (d, d)   -> blk.i.attn_output.weight
//   h.i.ln_2                 -> blk.i.ffn_norm
//   h.i.mlp.c_fc (f, d)      -> blk.i.ffn_up.weight {d, f}
//   h.i.mlp.c_proj (d, f)    -> blk.i.ffn_down.weight {f, d}
//   ln_f                     -> output_norm.{weight,bias}
//   every Linear bias        -> <same name>.bias F32
//
// Vocabulary: llama.cpp's WordPiece ("bert") tokenizer with every word stored whole as "\u2581word"
// and no continuation pieces. Its pre-tokenizer lower-cases and splits on white space and on each
// punctuation character, as minigpt::Tokenizer::split_text does for the corpus' characters (words
// of a-z, and , . ? ! ; :); a word then matches its whole entry or nothing (no piece without the
// word-start mark exists), and nothing is <unk> as in ours. "<sep>" is a control token, matched
// when special tokens are parsed. So text of the corpus tokenizes to the same ids in both.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "miniquant/gguf/types.h"
#include "miniquant/quantize.h"
#include "minigpt/model.h"
#include "minigpt/tokenizer.h"

namespace minigpt {

struct GgufExportOptions {
  std::string name = "minigpt";  // general.name
  // Storage of token_embd (also the tied LM head): F32, F16 or BF16. The quantized models of the
  // sweep keep it in fp16 (HalfEmbedding), so exports of quantized Linears default to F16.
  mq::gguf::TensorType embedding = mq::gguf::TensorType::F32;
  std::string scheme_label;  // free text recorded as miniquant.scheme (e.g. "int4-g64-gptq")
};

// The model as it runs: each Linear quantize_model() (or a quantized checkpoint) put on a
// QuantizedProjection is exported from its stored weights, every other Linear F32 from its fp32 master
// weight; the embedding from its fp32 master, or from the stored fp16 table when the model has no master
// (a quantized checkpoint). Throws mq::UsageError for a scheme without a GGUF type.
mq::gguf::File to_gguf(const Model& m, const Tokenizer& tok, const GgufExportOptions& o);

// The vocabulary entries llama.cpp sees (word-start mark on words and punctuation).
std::vector<std::string> gguf_vocab(const Tokenizer& tok);

// GGUF tensor name of a MiniGPT parameter ("h.0.attn.c_attn.weight" -> "blk.0.attn_qkv.weight").
std::string gguf_tensor_name(const std::string& minigpt_name);

}  // namespace minigpt
