// Where every MiniGPT parameter lives in one flat buffer, its GPT-2 name, and its initialisation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "minigpt/config.h"

namespace minigpt {

// Decides the optimiser treatment: AdamW decays Linear weights only.
enum class ParamKind { Embedding, LayerNorm, LinearWeight, LinearBias };

struct ParamTensor {
  std::string name;        // GPT-2 layout name, e.g. "h.0.attn.c_attn.weight"
  std::vector<int> shape;  // (out, in) for Linear weights, (n) for vectors
  size_t offset = 0;       // first element in the flat buffer
  size_t size = 0;         // product of shape
  ParamKind kind = ParamKind::Embedding;
};

// One flat buffer holds all parameters so the optimiser, clipping and checkpoint loop over
// one array; the offsets below give each op its slice without a name lookup.
class ParamLayout {
 public:
  struct Layer {
    size_t ln1_w, ln1_b;      // (d), (d)
    size_t attn_w, attn_b;    // (3d, d), (3d): fused q|k|v rows
    size_t aproj_w, aproj_b;  // (d, d), (d)
    size_t ln2_w, ln2_b;      // (d), (d)
    size_t fc_w, fc_b;        // (d_ff, d), (d_ff)
    size_t mproj_w, mproj_b;  // (d, d_ff), (d)
  };

  explicit ParamLayout(const ModelConfig& c);
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  size_t total() const { return total_; }
  const ParamTensor* find(const std::string& name) const;  // nullptr if absent
  const ParamTensor& at(const std::string& name) const;    // throws mq::UsageError

  size_t wte = 0;  // (vocab, d), also the tied LM head
  size_t wpe = 0;  // (n_ctx, d)
  std::vector<Layer> layers;
  size_t lnf_w = 0, lnf_b = 0;  // (d), (d)

 private:
  size_t add(std::string name, std::vector<int> shape, ParamKind kind);
  std::vector<ParamTensor> tensors_;
  size_t total_ = 0;
};

// GPT-2 initialisation: N(0, 0.02) for embeddings and Linear weights, residual projections
// (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 n_layer), zero biases, unit LayerNorm gains.
// Normals come from Box-Muller on std::mt19937_64 so every standard library gives the same bits.
template <class S>
void init_params(const ParamLayout& layout, int n_layer, uint64_t seed, S* out);

// Standard normal from two 53-bit uniforms (Box-Muller); both outputs are used in turn.
class NormalSampler {
 public:
  explicit NormalSampler(uint64_t seed) : rng_(seed) {}
  double next();

 private:
  std::mt19937_64 rng_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace minigpt
