// Lab 06's learner-style solution (tests/labs/lab06_solution.cpp: plain loops, OpenMP and xsimd, no intrinsics)
// against the library's scalar references, with the grader's fp32 bound: the handout promises that a kernel
// written from it is portable, and this test runs in the x86 build, the sanitizer build and the aarch64 build
// under qemu-user (cmake/kernels_only.cmake). Timing is the grader's business (`miniquant lab check 06`), not this.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lab06.h"
#include "miniquant/half.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/ref.h"
#include "miniquant/pack.h"
#include "miniquant/random.h"

namespace {

// |y - exact| <= (gamma_(cols + groups + 2)) sum |s (u - z) x| per output, exact in double (the grader's bound
// without the bf16 term: this solution keeps fp32 activations).
void check_close(const mq::QTensor& w, const float* x, int64_t n, const float* y, const std::string& what) {
  const int64_t gw = w.scheme.group_width(w.cols), groups = w.scheme.groups_per_row(w.cols);
  const int z = 1 << (w.scheme.bits - 1);
  const double nu = static_cast<double>(w.cols + groups + 2) * 0x1p-24, gamma = nu / (1 - nu);
  int bad = 0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < w.rows; ++r) {
      double exact = 0, mag = 0;
      for (int64_t c = 0; c < w.cols; ++c) {
        const double v = mq::f16_to_f32(w.scales[static_cast<size_t>(r * groups + c / gw)]) *
                         (mq::field_at(w.row_codes(r), c, w.scheme.bits) - z) * static_cast<double>(x[t * w.cols + c]);
        exact += v;
        mag += std::fabs(v);
      }
      bad += !(std::fabs(y[t * w.rows + r] - exact) <= gamma * mag);
    }
  INFO(what);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("lab 06 learner-style solution: every block equals the exact product within fp32's bound, on this target") {
  for (const char* name : {"int4-g64", "int4-g32", "int4-per-channel", "int8-g64", "int8-per-channel"}) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{7, 256}, {3, 518}, {5, 102}}) {
      const mq::Scheme s = mq::Scheme::parse(name);
      if (s.group_width(cols) != cols && cols % s.group != 0) continue;  // g32 / g64 need whole groups
      const std::vector<float> wf = mq::gaussian_matrix(rows, cols, 42 + static_cast<uint64_t>(cols), 0.05);
      const mq::QTensor w = mq::quantize(wf.data(), rows, cols, s, "w");
      const int64_t n = 3;
      const std::vector<float> x = mq::gaussian_matrix(n, cols, 7, 1.0);
      const std::string what = std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(cols);
      std::vector<float> y(static_cast<size_t>(n * rows));
      lab::gemv_ref(w, x.data(), y.data());
      check_close(w, x.data(), 1, y.data(), what + " block A");
      lab::gemv_unrolled(w, x.data(), y.data());
      check_close(w, x.data(), 1, y.data(), what + " block C");
      lab::gemv_threads(w, x.data(), y.data(), 2);
      check_close(w, x.data(), 1, y.data(), what + " block D");
      lab::gemv_simd(w, x.data(), y.data(), 2);
      check_close(w, x.data(), 1, y.data(), what + " block E");
      lab::gemm_simd(w, x.data(), n, y.data(), 2);
      check_close(w, x.data(), n, y.data(), what + " block F");
      // Block B: the codes and scale equal the library's, and the product the reference's on them (double scaling
      // there, fp32 here: within gamma_(groups + 2) of the magnitudes, checked as 1e-5 relative to the row's norm).
      std::vector<int8_t> a(static_cast<size_t>(cols)), b(static_cast<size_t>(cols));
      CHECK(lab::quantize_activations(x.data(), cols, a.data()) == mq::quantize_activations(x.data(), cols, b.data()));
      CHECK(a == b);
      std::vector<float> ya(static_cast<size_t>(rows)), yr(static_cast<size_t>(rows));
      lab::gemv_a8(w, x.data(), ya.data());
      mq::gemm_dynamic_ref(w, x.data(), 1, yr.data());
      for (int64_t r = 0; r < rows; ++r) CHECK(ya[static_cast<size_t>(r)] == doctest::Approx(yr[static_cast<size_t>(r)]).epsilon(1e-5));
    }
  }
}
