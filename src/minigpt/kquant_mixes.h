// llama.cpp's K-quant mixes (its ftypes Q3_K_S, Q4_K_M, Q5_K_M) as per-tensor rules on MiniGPT's Linears,
// read from llama_tensor_get_type (llama.cpp src/llama-quant.cpp) for a model shaped like ours: the `gpt2`
// architecture (one fused attn_qkv per layer, which llama.cpp counts among the attention-V tensors, so the
// attention-V rules apply to it and its own ATTENTION_QKV branch is never reached), no grouped-query
// attention, no experts, one ffn_down per layer:
//
//   mix      default  attn_qkv (qkv)                 ffn_down (mlp_down)             attn_output, ffn_up
//   q3_k_s   q3_k     q3_k                           q3_k                            q3_k
//   q4_k_m   q4_k     q6_k where use_more_bits, else q4_k   the same                 q4_k
//   q5_k_m   q5_k     q6_k where use_more_bits, else q5_k   the same                 q5_k
//
// use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 over the layer index i of n layers: for
// MiniGPT's 4 layers, layers 2 and 3. llama.cpp also stores the tied token embedding / output in q6_k; our
// plans keep the embedding in fp16 (QuantPlan::embedding), so that tensor differs from llama.cpp's mix.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minigpt/model.h"

namespace minigpt {

struct MixRule {
  std::vector<int> layers;
  LinearKind kind = LinearKind::qkv;
  std::string recipe;
};
struct KMixPlan {
  std::string base;            // the default recipe, e.g. "q4_k-imatrix-gptq"
  std::vector<MixRule> rules;  // tensor rules (recipes carry the same suffixes)
};

// The names of the mixes ("q3_k_s", "q4_k_m", "q5_k_m").
const std::vector<std::string_view>& kquant_mix_names();
// `name` = a mix name followed by recipe suffixes ("q4_k_m", "q4_k_m-imatrix-gptq"): its rules for a model of
// n_layer layers, every recipe with the same suffixes; nullopt when `name` does not start with a mix name.
std::optional<KMixPlan> kquant_mix(const std::string& name, int n_layer);

// llama.cpp's use_more_bits(i_layer, n_layers).
bool use_more_bits(int layer, int n_layer);

}  // namespace minigpt
