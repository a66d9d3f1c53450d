// Cache-line aligned host buffers for GEMM operands.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace spartan {

/// Alignment of AlignedVector storage in bytes: one x86 cache line, one AVX-512 vector. The tile-sparse
/// GEMM's wide row gather reads a dense operand of one panel in place only when its rows start on 64-byte
/// boundaries; otherwise it copies it per call (sw/gemm/README.md). glibc's malloc aligns large blocks to 16
/// bytes only (an mmap'ed chunk starts 16 bytes into its page).
inline constexpr std::size_t kCacheLineBytes = 64;

/// std::allocator with kCacheLineBytes alignment (C++17 aligned operator new). Throws std::bad_alloc.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() noexcept = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kCacheLineBytes)));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t(kCacheLineBytes)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const noexcept { return false; }
};

/// A std::vector whose data() is kCacheLineBytes-aligned.
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace spartan
