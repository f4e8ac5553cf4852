// Pieces shared by the reference and the optimized quantizer, so both make identical decisions.
#pragma once
#include <string_view>

#include "miniquant/quantize.h"

namespace mq::detail {

[[noreturn]] void throw_bad_value(std::string_view name, const float* w, int64_t cols, int64_t idx, const char* why);
void check_finite_ref(const float* w, int64_t rows, int64_t cols, std::string_view name);
// The options a scheme other than a K family cannot take (an importance per weight): UsageError naming the tensor.
void check_options_not_k(const QuantizeOptions& o, const Scheme& s, std::string_view name);
// A grid chooser given for a K family (no Grid in its blocks): UsageError naming the tensor.
void check_grid_not_k(const QuantizeOptions& o, const Scheme& s, std::string_view name);
// The chooser of an integer scheme's group grids: the given one, else search_grid when searching, else null (the
// absmax / min-max grid). quantize() and GPTQ both pick theirs here.
GridChooser chooser_of(GridChooser grid, bool search);
// Validates the shape (UsageError naming the tensor) and allocates codes, scales and zero-points.
QTensor make_tensor(int64_t rows, int64_t cols, const Scheme& s, std::string_view name);
// Grid from a group's min, max and absmax, errors naming the tensor and the scale's index.
Grid grid_from(float lo, float hi, float absmax, const Scheme& s, std::string_view name, int64_t scale_index);
// Grid of the n values v (one group, one row or the whole tensor), errors naming the tensor.
Grid grid_for(const float* v, int64_t n, const Scheme& s, std::string_view name, int64_t scale_index);
// Float storage (fp32 / fp16 / bf16) of row r (cols values) into out, checking the target range.
void store_float_row(const float* w, int64_t cols, int64_t r, const Scheme& s, std::string_view name, uint8_t* out);

}  // namespace mq::detail
