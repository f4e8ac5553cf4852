// Quantized projections: the factory quantize_linears() takes, and quantize_model.
#include "minigpt/quantized_projection.h"

#include <memory>

namespace minigpt {

ProjectionFactory quantized_projections(mq::ActMode mode) {
  return [mode](mq::QTensor q) -> std::unique_ptr<Projection> {
    return std::make_unique<QuantizedProjection>(mq::QuantizedLinear(std::move(q), mode));
  };
}

long long quantize_model(Model& m, const mq::Scheme& s, mq::ActMode mode) {
  long long bytes = 0;
  for (const LinearInfo& li : m.linears()) {
    auto p = std::make_unique<QuantizedProjection>(mq::QuantizedLinear(li.weight, li.out, li.in, s, mode, li.name));
    bytes += p->weight_bytes();
    m.set_projection(li.name, std::move(p));
  }
  return bytes;
}

}  // namespace minigpt
