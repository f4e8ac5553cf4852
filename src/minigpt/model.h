// MiniGPT: a GPT-2-style decoder for inference (prefill / decode with a KV cache), whose Linear
// layers run behind the Projection interface so quantized layers can be swapped in.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minigpt/aligned.h"
#include "minigpt/config.h"
#include "minigpt/embedding.h"
#include "minigpt/params.h"
#include "minigpt/projection.h"

namespace minigpt {

// The four Linears of a block, in model order: fused Q/K/V, attention output, MLP up, MLP down.
enum class LinearKind : uint8_t { qkv, attn_out, mlp_up, mlp_down };
inline constexpr int kLinearKinds = 4;
const char* linear_kind_name(LinearKind k);  // "qkv", "attn_out", "mlp_up", "mlp_down"
// The kind named `name`, or nullopt.
std::optional<LinearKind> parse_linear_kind(const std::string& name);

// One of the 4 * n_layer Linears (the tied LM head is not one of them).
struct LinearInfo {
  std::string name;       // "h.{i}.attn.c_attn", "h.{i}.attn.c_proj", "h.{i}.mlp.c_fc", "h.{i}.mlp.c_proj"
  int layer = 0;
  LinearKind kind = LinearKind::qkv;
  int in = 0, out = 0;
  // (out, in) fp32 master weight in the model's buffer; null when the model was loaded from a quantized
  // checkpoint, which stores only the quantized weight (see Model::drop_master).
  const float* weight = nullptr;
  const float* bias = nullptr;    // (out), stays fp32 whatever the projection
};

// Called with the input activations x (n, in) of every Linear during an inference forward;
// calibration accumulates Hessians from it.
using LinearHook = std::function<void(const std::string& name, const float* x, int n, int in)>;

// Which positions a forward pass produces logits for.
//   all:  every position (training-style evaluation, perplexity).
//   last: the last position only, as llama.cpp computes a prompt whose last token alone asks for
//         output: every layer's attention (with its output projection) still runs on all positions,
//         whose keys and values fill the cache, but the last layer's MLP (with its LayerNorm and
//         residual), the final LayerNorm and the LM head run on the last position only.
enum class Outputs : uint8_t { all, last };

// The inference phase a forward pass belongs to: a PhaseProjection (phase_projection.h) runs its prefill
// recipe or its decode recipe by it. Model::decode and decode_batch run in `decode`; everything else
// (prefill, logits, score, evaluation) in `prefill`, the resting state.
enum class Phase : uint8_t { prefill, decode };
const char* phase_name(Phase p);  // "prefill", "decode"

// Keys and values of every position seen so far, per layer.
struct KVCache {
  int length = 0;                     // positions filled
  std::vector<AlignedVector<float>> k;  // n_layer x (>= length, d): grown by forward() up to (n_ctx, d)
  std::vector<AlignedVector<float>> v;  // n_layer x (>= length, d)
};

class Model {
 public:
  // GPT-2 initialisation from `seed` (see init_params).
  explicit Model(const ModelConfig& c, uint64_t seed = 42);
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return c_; }
  const ParamLayout& layout() const { return layout_; }
  // All parameters, flat in layout() order; the fp32 master copy training updates.
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  size_t num_params() const { return params_.size(); }
  float* param(const std::string& name);  // throws mq::UsageError for an unknown name
  const float* param(const std::string& name) const;

  // The tied embedding / LM head as inference uses it; separate from the Linears on purpose.
  // Training always reads the fp32 master wte in params().
  const Embedding& embedding() const { return *embedding_; }
  // Swap its storage (e.g. fp16); vocab and d must match. Throws mq::UsageError otherwise.
  void set_embedding(std::unique_ptr<Embedding> e);

  std::vector<LinearInfo> linears() const;
  // Swap one Linear's projection; its in/out must match. Throws mq::UsageError otherwise.
  void set_projection(const std::string& name, std::unique_ptr<Projection> p);
  const Projection& projection(const std::string& name) const;
  // Marks a Linear's (or, for "wte", the embedding's) fp32 master weight as not held: a model loaded
  // from a quantized checkpoint runs the stored codes and has no fp32 weight to quantize again, so
  // linears() reports weight = null for it instead of the buffer's placeholder zeros.
  void drop_master(const std::string& name);
  bool has_master(const std::string& name) const;
  void set_linear_hook(LinearHook hook) { hook_ = std::move(hook); }

