// Reduced shape sweeps for emulated runs: MQ_TEST_REDUCED=1 (set by the aarch64 build's tests, which run
// under qemu-user at a small fraction of native speed, cmake/kernels_only.cmake) lets a test's largest sweep
// run the subset of its shapes that its own comment names; every assertion stays as it is.
#pragma once
#include <cstdlib>
#include <cstring>

namespace testsizes {

inline bool reduced() {
  const char* v = std::getenv("MQ_TEST_REDUCED");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace testsizes
