// 64-byte aligned std::vector. Kernels read weight rows and activations with 64-byte vector loads;
// from a 16-byte aligned malloc three times in four such a load straddles two cache lines, which
// made the same model's decode speed vary by 20% from one allocation to the next. Eigen's
// vectorised reductions also peel by alignment, so bit-reproducible training wants it too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace mq {

inline constexpr std::size_t kBufferAlign = 64;  // one cache line, one AVX-512 register

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kBufferAlign})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kBufferAlign}); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;
using AlignedBytes = AlignedVector<uint8_t>;

}  // namespace mq
