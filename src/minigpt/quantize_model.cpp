// quantize_model(): equivalence transforms (AWQ, SmoothQuant) first, then RTN per Linear, or GPTQ with per-Linear Hessians from calibration.
#include "minigpt/quantize_model.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/gptq.h"
#include "miniquant/layers/linear.h"
#include "miniquant/util/timer.h"
#include "minigpt/calibrate.h"
#include "minigpt/fisher.h"
#include "minigpt/channel_stats.h"
#include "minigpt/scale_fold.h"
#include "minigpt/transform_table.h"
#include "minigpt/embedding.h"
#include "minigpt/phase_projection.h"
#include "minigpt/quantized_projection.h"

namespace minigpt {

namespace {

// The recipe's quantizer on one (out, in) weight w: GPTQ with the plan's options on the second moment h (running the
// quantizer row's search inside), else the row itself (quantizer_table.h). h and fisher may be null where the recipe
// does not read them. GPTQ's notes go to `notes` when given. The one place a recipe's quantizer is called: the main
// loop, a phase's own copy and a transform's candidates (recipe_quantizer) all come here.
mq::QTensor quantize_linear(const LinearRecipe& r, const mq::GptqOptions& options, const float* w, int64_t out, int64_t in,
                            const Eigen::MatrixXd* h, const float* fisher, const std::string& name, std::vector<std::string>* notes) {
  const QuantizerMethod& method = r.quantizer();
  if ((r.gptq || method.needs_hessian) && !h)
    throw mq::Error(fmt::format("{}: recipe {} needs the Linear's calibration second moment", name, r.name()));
  if (r.gptq) {
    mq::GptqOptions go = options;
    go.search = r.search;
    go.grid = method.grid;
    mq::GptqResult g = mq::gptq_quantize(w, out, in, *h, r.scheme, go, name);
    if (notes) notes->insert(notes->end(), g.notes.begin(), g.notes.end());
    return std::move(g.q);
  }
  if (method.needs_fisher && !fisher) throw mq::Error(fmt::format("{}: recipe {} needs the Fisher pass", name, r.name()));
  return method.quantize({.weight = w, .out = out, .in = in, .scheme = r.scheme, .hessian = h, .fisher = fisher, .name = name});
}

// The recipe's quantizer as a transform scores its candidates with (TransformInput::quantize): quantize_linear on the
// given second moment; a quantizer that reads the Fisher pass (-fisher), which a candidate's scaled weight has no
// gradients for, is scored on the plain search.
std::function<mq::QTensor(const float*, const Eigen::MatrixXd&)> recipe_quantizer(const LinearRecipe& r, const mq::GptqOptions& options,
                                                                                  const LinearInfo& li) {
  const std::string name = li.name + ".weight (a transform's candidate)";
  const int64_t out = li.out, in = li.in;
  LinearRecipe scored = r;
  if (scored.quantizer().needs_fisher) scored.search = mq::Search::plain;
  return [scored, options, name, out, in](const float* w, const Eigen::MatrixXd& h) -> mq::QTensor {
    return quantize_linear(scored, options, w, out, in, &h, nullptr, name, nullptr);
  };
}

// A phase split: both phases over the Linear's codes `q` (each with its own activation mode), or a phase
// with its own stored copy, quantized round-to-nearest (or its plain search) from the fp32 weight; its bytes are added to the report.
void set_phase_projection(Model& m, const QuantPlan& plan, const LinearInfo& li, mq::QTensor q, LinearQuantReport& lr) {
  const LinearRecipe own = plan.recipe_for(li.layer, li.kind);
  std::unique_ptr<Projection> per_phase[2];
  for (const Phase ph : {Phase::prefill, Phase::decode}) {
    const LinearRecipe r = plan.recipe_for(li.layer, li.kind, ph);
    mq::QTensor codes;
    if (r.scheme == own.scheme && r.gptq == own.gptq && r.search == own.search) {
      codes = q;  // the Linear's own codes
    } else {
      // A phase's copy may take the plain scale search ("-search"; K families always do), never -imatrix
      // (PhaseRecipe::parse refuses it: no calibration belongs to one phase).
      codes = quantize_linear(r, plan.gptq.options, li.weight, li.out, li.in, nullptr, nullptr,
                              li.name + ".weight." + phase_name(ph), nullptr);
      const mq::Storage extra = codes.storage();
      lr.storage.code_bytes += extra.code_bytes;
      lr.storage.scale_bytes += extra.scale_bytes;
      lr.storage.zero_bytes += extra.zero_bytes;
    }
    per_phase[ph == Phase::prefill ? 0 : 1] = std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(codes), r.act));
  }
  m.set_projection(li.name, std::make_unique<PhaseProjection>(std::move(per_phase[0]), std::move(per_phase[1]),
                                                              plan.phases->shares_codes(), m.phase_state()));
}

