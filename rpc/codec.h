// Packing of id, count and value arrays into Thrift `binary` payloads:
// little-endian, contiguous, one memcpy each way.
#ifndef FANOUT_RPC_CODEC_H_
#define FANOUT_RPC_CODEC_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"

namespace fanout::rpc {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the wire format is little-endian");

template <typename T>
void Pack(ArrayView<const T> values, std::string* out) {
  out->resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out->data(), values.data(), out->size());
}

template <typename T>
std::string Pack(ArrayView<const T> values) {
  std::string s;
  Pack(values, &s);
  return s;
}

// A typed view of a packed payload; InvalidArgument when its length is not a
// multiple of sizeof(T). The string must outlive the view. Thrift's strings
// come from new[], aligned for any T.
template <typename T>
Status View(const std::string& payload, const char* what, ArrayView<const T>* out) {
  if (payload.size() % sizeof(T) != 0)
    return Status::InvalidArgument(std::string(what) + ": payload of " + std::to_string(payload.size()) +
                                   " bytes is not a whole number of " + std::to_string(sizeof(T)) + "-byte values");
  *out = ArrayView<const T>(reinterpret_cast<const T*>(payload.data()), payload.size() / sizeof(T));
  return Status::OK();
}

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_CODEC_H_
