#include "client/array.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace fanout::client {

int DTypeSize(DType t) {
  switch (t) {
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  return 1;
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kInt64:
      return "int64";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

namespace {
int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s < 0) throw std::invalid_argument("Array: negative extent " + std::to_string(s));
    n *= s;
  }
  return n;
}
}  // namespace

int64_t Array::numel() const { return defined_ ? Count(shape_) : 0; }

Array Array::Borrow(std::shared_ptr<void> owner, void* data, DType dtype,
                    std::vector<int64_t> shape, int device) {
  Array a;
  a.owner_ = std::move(owner);
  a.data_ = data;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.device_ = device;
  a.defined_ = true;
  return a;
}

Array Array::Empty(DType dtype, std::vector<int64_t> shape) {
  const size_t bytes = static_cast<size_t>(Count(shape) * DTypeSize(dtype));
  // 64-byte aligned (what DLPack consumers and vector loads like); at least
  // one byte, so that an empty array still has an address of its own.
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  std::shared_ptr<void> owner(p, [](void* q) { std::free(q); });
  return Borrow(std::move(owner), p, dtype, std::move(shape));
}

Array Array::Zeros(DType dtype, std::vector<int64_t> shape) {
  Array a = Empty(dtype, std::move(shape));
  std::memset(a.data_, 0, static_cast<size_t>(a.nbytes()));
  return a;
}

Array Array::Narrow(int d, int64_t start, int64_t length) const {
  if (!defined_ || d < 0 || d >= dim() || start < 0 || length < 0 || start + length > size(d) ||
      (d > 0 && (dim() != 2 || !contiguous())) || (d == 0 && !contiguous()))
    throw std::invalid_argument("Array::Narrow(" + std::to_string(d) + ", " +
                                std::to_string(start) + ", " + std::to_string(length) + ") of " +
                                ToString());
  Array a = *this;
  const int64_t elem = DTypeSize(dtype_);
  if (d == 0) {
    int64_t row = 1;
    for (size_t i = 1; i < shape_.size(); ++i) row *= shape_[i];
    a.data_ = static_cast<char*>(data_) + start * row * elem;
    a.shape_[0] = length;
  } else {
    a.data_ = static_cast<char*>(data_) + start * elem;
    a.shape_[1] = length;
    a.strides_ = {size(1), 1};
  }
  return a;
}

Array Array::Reshape(std::vector<int64_t> shape) const {
  if (!defined_ || !contiguous() || Count(shape) != numel())
    throw std::invalid_argument("Array::Reshape of " + ToString());
  Array a = *this;
  a.shape_ = std::move(shape);
  return a;
}

std::string Array::ToString() const {
  if (!defined_) return "undefined";
  std::string s = std::string(DTypeName(dtype_)) + " [";
  for (size_t i = 0; i < shape_.size(); ++i) s += (i ? ", " : "") + std::to_string(shape_[i]);
  s += "]";
  if (device_ >= 0) s += " on cuda:" + std::to_string(device_);
  return s;
}

}  // namespace fanout::client