// The plan's equivalence transforms (transform_table.h) of the Linears of `layer` (every layer when -1), before any
// of them is quantized: statistics from one calibration pass of the model as it stands, then per layer attn_out
// first (its scale lands in c_attn's V rows, which qkv's own search must then see), qkv, mlp_up; mlp_down takes
// none (scale_fold.h). Returns a note per Linear.
std::map<std::string, std::string> apply_transforms(Model& m, const QuantPlan& plan, const std::vector<std::vector<int32_t>>& calibration,
                                                    int layer = -1) {
  std::map<std::string, std::string> notes;
  std::vector<std::string> wanted;
  for (const LinearInfo& li : m.linears())
    if ((layer < 0 || li.layer == layer) && !plan.recipe_for(li.layer, li.kind).transform.empty()) wanted.push_back(li.name);
  if (wanted.empty()) return notes;
  const std::map<std::string, ChannelStats> stats = collect_channel_stats(m, calibration, wanted);
  for (const LinearKind kind : {LinearKind::attn_out, LinearKind::qkv, LinearKind::mlp_up, LinearKind::mlp_down})
    for (const LinearInfo& li : m.linears()) {
      // The statistics hold exactly the Linears `wanted` names (a transform, in `layer`).
      const auto found = stats.find(li.name);
      if (li.kind != kind || found == stats.end()) continue;
      const LinearRecipe r = plan.recipe_for(li.layer, li.kind);
      if (!input_scale_folds(kind)) {
        notes[li.name] = fmt::format("{}: not applied: GELU sits before {} (no exact fold)", r.transform, linear_kind_name(kind));
        continue;
      }
      if (!li.weight) throw mq::UsageError(fmt::format("{} has no fp32 weight to scale (quantize the fp32 checkpoint instead)", li.name));
      const ChannelStats& st = found->second;
      TransformResult t = find_transform(r.transform)->scales(
          {li, st, r.scheme, r.act, block_error(m, li, st), recipe_quantizer(r, plan.gptq.options, li),
           !r.gptq && r.search == mq::Search::none});
      fold_input_scale(m, li, t.scales);
      if (!t.weight.empty()) {
        if (t.weight.size() != static_cast<size_t>(li.out) * li.in)
          throw mq::Error(fmt::format("{}: {} returned {} weights for a ({}, {}) Linear", li.name, r.transform, t.weight.size(), li.out, li.in));
        std::copy(t.weight.begin(), t.weight.end(), m.param(li.name + ".weight"));
      }
      notes[li.name] = std::move(t.note);
    }
  return notes;
}

}  // namespace

