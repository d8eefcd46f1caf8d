// Array: an n-dimensional array that owns (a share of) its memory, in host
// memory or on a CUDA device, without LibTorch. The client core's batches are
// made of these; the LibTorch layer (client/loader.h) wraps them as tensors
// and the Python extension hands them out as DLPack capsules, neither
// copying. Views (Narrow, Reshape) share the owner.
//
// Thread safety: an Array is a value; copies share the memory (the owner is
// a shared_ptr), so writing through one is seen by the others.
#ifndef FANOUT_CLIENT_ARRAY_H_
#define FANOUT_CLIENT_ARRAY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fanout::client {

enum class DType : uint8_t { kInt64, kFloat32, kFloat16, kBFloat16 };
int DTypeSize(DType t);
const char* DTypeName(DType t);

class Array {
 public:
  Array() = default;  // undefined (no array)

  // A new zeroed, contiguous host array.
  static Array Zeros(DType dtype, std::vector<int64_t> shape);
  // A new contiguous host array whose elements are not initialized.
  static Array Empty(DType dtype, std::vector<int64_t> shape);
  // A vector's memory (int64_t or float elements), taken over without a
  // copy (1-d).
  template <typename V>
  static Array Take(V&& v) {
    using T = typename std::decay_t<V>::value_type;
    static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, float>);
    auto holder = std::make_shared<std::decay_t<V>>(std::move(v));
    void* data = holder->data();
    const int64_t n = static_cast<int64_t>(holder->size());
    return Borrow(std::move(holder), data,
                  std::is_same_v<T, int64_t> ? DType::kInt64 : DType::kFloat32, {n});
  }
  // Memory someone else owns: `owner` keeps it alive (device -1 = host,
  // else the CUDA device it is on). Contiguous.
  static Array Borrow(std::shared_ptr<void> owner, void* data, DType dtype,
                      std::vector<int64_t> shape, int device = -1);

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  int device() const { return device_; }  // -1 = host memory
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int d) const { return shape_[static_cast<size_t>(d)]; }
  int64_t numel() const;
  int64_t nbytes() const { return numel() * DTypeSize(dtype_); }
  void* data() const { return data_; }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data_);
  }
  const std::shared_ptr<void>& owner() const { return owner_; }

  // Rows [start, start + length) along dimension `d` (0 or, for a 2-d
  // array, 1: then a strided view), sharing the memory.
  Array Narrow(int d, int64_t start, int64_t length) const;
  // The same elements in another shape (contiguous arrays only).
  Array Reshape(std::vector<int64_t> shape) const;
  // Element strides (empty: contiguous).
  const std::vector<int64_t>& strides() const { return strides_; }
  bool contiguous() const { return strides_.empty(); }

  // A description for messages: "int64 [2, 17]".
  std::string ToString() const;

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  DType dtype_ = DType::kInt64;
  std::vector<int64_t> shape_, strides_;
  int device_ = -1;
  bool defined_ = false;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_ARRAY_H_
