// quantize_model: every Linear of a model through QuantizedLinear.
#include "minigpt/quantized_projection.h"

#include <memory>

namespace minigpt {

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
