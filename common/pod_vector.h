// PodVector<T>: std::vector whose resize() leaves new trivially-constructible
// elements uninitialised, so hot paths can size output buffers without paying
// for a memset they are about to overwrite. value-initialising calls such as
// resize(n, value) and assign() behave as usual.
#ifndef FANOUT_COMMON_POD_VECTOR_H_
#define FANOUT_COMMON_POD_VECTOR_H_

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace fanout {

template <typename T, typename A = std::allocator<T>>
class DefaultInitAllocator : public A {
  using Traits = std::allocator_traits<A>;

 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U, typename Traits::template rebind_alloc<U>>;
  };
  using A::A;

  template <typename U>
  void construct(U* ptr) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(ptr)) U;  // default-init: no zeroing for PODs
  }
  template <typename U, typename... Args>
  void construct(U* ptr, Args&&... args) {
    Traits::construct(static_cast<A&>(*this), ptr, std::forward<Args>(args)...);
  }
};

template <typename T>
using PodVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace fanout

#endif  // FANOUT_COMMON_POD_VECTOR_H_
