// The DLPack ABI (https://dmlc.github.io/dlpack/latest/, v0.8, unversioned
// DLManagedTensor): the structs a "dltensor" capsule carries, as every
// framework's from_dlpack reads them (torch 1.13 and 2.x alike). Written
// from the specification, so that the extension needs no framework headers.
#ifndef FANOUT_PYTHON_CORE_DLPACK_H_
#define FANOUT_PYTHON_CORE_DLPACK_H_

#include <cstdint>

extern "C" {

enum FanoutDLDeviceType : int32_t { kFanoutDLCPU = 1, kFanoutDLCUDA = 2 };
enum FanoutDLDataTypeCode : uint8_t {
  kFanoutDLInt = 0,
  kFanoutDLUInt = 1,
  kFanoutDLFloat = 2,
  kFanoutDLBfloat = 4
};

struct DLDevice {
  int32_t device_type;  // FanoutDLDeviceType
  int32_t device_id;
};

struct DLDataType {
  uint8_t code;  // FanoutDLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null = compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // extern "C"

#endif  // FANOUT_PYTHON_CORE_DLPACK_H_
