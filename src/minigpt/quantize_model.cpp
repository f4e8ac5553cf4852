// quantize_model(): RTN per Linear, or GPTQ with per-Linear Hessians from calibration.
#include "minigpt/quantize_model.h"

#include <map>
#include <memory>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/gptq.h"
#include "miniquant/linear.h"
#include "miniquant/util/timer.h"
#include "minigpt/calibrate.h"
#include "minigpt/embedding.h"
#include "minigpt/phase_projection.h"
#include "minigpt/quantized_projection.h"

namespace minigpt {

namespace {

// A phase split: both phases over the Linear's codes `q` (each with its own activation mode), or a phase
// with its own stored copy, quantized round-to-nearest from the fp32 weight; its bytes are added to the report.
void set_phase_projection(Model& m, const QuantPlan& plan, const LinearInfo& li, mq::QTensor q, LinearQuantReport& lr) {
  const LinearRecipe own = plan.recipe_for(li.layer, li.kind);
  std::unique_ptr<Projection> per_phase[2];
  for (const Phase ph : {Phase::prefill, Phase::decode}) {
    const LinearRecipe r = plan.recipe_for(li.layer, li.kind, ph);
    mq::QTensor codes;
    if (r.scheme == own.scheme && r.gptq == own.gptq) {
      codes = q;  // the Linear's own codes
    } else {
      codes = mq::quantize(li.weight, li.out, li.in, r.scheme, li.name + ".weight." + phase_name(ph));
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

}  // namespace

ModelQuantReport quantize_model(Model& m, const QuantPlan& plan, const std::vector<std::vector<int32_t>>& calibration) {
  const mq::Stopwatch all_time;
  plan.validate(m.config());
  if (plan.any_gptq() && calibration.empty())
    throw mq::UsageError("GPTQ needs calibration windows (a held-out split); none were given");
  ModelQuantReport rep;
  std::map<std::string, mq::Hessian> all;  // non-sequential GPTQ: one pass on the fp32 model
  if (plan.any_gptq() && !plan.gptq.sequential) {
    const mq::Stopwatch t;
    all = collect_hessians(m, calibration);
    rep.calibration_seconds += t.seconds();
  }
  for (const LinearInfo& li : m.linears()) {
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
    if (!r.gptq) {
      q = mq::quantize(li.weight, li.out, li.in, r.scheme, li.name + ".weight");
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
      mq::GptqResult g = mq::gptq_quantize(li.weight, li.out, li.in, h, r.scheme, plan.gptq.options, li.name + ".weight");
      lr.notes = g.notes;
      lr.output_error = mq::output_error(li.weight, g.q, h);
      lr.output_error_rtn =
          mq::output_error(li.weight, mq::quantize(li.weight, li.out, li.in, r.scheme, li.name + ".weight"), h);
      q = std::move(g.q);
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
