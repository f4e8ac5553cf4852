// 64-byte aligned std::vector: Eigen's vectorised reductions peel differently depending on a
// buffer's alignment, so bit-reproducible training needs every float buffer aligned the same way.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace minigpt {

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

}  // namespace minigpt
