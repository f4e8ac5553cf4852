// Choosing one K-quant super-block's stored parameters (fp16 d and dmin, integer sub-block scales and mins)
// for 256 weights x, so that the weighted error sum_i wt_i (x_i - w'_i)^2 of the dequantized weights w' is
// small. Written from the published K-quant design (weighted least squares over a grid of candidate scales
// per sub-block, then the sub-block scales quantized against a super-block scale), plus what makes it ours:
// every candidate is scored by the exact error of the stored grid (fp16 factors, integer scales, codes
// re-rounded), the integer scales and the fp16 factors are refined by coordinate descent on that exact error,
// and the plain round-to-nearest parameters are kept when the search does not beat them, so the search is
// never worse than round-to-nearest in the weighted error (tests/test_kquant.cpp).
#pragma once
#include <cstdint>

#include "miniquant/kquant/family.h"

namespace mq {

// x, wt: (kSuperBlock). wt >= 0 (the error weight of each weight). search = false: round-to-nearest (each
// sub-block's range onto its codes, the largest sub-block scale and min onto the integer range). Throws
// mq::Error when a factor does not fit fp16.
KParams kchoose_params(const KFamily& f, const float* x, const float* wt, bool search);

// The nearest codes of x on the grid of p.  x: (kSuperBlock);  codes: (kSuperBlock).
void kencode_block(const KFamily& f, const KParams& p, const float* x, uint8_t* codes);

// sum_i wt_i (x_i - w'_i)^2 with w' the weights p and the nearest codes decode to.
double kblock_error(const KFamily& f, const KParams& p, const float* x, const float* wt);

// The error weights of one super-block, with sigma2 = twice the block's mean square:
//   without importance: sigma2 + x_i^2;  with it: importance[i] * sqrt(sigma2 + x_i^2) (llama.cpp's form),
// importance[i] being an input column's importance (the diagonal of the layer's calibration Hessian). Chosen on
// the calibration windows (the val split, never the test split): summed over MiniGPT's 16 Linears, the layer
// output error tr((W - Q) H (W - Q)^T) of the search's result was lowest at q2_k / q3_k with these among flat
// weights, |x|, x^2, sqrt(sigma2) + |x| and sqrt(sigma2 + x^2) (flat weights: 1.4x llama.cpp's error at
// q2_k; these: 0.93x), and with importance imp * sqrt(sigma2 + x^2) was at or below llama.cpp's at every
// type (imp alone: 1.18x at q2_k).  x, importance: (kSuperBlock);  wt: out.
void kerror_weights(const float* x, const float* importance, float* wt);

}  // namespace mq