ModelQuantReport quantize_model(Model& m, const QuantPlan& plan, const std::vector<std::vector<int32_t>>& calibration) {
  const mq::Stopwatch all_time;
  plan.validate(m.config());
  if (plan.needs_calibration() && calibration.empty())
    throw mq::UsageError("GPTQ, -imatrix and equivalence transforms such as -awq need calibration windows (a held-out split); none were given");
  ModelQuantReport rep;
  std::map<std::string, mq::Hessian> all;  // non-sequential calibration: one pass on the (transformed) fp32 model
  const std::vector<LinearRecipe> recipes = plan.recipes();
  const bool hessians = std::any_of(recipes.begin(), recipes.end(), [](const LinearRecipe& r) { return r.uses_hessian(); });
  // Equivalence transforms see the inputs the quantizer will: with sequential calibration (GPTQ's default) a layer's
  // scales are searched on the calibration pass of the model whose earlier layers are already quantized, just before
  // its first Linear is; otherwise all of them on the fp32 model, first. Searched on fp32 inputs while GPTQ then
  // calibrated on the quantized model's, AWQ then GPTQ was above GPTQ alone at int3-g128 and int2-g64 (the sweep's
  // method comparison, 2026-11-30).
  // (The -fisher pass reads gradients of the weights as they stand, so its plans keep the transforms first.)
  const bool needs_fisher = std::any_of(recipes.begin(), recipes.end(), [](const LinearRecipe& r) { return r.quantizer().needs_fisher; });
  const bool layerwise = hessians && plan.gptq.sequential && !needs_fisher;
  std::map<std::string, std::string> transform_notes;
  if (!layerwise) {
    const mq::Stopwatch tt;
    transform_notes = apply_transforms(m, plan, calibration);
    rep.calibration_seconds += tt.seconds();
  }
  int transformed_through = -1;  // layerwise: the last layer whose transforms ran
  // -fisher: one pass of gradients on the fp32 master weights, before any Linear is quantized.
  std::map<std::string, std::vector<float>> fisher;
  if (needs_fisher) {
    const mq::Stopwatch t;
    fisher = collect_fisher(m, calibration);
    rep.calibration_seconds += t.seconds();
  }
  if (hessians && !plan.gptq.sequential) {
    const mq::Stopwatch t;
    all = collect_hessians(m, calibration);
    rep.calibration_seconds += t.seconds();
  }
  for (const LinearInfo& li : m.linears()) {
    if (layerwise && li.layer > transformed_through) {
      const mq::Stopwatch tt;
      transform_notes.merge(apply_transforms(m, plan, calibration, li.layer));
      transformed_through = li.layer;
      rep.calibration_seconds += tt.seconds();
    }
    const LinearRecipe r = plan.recipe_for(li.layer, li.kind);
    if (r.keeps_fp32()) continue;
    if (!li.weight)
      throw mq::UsageError(fmt::format("{} has no fp32 weight to quantize (the model was loaded from a quantized "
                                       "checkpoint); quantize the fp32 checkpoint instead", li.name));
    const mq::Stopwatch t;
    LinearQuantReport lr;
    lr.name = li.name;
    lr.in = li.in;
    lr.out = li.out;
    lr.recipe = r.name();
    mq::QTensor q;
    const std::string wname = li.name + ".weight";
    if (auto it = transform_notes.find(li.name); it != transform_notes.end()) lr.notes.push_back(it->second);
    if (!r.uses_hessian()) {
      q = quantize_linear(r, plan.gptq.options, li.weight, li.out, li.in, nullptr, nullptr, wname, &lr.notes);
    } else {
      if (plan.gptq.sequential) {
        const mq::Stopwatch tc;
        all = collect_hessians(m, calibration, {li.name});
        rep.calibration_seconds += tc.seconds();
      }
      const mq::Hessian& hs = all.at(li.name);
      const Eigen::MatrixXd h = hs.matrix();
      lr.has_hessian = true;
      lr.hessian = mq::hessian_stats(h, hs.samples());
      // Round-to-nearest (the plain grid; K families: their searched one), the baseline of the report.
      const mq::QTensor rtn = mq::quantize(li.weight, li.out, li.in, r.scheme, wname);
      lr.output_error_rtn = mq::output_error(li.weight, rtn, h);
      q = quantize_linear(r, plan.gptq.options, li.weight, li.out, li.in, &h,
                          r.quantizer().needs_fisher ? fisher.at(li.name).data() : nullptr, wname, &lr.notes);
      lr.output_error = mq::output_error(li.weight, q, h);
    }
    lr.storage = q.storage();
    if (plan.phases) {
      set_phase_projection(m, plan, li, std::move(q), lr);
    } else {
      m.set_projection(li.name, std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(q), r.act)));
    }
    lr.seconds = t.seconds();
    rep.layers.push_back(std::move(lr));
  }
  if (plan.embedding.kind == mq::Kind::fp16) {
    if (!m.has_master("wte"))
      throw mq::UsageError("the embedding has no fp32 table to store in fp16 (the model was loaded from a quantized checkpoint)");
    const auto& c = m.config();
    m.set_embedding(std::make_unique<HalfEmbedding>(m.param("wte"), c.vocab_size, c.d_model));
  }
  rep.total_seconds = all_time.seconds();
  return rep;
}

std::vector<std::pair<std::string, mq::QTensor>> stored_weights(const Model& m) {
  std::vector<std::pair<std::string, mq::QTensor>> out;
  for (const LinearInfo& li : m.linears()) {
    if (const auto* qp = dynamic_cast<const QuantizedProjection*>(&m.projection(li.name)))
      out.emplace_back(li.name, qp->linear().weight());
    // Which phase runs what is how a model runs, not what a file stores: save the stored recipe instead.
    if (dynamic_cast<const PhaseProjection*>(&m.projection(li.name)))
      throw mq::UsageError(fmt::format("{} is split by inference phase ({}); checkpoints and GGUF files store one recipe per "
                                       "Linear: save the plan without its phases", li.name, m.projection(li.name).format_name()));
  }
  return out;
}

}  // namespace minigpt
