// A quantization plan: how every Linear of a MiniGPT is stored and run (scheme, GPTQ or
// round-to-nearest, activation mode), per layer and per tensor kind, plus the embedding's format and
// the GPTQ settings. One plan is what the sweep, `miniquant quantize` / `eval`, the benchmarks and the
// tests hand to quantize_model(); a quantized checkpoint records it whole.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "miniquant/gptq.h"
#include "miniquant/kernels/kernels.h"
#include "minigpt/model.h"
#include "minigpt/quantizer_table.h"

namespace minigpt {

// How one Linear is quantized and run. Named as the CLI and the sweep take it: a scheme of the format
// table, then "-search" for the scale search with the plain error weights or "-imatrix" for the search weighted by
// each input column's importance (the diagonal of the calibration Hessian; mq::Search, grid_search.h, and
// kquant_search.h), or, for the K families only, "-fisher" for the search weighted per weight by the diagonal of
// the loss's empirical Fisher on the calibration windows (fisher.h; no GPTQ, no phase copy), after an optional
// equivalence transform right behind the scheme ("-awq", "-smooth": transform_table.h), then "-gptq" for GPTQ (integer and K schemes), then "+a8" to run it with per-token int8
// activations or "+a16" with per-token 16-bit activations (int8 / int4 schemes), or "+bf16" with every
// activation rounded to bf16 (any stored scheme, not fp32; mq::ActMode), e.g. "int4-g64-gptq+a8",
// "int2-g64-search-gptq", "q4_k-imatrix-gptq". The K families (q2_k .. q6_k) always search: their plain name
// is the search with the plain error weights ("-search" is refused as redundant). "fp32" leaves the Linear as it is.
// The recipe name's suffix for an activation mode: "+a8", "+a16", "+bf16", or "" (weight_only).
std::string_view act_suffix(mq::ActMode act);

struct LinearRecipe {
  mq::Scheme scheme = mq::Scheme::fp32();
  bool gptq = false;
  mq::ActMode act = mq::ActMode::weight_only;
  mq::Search search = mq::Search::none;  // K families: plain, importance or fisher (they always search)
  // An equivalence transform run before quantizing, by its suffix in transform_table.h ("awq", "smooth"), or "".
  std::string transform;

  // Throws mq::UsageError naming the name when it is unknown or a search, GPTQ, +a8, +a16 or +bf16 cannot apply.
  static LinearRecipe parse(const std::string& name);
  std::string name() const;
  bool keeps_fp32() const { return scheme.kind == mq::Kind::fp32 && !gptq; }
  // GPTQ, or a search weighted by importance: both need the layer's calibration Hessian.
  // -fisher reads the Hessian only for the report's output errors; its weights come from the Fisher pass.
  bool uses_hessian() const { return gptq || quantizer().needs_hessian || quantizer().needs_fisher; }
  // The row of quantizer_table.h that chooses the codes (GPTQ, where set, runs its search inside).
  const QuantizerMethod& quantizer() const { return quantizer_for(search); }
  // uses_hessian(), or a transform (which reads activation statistics).
  bool needs_calibration() const { return uses_hessian() || !transform.empty(); }
  friend bool operator==(const LinearRecipe&, const LinearRecipe&) = default;
};

// The Linears a rule applies to: some layers (empty: every layer) and/or one tensor kind.
struct PlanRule {
  std::vector<int> layers;
  std::optional<LinearKind> kind;
  LinearRecipe recipe;
  bool matches(int layer, LinearKind k) const;
};

// Precision per inference phase (phase_projection.h): what one phase runs instead of the Linear's own recipe.
// Either only another activation mode over the same stored codes (`act`: "+a8", "+a16", "+bf16" or
// "weight-only"; no extra bytes), or a whole recipe of its own for every Linear (`recipe`: a second stored
// copy, round-to-nearest). Neither: the Linear's own recipe.
struct PhaseRecipe {
  std::optional<mq::ActMode> act;
  std::optional<LinearRecipe> recipe;
  // mq::UsageError for a name that is neither a mode nor a recipe, or a GPTQ recipe.
  static PhaseRecipe parse(const std::string& name);
  std::string name() const;  // as parsed; "" for no override
  bool overrides() const { return act || recipe; }
  friend bool operator==(const PhaseRecipe&, const PhaseRecipe&) = default;
};
struct PhasePlan {
  PhaseRecipe prefill, decode;
  // Both phases run the Linear's stored codes (at most their activation modes differ): stored once.
  bool shares_codes() const { return !prefill.recipe && !decode.recipe; }
  friend bool operator==(const PhasePlan&, const PhasePlan&) = default;
};

struct GptqSettings {
  mq::GptqOptions options;  // damping, lazy block, act-order
  // Quantize Linears in model order, each one's Hessian collected with the earlier ones already
  // quantized (false: one calibration pass on the fp32 model for all of them).
  bool sequential = true;
  int calibration_windows = 128;  // n_ctx-token windows from the val split
};

struct QuantPlan {
  std::string id;          // what results call it: the uniform scheme's name, or a quant map's config_id
  LinearRecipe base;       // every Linear no rule matches
  // Layer-group rules first, then tensor-kind rules; for each Linear the last matching rule wins, so a
  // tensor-kind override beats a layer group.
  std::vector<PlanRule> rules;
  mq::Scheme embedding = mq::Scheme::fp32();  // the tied embedding / LM head: fp32 or fp16
  GptqSettings gptq;
  std::optional<PhasePlan> phases;  // precision per inference phase; none: every phase runs recipe_for()

