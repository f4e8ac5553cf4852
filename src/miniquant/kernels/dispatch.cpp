// gemm(): runs the kernel the registry selects for (family, activation mode, instruction set); the default
// thread count.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "miniquant/error.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"

namespace mq {

namespace {
std::atomic<int> g_threads{0};  // 0: omp_get_max_threads()
}

void set_default_threads(int n) {
  if (n < 0) throw UsageError("set_default_threads: thread count must be >= 0 (0 = OMP_NUM_THREADS)");
  g_threads = n;
}

int default_threads() {
  const int n = g_threads.load();
  return n > 0 ? n : omp_get_max_threads();
}

bool supports_dynamic(const Scheme& s) { return has_kernel(s, ActMode::dynamic_int8); }

bool empty_product(int64_t rows, int64_t cols, int64_t n, float* y, const char* who) {
  if (n < 0) throw UsageError(std::string(who) + ": negative token count");
  if (n == 0 || rows == 0) return true;
  if (cols == 0) {  // an empty dot product; such tensors also have no scales to read
    std::fill(y, y + n * rows, 0.0f);
    return true;
  }
  return false;
}

void gemm(const QTensor& w, const float* x, int64_t n, float* y, const KernelOptions& opt) {
  if (empty_product(w.rows, w.cols, n, y, "gemm")) return;
  const int threads = opt.threads > 0 ? opt.threads : default_threads();
  if (is_dynamic(opt.act) && !supports_dynamic(w.scheme))
    throw UsageError(std::string("gemm: dynamic ") + (opt.act == ActMode::dynamic_int8 ? "int8" : "int16") +
                     " activations need integer or K weights, not " + w.scheme.name());
  select_kernel(w, opt.act, opt.use_isa, x, n).rows(w, x, n, y, threads, opt.act, opt.use_isa);
}

}  // namespace mq
