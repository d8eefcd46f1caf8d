// ArrayView<T>: a non-owning (pointer, length) view, the C++17 stand-in for
// std::span. The viewed memory must outlive the view.
#ifndef FANOUT_COMMON_ARRAY_VIEW_H_
#define FANOUT_COMMON_ARRAY_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace fanout {

template <typename T>
class ArrayView {
 public:
  constexpr ArrayView() = default;
  constexpr ArrayView(T* data, size_t size) : data_(data), size_(size) {}
  // From a vector of T or of the non-const T.
  template <typename U, typename = std::enable_if_t<std::is_same_v<std::remove_const_t<T>, U>>>
  ArrayView(const std::vector<U>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_same_v<T, U>>>
  ArrayView(std::vector<U>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // A view of T converts to a view of const T.
  template <typename U, typename = std::enable_if_t<std::is_same_v<T, const U>>>
  ArrayView(ArrayView<U> v) : data_(v.data()), size_(v.size()) {}  // NOLINT

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fanout

#endif  // FANOUT_COMMON_ARRAY_VIEW_H_
