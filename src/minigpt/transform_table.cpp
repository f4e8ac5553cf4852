// The table of equivalence transforms (transform_table.h): a new method is a new row here and its own file.
#include "minigpt/transform_table.h"

#include <array>

namespace minigpt {

namespace {
constexpr std::array<TransformMethod, 2> kTransforms = {{
    {"awq", "AWQ: per input channel s = mean|x|^alpha, alpha on a 20-point grid in [0, 1] chosen by the Linear's output error",
     awq_refuses, awq_scales},
    {"smooth", "SmoothQuant: per input channel s = max|x|^alpha / max|w|^(1 - alpha), moving activation outliers into the weights "
               "(+a8, +a16); alpha on a 21-point grid in [0, 1], or s = 1, chosen by the Linear's output error with both quantizers",
     smoothquant_refuses, smoothquant_scales},
}};
}  // namespace

std::span<const TransformMethod> transform_table() { return kTransforms; }

const TransformMethod* find_transform(std::string_view suffix) {
  for (const TransformMethod& t : kTransforms)
    if (t.suffix == suffix) return &t;
  return nullptr;
}

}  // namespace minigpt