  // Moves every buffer the model reads while it runs (parameters, each projection's stored weight, the
  // embedding table, the KV cache) to newly allocated memory, copying the values exactly: the outputs do not
  // change, where the pages land does. Two copies of one model can run a steady ~1-3% apart for the whole of a
  // process (which pages and cache sets their weights got); a study that relocates every configuration each
  // round turns that fixed per-instance bias into round-to-round noise its paired intervals account for.
  void relocate();

  // The phase the next forward pass runs in, and a guard that sets it until the guard is destroyed (then
  // the previous phase again, so the resting state stays `prefill`). const: running a phase changes which
  // recipe runs, not the model. The state lives on the heap, so projections that hold phase_state() see
  // it after the model is moved.
  Phase phase() const { return *phase_; }
  class PhaseGuard {
   public:
    PhaseGuard(const std::shared_ptr<Phase>& state, Phase p) : state_(state), before_(*state) { *state_ = p; }
    ~PhaseGuard() { *state_ = before_; }
    PhaseGuard(const PhaseGuard&) = delete;
    PhaseGuard& operator=(const PhaseGuard&) = delete;

   private:
    std::shared_ptr<Phase> state_;
    Phase before_;
  };
  [[nodiscard]] PhaseGuard use_phase(Phase p) const { return PhaseGuard(phase_, p); }
  std::shared_ptr<const Phase> phase_state() const { return phase_; }

  // Logits (n, vocab) of every position of `tokens` (Outputs::last: (1, vocab) of the last one);
  // resets the model's cache and fills it with every position either way.
  std::vector<float> prefill(const std::vector<int32_t>& tokens, Outputs outputs = Outputs::all);
  // Logits (vocab) of the position after the cached ones, feeding `token`; extends the cache.
  std::vector<float> decode(int32_t token);
  void reset_cache();
  int cache_length() const { return cache_.length; }

  // Whole-sequence pass with its own cache: logits (n, vocab). Leaves the model's cache alone.
  std::vector<float> logits(const std::vector<int32_t>& tokens) const;
  // Sum of log p(tokens[t] | tokens[0..t)) over t in [a, b); needs 1 <= a <= b <= size, b-1 <= n_ctx.
  double score(const std::vector<int32_t>& tokens, int a, int b) const;

  KVCache make_cache() const;
  // Feeds n tokens after the cache's positions; writes logits (n, vocab) if `logits` not null
  // (Outputs::last: (1, vocab), the last position's; see Outputs for the work that skips).
  // A logit that is not finite is an error, not a result: mq::Error naming its position and the first
  // place of the pass (layer, step and position) that produced a non-finite value, found by running the
  // pass again with every step checked (only then: the normal pass checks the logits alone).
  void forward(KVCache& cache, const int32_t* tokens, int n, float* logits, Outputs outputs = Outputs::all) const;
  // What forward() says about row `row` of its logits being non-finite, for callers that run the
  // model's layers by other paths (batched decode): re-runs one token after `cache` (not changed) with
  // every step checked and throws mq::Error naming where the first non-finite value arose.
  [[noreturn]] void throw_non_finite(const KVCache& cache, const int32_t* tokens, int n, int row, Outputs outputs) const;

 private:
  // Called after each step of a traced pass with its output (layer -1: before the blocks or after them).
  using StageHook = std::function<void(int layer, const char* stage, const float* values, int rows, int width)>;  // (rows, width)
  void forward_impl(KVCache& cache, const int32_t* tokens, int n, float* logits, Outputs outputs, const StageHook* trace) const;
  int linear_index(const std::string& name) const;  // -1 if unknown
  ModelConfig c_;
  ParamLayout layout_;
  AlignedVector<float> params_;                       // (layout_.total())
  std::vector<std::unique_ptr<Projection>> proj_;    // 4 * n_layer, LinearInfo order
  std::unique_ptr<Embedding> embedding_;             // views wte by default
  std::vector<std::string> linear_names_;            // 4 * n_layer
  std::vector<std::string> dropped_;                 // names whose fp32 master weight is not held
  LinearHook hook_;
  KVCache cache_;
  std::shared_ptr<Phase> phase_ = std::make_shared<Phase>(Phase::prefill);
};

}  // namespace minigpt
