// The scale search for the intN-gG schemes (a recipe's -search / -imatrix): the grid of the reference GPTQ
// implementation's `mse` option. For each group, the range is shrunk by p = 1.00, 0.99, ..., 0.20 (81
// candidates); each candidate's grid is built as round-to-nearest builds it (symmetric_grid /
// asymmetric_grid on the shrunk range: fp16 scale, zero-point; symmetric ones may also use the code -(qmax + 1),
// Grid::full_range) and scored by sum_i w_i |x_i - x'_i|^2.4 with
// x' what the stored codes decode to; the lowest score wins, ties going to the larger p, so p = 1 (plain
// round-to-nearest) stays unless a shrunk grid beats it. Weights w_i: an importance per input column, or 1.
#pragma once
#include <cstdint>
#include <string_view>

#include "miniquant/quantize.h"

namespace mq {

inline constexpr double kSearchNorm = 2.4;  // the error norm of the reference implementation
inline constexpr int kSearchSteps = 80;     // shrink factors 1 - k / 100, k = 0 .. 80

// v: (n) the group's weights; importance: null, or the importance of v[i] at importance[i % period] (a
// group: its columns' importances, period n; a whole per-tensor matrix: the columns', period cols).
// Errors as detail::grid_from (a scale beyond fp16, naming the tensor and the scale index).
Grid search_grid(const float* v, int64_t n, const float* importance, int64_t period, const Scheme& s,
                 std::string_view name, int64_t scale_index);

// sum_i w_i |v_i - x'_i|^kSearchNorm on grid g (the score search_grid minimises).
double search_error(const float* v, int64_t n, const float* importance, int64_t period, const Grid& g, const Scheme& s);

}  // namespace mq
