// GPTQ (Frantar et al., 2022): quantize a Linear weight column by column, pushing each column's
// rounding error onto the columns not yet quantized, weighted by the inverse Hessian of the
// layer's inputs, so that ||W X - Q X||^2 (not ||W - Q||^2) is what gets small.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include "miniquant/quantize.h"

namespace mq {

struct GptqOptions {
  double percdamp = 0.01;    // damping added to diag(H), as a fraction of its mean
  int64_t block = 128;       // columns per lazy block update (rounded to whole groups)
  bool act_order = false;    // visit columns by decreasing diag(H); groups stay static (see below)
  int max_damp_retries = 6;  // when a Cholesky factorisation fails, damping x10, at most this often
  // How each group's (K families: each super-block's) scales are chosen: none = the plain absmax / min-max grid
  // (integer schemes; K families always search, `none` meaning `plain` for them); plain = the search of
  // grid_search.h (intN: every weight alike) or kquant_search.h (K: its plain error weights); importance = the same
  // search with each weight's error weighted by its column's diag(H), the importance GPTQ already has.
  Search search = Search::none;
  // Integer schemes: each group's grid from this chooser instead of `search`'s (a quantizer row's own, as in
  // QuantizeOptions::grid); `search` still decides the importance it is given. mq::UsageError for other schemes.
  GridChooser grid = nullptr;
};

struct GptqResult {
  QTensor q;                          // same storage as round-to-nearest: kernels and bytes are shared
  double percdamp_used = 0.0;         // the damping that factorised
  int damp_retries = 0;
  std::vector<int64_t> dead_columns;  // diag(H) == 0: weights there are set to 0 (their input never fires)
  // The solver's own objective: sum over entries of (w - q)^2 / (2 U_jj^2), U the upper Cholesky factor of
  // H^-1 (H^-1 = U^T U; U_jj^2 is [H_F^-1]_jj, H restricted to the columns not yet quantized when j is).
  double proxy_loss = 0.0;
  double seconds = 0.0;
  std::vector<std::string> notes;     // what the solver had to do (extra damping, ...)
};

// w: (rows, cols) row-major fp32; h: (cols, cols) symmetric, H = X X^T / n of the layer's inputs.
// Grids: per-tensor and per-channel scales come from the (dead-column-cleaned) weights before the
// column loop. Per-group scales are chosen when the loop enters a group, from the weights as
// already updated; with act_order they are fixed from the original weights up front ("static
// groups"), so codes stay in the original column order and inference needs no permutation. K families:
// every super-block's parameters (fp16 factors, integer sub-block scales and mins) are chosen by the search
// from the original weights before the loop, and the loop rounds each weight to its sub-block's grid.
// Errors: UsageError for a float scheme, a shape the scheme cannot store or an H of the wrong size;
// Error for NaN/Inf in w or h, or a Hessian no damping makes factorisable.
GptqResult gptq_quantize(const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXd& h, const Scheme& s,
                         const GptqOptions& o = {}, std::string_view name = "weight");

// tr((W - Q) H (W - Q)^T) = ||W X - Q X||^2 / n: the layer output error GPTQ minimises.
double output_error(const float* w, const QTensor& q, const Eigen::MatrixXd& h);
// The same for any weight W' ((rows, cols) row-major, like w): AWQ scores each candidate scale with it.
double output_error(const float* w, const float* w2, int64_t rows, int64_t cols, const Eigen::MatrixXd& h);

}  // namespace mq
