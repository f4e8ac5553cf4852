// An input-channel scale moved between a Linear and what feeds it, leaving the fp32 model's function
// unchanged: y = W x = (W diag(s)) (x / s). The Linear's weight columns are multiplied by s and the
// producer of its input divides channel j by s_j, where that is exact:
//   qkv       <- ln_1 (its weight and bias)
//   attn_out  <- the V rows of c_attn (weight rows and bias): attention mixes V linearly per channel
//   mlp_up    <- ln_2
//   mlp_down  <- nothing exact: GELU sits between the MLP's two Linears (GELU(x / s) != GELU(x) / s), so
//                an activation-aware method leaves it unscaled (and says so in the quantization notes).
#pragma once
#include <vector>

#include "minigpt/model.h"

namespace minigpt {

// True when an input scale of `kind` folds exactly into its producer.
bool input_scale_folds(LinearKind kind);

// Applies `s` (li.in positive finite factors) to the fp32 master weights of `m` as above. mq::UsageError for a
// kind that does not fold or a Linear without master weights; mq::Error for a factor that is not positive and finite.
void fold_input_scale(Model& m, const LinearInfo& li, const std::vector<float>& s);

}  // namespace minigpt