  // Every Linear in `name`'s recipe. "fp32" is the unmodified model (fp32 embedding); every other plan
  // stores the embedding in fp16, as the sweep has always measured quantized models. "-act-order" right
  // after "-gptq" (before any "+a8") turns on GPTQ's act-order, a plan-level setting, e.g.
  // "int3-g64-gptq-act-order": the name is the plan's id, so it round-trips through results and
  // checkpoints. A llama.cpp K mix ("q3_k_s", "q4_k_m", "q5_k_m", kquant_mixes.h), with the same suffixes
  // (e.g. "q4_k_m-imatrix-gptq"), is its per-tensor rules for a model of `n_layer` layers (MiniGPT's 4 unless
  // given). mq::UsageError for an unknown name, or "-act-order" anywhere else or without GPTQ.
  // A phase split follows the name in brackets, e.g. "int4-g64[prefill=+a8,decode=+bf16]" (same codes, an
  // activation mode per phase) or "int4-g64[prefill=int8-per-channel+a8]" (a second stored copy for prefill).
  static QuantPlan uniform(const std::string& name, int n_layer = 4);

  LinearRecipe recipe_for(int layer, LinearKind kind) const;
  // What the Linear runs in `phase`: recipe_for() with the phase's override applied. mq::UsageError when the
  // override's activation mode cannot run the Linear's scheme (e.g. "+a8" on int3).
  LinearRecipe recipe_for(int layer, LinearKind kind, Phase phase) const;
  // Every recipe the plan can hand a Linear: the default, then each rule's (repeats kept).
  std::vector<LinearRecipe> recipes() const;
  bool any_gptq() const;
  bool needs_calibration() const;  // some recipe needs calibration Hessians (LinearRecipe::needs_calibration)
  bool is_identity() const;  // nothing changes: fp32 Linears and embedding
  // mq::UsageError naming the rule when a layer is out of range or a scheme cannot store a Linear's shape.
  void validate(const ModelConfig& c) const;

  // {"config_id", "default", "layer_groups": [{"layers", "quant"}], "tensors": [{"match", "quant"}],
  //  "embedding", "gptq": {...}}: the quant-map format, with the embedding and GPTQ settings.
  nlohmann::json to_json() const;
  // mq::UsageError (prefixed with `where`) for unknown keys, kinds, schemes or malformed entries, and
  // for a config_id that could not name a file (util/path_name.h: it names result files and folders).
  static QuantPlan from_json(const nlohmann::json& j, const std::string& where = "plan");
};

// A quant map is a few hundred bytes; a megabyte is a wrong file, not a map.
inline constexpr size_t kMaxQuantMapBytes = size_t{1} << 20;

// A quant-map file read with the checked JSON parser (depth limit, duplicate keys) and a size cap;
// errors are prefixed with `where` (a flag and the path, e.g. "--quant-map FILE"). Invalid JSON is
// mq::Error (exit 1, a corrupt file), a valid map that says something wrong mq::UsageError (exit 2).
QuantPlan read_quant_map(const std::string& path, const std::string& where);

}  // namespace minigpt
