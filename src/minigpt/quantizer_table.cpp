// The table of quantizers (quantizer_table.h): a new one is a new row here and its own file. Rows whose grids live in
// the library (grid_search.h, kquant_search.h) are thin: they only configure it.
#include "minigpt/quantizer_table.h"

#include <fmt/core.h>

#include "miniquant/error.h"

namespace minigpt {

namespace {
std::string any_stored(const mq::Scheme&) { return ""; }
std::string integer_or_k(const mq::Scheme& s) {
  return s.is_integer() || s.is_kquant() ? "" : "a scale search needs an integer or K scheme";
}
std::string k_only(const mq::Scheme& s) {
  return s.is_kquant() ? "" : fmt::format("-fisher weights the K families' scale search (q2_k .. q6_k); {} is not one", s.name());
}

// The plain grid; the K families always search (their plain name is the plain search).
mq::QTensor round_to_nearest(const QuantizerInput& q) {
  return mq::quantize(q.weight, q.out, q.in, q.scheme, {.search = q.scheme.is_kquant()}, q.name);
}
mq::QTensor plain_search(const QuantizerInput& q) { return mq::quantize(q.weight, q.out, q.in, q.scheme, {.search = true}, q.name); }
// llama.cpp's importance matrix: one weight per input column, diag(H).
mq::QTensor importance_search(const QuantizerInput& q) {
  std::vector<float> importance(static_cast<size_t>(q.in));  // (in)
  for (int64_t j = 0; j < q.in; ++j) importance[static_cast<size_t>(j)] = static_cast<float>((*q.hessian)(j, j));
  return mq::quantize(q.weight, q.out, q.in, q.scheme, {.search = true, .importance = importance.data()}, q.name);
}
mq::QTensor fisher_search(const QuantizerInput& q) {
  return mq::quantize(q.weight, q.out, q.in, q.scheme, {.search = true, .importance = q.fisher, .importance_per_weight = true}, q.name);
}

constexpr QuantizerMethod kQuantizers[] = {
    {mq::Search::none, "", "round-to-nearest on the absmax / min-max grid (the K families: their plain search)", false, false, true,
     true, any_stored, round_to_nearest, nullptr},
    {mq::Search::plain, "search", "each group's scale from a shrink grid by its own squared error", false, false, true, true,
     integer_or_k, plain_search, nullptr},
    {mq::Search::importance, "imatrix", "the scale search weighted per input column by diag(H) of calibration (llama.cpp's imatrix)",
     true, false, true, false, integer_or_k, importance_search, nullptr},
    {mq::Search::fisher, "fisher", "the K search weighted per weight by the loss's empirical Fisher diagonal on calibration windows",
     false, true, false, false, k_only, fisher_search, nullptr},
    {mq::Search::hqq, "hqq", "each group's grid fitted to an l_0.7 weight error by half-quadratic splitting (HQQ), no calibration",
     false, false, true, true, hqq_refuses, hqq_quantize, hqq_grid},
};
}  // namespace

std::span<const QuantizerMethod> quantizer_table() { return kQuantizers; }

const QuantizerMethod& quantizer_for(mq::Search search) {
  for (const QuantizerMethod& q : kQuantizers)
    if (q.search == search) return q;
  throw mq::Error(fmt::format("quantizer_for: search {} has no row in the quantizer table", static_cast<int>(search)));
}

}  // namespace minigpt
