// The GPU cache in a build without CUDA: every factory says so.
#include "cache/gpu_feature_cache.h"

namespace fanout::cache {

namespace {
Status NoCuda() {
  return Status::NotSupported(
      "Fanout was built without CUDA (FANOUT_WITH_CUDA=OFF or no nvcc): no GPU feature cache");
}
}  // namespace

int CudaDeviceCount() { return 0; }
bool CudaBuilt() { return false; }

Stream::~Stream() = default;
Stream::Stream(Stream&& o) noexcept : s_(o.s_), device_(o.device_) { o.s_ = nullptr; }
Stream& Stream::operator=(Stream&& o) noexcept {
  std::swap(s_, o.s_);
  std::swap(device_, o.device_);
  return *this;
}
void Stream::Reset() {}
Status Stream::Create(int, Stream*) { return NoCuda(); }

DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : d_ptr_(o.d_ptr_), size_(o.size_), device_(o.device_) {
  o.d_ptr_ = nullptr;
  o.size_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(d_ptr_, o.d_ptr_);
  std::swap(size_, o.size_);
  std::swap(device_, o.device_);
  return *this;
}
void DeviceBuffer::Reset() {}
Status DeviceBuffer::Allocate(size_t, int, DeviceBuffer*) { return NoCuda(); }
Status DeviceBuffer::AllocateAsync(size_t, int, StreamHandle, DeviceBuffer*) { return NoCuda(); }
Status DeviceBuffer::CopyFromHost(const void*, size_t, StreamHandle) { return NoCuda(); }
Status DeviceBuffer::CopyToHost(void*, size_t, StreamHandle) const { return NoCuda(); }

PinnedBuffer::~PinnedBuffer() = default;
PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept : h_ptr_(o.h_ptr_), size_(o.size_) {
  o.h_ptr_ = nullptr;
  o.size_ = 0;
}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  std::swap(h_ptr_, o.h_ptr_);
  std::swap(size_, o.size_);
  return *this;
}
void PinnedBuffer::Reset() {}
Status PinnedBuffer::Allocate(size_t, PinnedBuffer*) { return NoCuda(); }
Status GpuWorkspace::Grow(PinnedBuffer*, size_t) { return NoCuda(); }
Status GpuWorkspace::Grow(DeviceBuffer*, size_t, int) { return NoCuda(); }

struct GpuFeatureCache::Impl {};
GpuFeatureCache::~GpuFeatureCache() = default;
Status GpuFeatureCache::Create(const CacheOptions&, int, std::unique_ptr<GpuFeatureCache>*) {
  return NoCuda();
}
Status GpuFeatureCache::Insert(ArrayView<const int64_t>, const float*, StreamHandle) {
  return NoCuda();
}
Status GpuFeatureCache::Gather(ArrayView<const int64_t>, float*, std::vector<int64_t>*,
                               GpuWorkspace*, StreamHandle) {
  return NoCuda();
}
Status GpuFeatureCache::ScatterMisses(ArrayView<const int64_t>, const float*, float*, GpuWorkspace*,
                                      StreamHandle) {
  return NoCuda();
}
Status GpuFeatureCache::ScatterRows(ArrayView<const int64_t>, const float*, float*, GpuWorkspace*,
                                    StreamHandle) {
  return NoCuda();
}
Status GpuFeatureCache::Synchronize(StreamHandle) { return NoCuda(); }
int64_t GpuFeatureCache::device_memory_bytes() const { return 0; }
CacheStats GpuFeatureCache::stats() const { return {}; }
Status MeasureGatherBandwidth(int64_t, int64_t, int64_t, int, int, double*, double*) {
  return NoCuda();
}

}  // namespace fanout::cache
