// Model-level quantization: RTN per Linear, or GPTQ with per-Linear Hessians from calibration.
#include "minigpt/quantize_model.h"
#include "miniquant/util/timer.h"

#include <chrono>
#include <map>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "minigpt/calibrate.h"

namespace minigpt {
QuantizeModelOptions quantize_options_for(const std::string& name) {
  QuantizeModelOptions o;
  std::string storage = name;
  if (storage.size() > 3 && storage.ends_with("+a8")) {
    o.act = mq::ActMode::dynamic_int8;
    storage.resize(storage.size() - 3);
  }
  o.gptq = storage.size() > 5 && storage.ends_with("-gptq");
  if (o.gptq) storage.resize(storage.size() - 5);
  o.scheme = mq::Scheme::parse(storage);
  if (o.gptq && !o.scheme.is_integer()) throw mq::UsageError(fmt::format("scheme {}: GPTQ needs an integer scheme", name));
  if (o.act == mq::ActMode::dynamic_int8 && !mq::supports_dynamic(o.scheme))
    throw mq::UsageError(fmt::format("scheme {}: dynamic int8 activations (+a8) need int8 or int4 weights", name));
  return o;
}

ModelQuantReport quantize_linears(Model& m, const QuantizeModelOptions& o,
                                  const std::vector<std::vector<int32_t>>& calibration, const ProjectionFactory& make,
                                  std::vector<std::pair<std::string, mq::QTensor>>* quantized) {
  const auto t_all = std::chrono::steady_clock::now();
  if (o.gptq && calibration.empty())
    throw mq::UsageError("GPTQ needs calibration windows (a held-out split); none were given");
  ModelQuantReport rep;
  std::map<std::string, mq::Hessian> all;  // non-sequential GPTQ: one pass on the fp32 model
  if (o.gptq && !o.sequential) {
    const auto t0 = std::chrono::steady_clock::now();
    all = collect_hessians(m, calibration);
    rep.calibration_seconds += mq::seconds_since(t0);
  }
  for (const LinearInfo& li : m.linears()) {
    const auto t0 = std::chrono::steady_clock::now();
    LinearQuantReport lr;
    lr.name = li.name;
    lr.in = li.in;
    lr.out = li.out;
    mq::QTensor q;
    if (!o.gptq) {
      q = mq::quantize(li.weight, li.out, li.in, o.scheme, li.name + ".weight");
    } else {
      if (o.sequential) {
        const auto tc = std::chrono::steady_clock::now();
        all = collect_hessians(m, calibration, {li.name});
        rep.calibration_seconds += mq::seconds_since(tc);
      }
      const mq::Hessian& hs = all.at(li.name);
      const Eigen::MatrixXd h = hs.matrix();
      lr.has_hessian = true;
      lr.hessian = mq::hessian_stats(h, hs.samples());
      mq::GptqResult g = mq::gptq_quantize(li.weight, li.out, li.in, h, o.scheme, o.gptq_options, li.name + ".weight");
      lr.notes = g.notes;
      lr.output_error = mq::output_error(li.weight, g.q, h);
      lr.output_error_rtn =
          mq::output_error(li.weight, mq::quantize(li.weight, li.out, li.in, o.scheme, li.name + ".weight"), h);
      q = std::move(g.q);
    }
    lr.storage = q.storage();
    if (quantized) quantized->emplace_back(li.name, q);
    m.set_projection(li.name, make(std::move(q)));
    lr.seconds = mq::seconds_since(t0);
    rep.layers.push_back(std::move(lr));
  }
  rep.total_seconds = mq::seconds_since(t_all);
  return rep;
}

}  // namespace minigpt
