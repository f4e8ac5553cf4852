// The diagonal of the empirical Fisher information of every Linear weight: the squared gradient of the
// next-token loss, summed over calibration windows (one gradient per window). To second order the KL
// divergence a weight perturbation dw causes is (1/2) dw^T F dw, so diag(F) says how much each single weight's
// error costs at the model's output, through everything downstream of it (the GELU, the layers after it, the
// head), which a Linear's own output error tr(dW H dW^T) does not see. SqueezeLLM (Kim et al., ICML 2024)
// weights its quantizer by it; the K recipes' -fisher suffix weights the K scale search by it (quantize_model.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "minigpt/model.h"

namespace minigpt {

// One (out, in) vector per Linear of `m` (row-major like its weight): sum over windows of (d loss / d w)^2,
// loss = the window's mean next-token cross-entropy, on the fp32 master parameters (whatever projections are
// installed). Each window has 2 to n_ctx + 1 tokens (inputs w[0..n-2], targets w[1..n-1]). mq::UsageError for
// no windows, a window outside that range, or a Linear without its fp32 weight (a quantized checkpoint).
std::map<std::string, std::vector<float>> collect_fisher(const Model& m, const std::vector<std::vector<int32_t>>& windows);

}  // namespace minigpt
