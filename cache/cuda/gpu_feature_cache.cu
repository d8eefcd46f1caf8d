// CUDA implementation of the GPU feature cache (see cache/gpu_feature_cache.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cache/gpu_feature_cache.h"
#include "common/id_range.h"

namespace fanout::cache {
namespace {

Status CudaError(cudaError_t e, const char* what) {
  return Status::Internal(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                          cudaGetErrorString(e) + ")");
}

#define FANOUT_CUDA_RETURN(expr, what)                 \
  do {                                                 \
    cudaError_t _e = (expr);                           \
    if (_e != cudaSuccess) return CudaError(_e, what); \
  } while (0)

cudaStream_t S(StreamHandle h) { return static_cast<cudaStream_t>(h); }

// Scoped device selection: restores the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    cudaGetDevice(&previous_);
    if (device >= 0 && device != previous_) cudaSetDevice(device);
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

// One warp per output row: lanes copy the row's floats, coalesced.
// out[dst_pos[i]] = table[src_slot[i]] for i in [0, n).
__global__ void CopyRowsKernel(const float* __restrict__ table,
                               const int64_t* __restrict__ src_slot,
                               const int64_t* __restrict__ dst_pos, int64_t n, int64_t dim,
                               float* __restrict__ out) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = warp; i < n; i += warps) {
    const float* src = table + src_slot[i] * dim;
    float* dst = out + dst_pos[i] * dim;
    for (int64_t j = lane; j < dim; j += 32) dst[j] = src[j];
  }
}

Status LaunchCopyRows(const float* table, const int64_t* d_src, const int64_t* d_dst, int64_t n,
                      int64_t dim, float* out, cudaStream_t stream) {
  if (n == 0) return Status::OK();
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n * 32 + threads - 1) / threads, 65535);
  CopyRowsKernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(table, d_src, d_dst, n, dim,
                                                                        out);
  FANOUT_CUDA_RETURN(cudaGetLastError(), "launching the row copy kernel");
  return Status::OK();
}

}  // namespace

bool CudaBuilt() { return true; }

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

Stream::~Stream() { Reset(); }
Stream::Stream(Stream&& o) noexcept : s_(o.s_), device_(o.device_) {
  o.s_ = nullptr;
  o.device_ = -1;
}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    Reset();
    s_ = o.s_;
    device_ = o.device_;
    o.s_ = nullptr;
    o.device_ = -1;
  }
  return *this;
}
void Stream::Reset() {
  if (s_ != nullptr) {
    DeviceGuard g(device_);
    cudaStreamDestroy(static_cast<cudaStream_t>(s_));  // destructors never throw
  }
  s_ = nullptr;
}
Status Stream::Create(int device, Stream* out) {
  if (CudaDeviceCount() == 0)
    return Status::Unavailable("no CUDA device (or no driver) is present");
  DeviceGuard g(device);
  cudaStream_t s = nullptr;
  FANOUT_CUDA_RETURN(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream");
  Stream made;
  made.s_ = s;
  made.device_ = device;
  *out = std::move(made);
  return Status::OK();
}

DeviceBuffer::~DeviceBuffer() { Reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : d_ptr_(o.d_ptr_), size_(o.size_), device_(o.device_), pooled_(o.pooled_) {
  o.d_ptr_ = nullptr;
  o.size_ = 0;
  o.device_ = -1;
  o.pooled_ = false;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    d_ptr_ = o.d_ptr_;
    size_ = o.size_;
    device_ = o.device_;
    pooled_ = o.pooled_;
    o.d_ptr_ = nullptr;
    o.size_ = 0;
    o.device_ = -1;
    o.pooled_ = false;
  }
  return *this;
}

void DeviceBuffer::Reset() {
  if (d_ptr_ != nullptr) {
    DeviceGuard g(device_);
    // Destructors never throw; an error here has no one to report to.
    if (pooled_) {
      cudaFreeAsync(d_ptr_, cudaStreamLegacy);
    } else {
      cudaFree(d_ptr_);
    }
  }
  d_ptr_ = nullptr;
  size_ = 0;
  pooled_ = false;
}

namespace {
// Keeps freed pool memory for reuse (the default threshold, 0, would hand it
// back to the driver at every synchronisation), once per device.
Status KeepPoolMemory(int device) {
  static std::mutex mu;
  static std::vector<bool> done;
  std::lock_guard<std::mutex> lock(mu);
  if (device < static_cast<int>(done.size()) && done[device]) return Status::OK();
  cudaMemPool_t pool;
  FANOUT_CUDA_RETURN(cudaDeviceGetDefaultMemPool(&pool, device), "finding the memory pool");
  uint64_t keep = UINT64_MAX;
  FANOUT_CUDA_RETURN(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                     "setting the memory pool's release threshold");
  if (device >= static_cast<int>(done.size())) done.resize(device + 1, false);
  done[device] = true;
  return Status::OK();
}
}  // namespace

Status DeviceBuffer::AllocateAsync(size_t bytes, int device, StreamHandle stream,
                                   DeviceBuffer* out) {
  if (CudaDeviceCount() == 0)
    return Status::Unavailable("no CUDA device (or no driver) is present");
  DeviceGuard g(device);
  FANOUT_RETURN_IF_ERROR(KeepPoolMemory(device));
  void* p = nullptr;
  if (bytes > 0)
    FANOUT_CUDA_RETURN(cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream)),
                       ("allocating " + std::to_string(bytes) + " bytes from the pool").c_str());
  DeviceBuffer b;
  b.d_ptr_ = p;
  b.size_ = bytes;
  b.device_ = device;
  b.pooled_ = true;
  *out = std::move(b);
  return Status::OK();
}

Status DeviceBuffer::Allocate(size_t bytes, int device, DeviceBuffer* out) {
  if (CudaDeviceCount() == 0)
    return Status::Unavailable("no CUDA device (or no driver) is present");
  DeviceGuard g(device);
  void* p = nullptr;
  if (bytes > 0)
    FANOUT_CUDA_RETURN(cudaMalloc(&p, bytes),
                       ("allocating " + std::to_string(bytes) + " bytes").c_str());
  DeviceBuffer b;
  b.d_ptr_ = p;
  b.size_ = bytes;
  b.device_ = device;
  *out = std::move(b);
  return Status::OK();
}

Status DeviceBuffer::CopyFromHost(const void* src, size_t bytes, StreamHandle stream) {
  if (bytes > size_)
    return Status::InvalidArgument("copy of " + std::to_string(bytes) + " bytes into a buffer of " +
                                   std::to_string(size_));
  if (bytes == 0) return Status::OK();
  FANOUT_CUDA_RETURN(cudaMemcpyAsync(d_ptr_, src, bytes, cudaMemcpyHostToDevice, S(stream)),
                     "copying to the device");
  FANOUT_CUDA_RETURN(cudaStreamSynchronize(S(stream)), "waiting for a copy to the device");
  return Status::OK();
}

Status DeviceBuffer::CopyToHost(void* dst, size_t bytes, StreamHandle stream) const {
  if (bytes > size_)
    return Status::InvalidArgument("copy of " + std::to_string(bytes) +
                                   " bytes out of a buffer of " + std::to_string(size_));
  if (bytes == 0) return Status::OK();
  FANOUT_CUDA_RETURN(cudaMemcpyAsync(dst, d_ptr_, bytes, cudaMemcpyDeviceToHost, S(stream)),
                     "copying to the host");
  FANOUT_CUDA_RETURN(cudaStreamSynchronize(S(stream)), "waiting for a copy to the host");
  return Status::OK();
}

PinnedBuffer::~PinnedBuffer() { Reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept : h_ptr_(o.h_ptr_), size_(o.size_) {
  o.h_ptr_ = nullptr;
  o.size_ = 0;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    h_ptr_ = o.h_ptr_;
    size_ = o.size_;
    o.h_ptr_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void PinnedBuffer::Reset() {
  if (h_ptr_ != nullptr) cudaFreeHost(h_ptr_);
  h_ptr_ = nullptr;
  size_ = 0;
}

Status PinnedBuffer::Allocate(size_t bytes, PinnedBuffer* out) {
  if (CudaDeviceCount() == 0)
    return Status::Unavailable("no CUDA device (or no driver) is present");
  void* p = nullptr;
  if (bytes > 0)
    FANOUT_CUDA_RETURN(
        cudaHostAlloc(&p, bytes, cudaHostAllocPortable),
        ("allocating " + std::to_string(bytes) + " bytes of pinned host memory").c_str());
  PinnedBuffer b;
  b.h_ptr_ = p;
  b.size_ = bytes;
  *out = std::move(b);
  return Status::OK();
}

Status GpuWorkspace::Grow(PinnedBuffer* b, size_t bytes) {
  if (b->size() >= bytes) return Status::OK();
  return PinnedBuffer::Allocate(bytes + bytes / 2, b);
}

Status GpuWorkspace::Grow(DeviceBuffer* b, size_t bytes, int device) {
  if (b->size() >= bytes) return Status::OK();
  return DeviceBuffer::Allocate(bytes + bytes / 2, device, b);
}

struct GpuFeatureCache::Impl {
  DeviceBuffer table;  // capacity x dim floats
};

GpuFeatureCache::~GpuFeatureCache() = default;

Status GpuFeatureCache::Create(const CacheOptions& o, int device,
                               std::unique_ptr<GpuFeatureCache>* out) {
  if (o.policy != Policy::kStatic)
    return Status::InvalidArgument("the GPU cache holds a static hot set (policy 'static')");
  if (o.feature_dim < 1 || o.capacity_rows < 0 || o.capacity_rows > o.num_nodes)
    return Status::InvalidArgument("GPU cache: capacity " + std::to_string(o.capacity_rows) +
                                   " rows of " + std::to_string(o.feature_dim) + " floats for " +
                                   std::to_string(o.num_nodes) + " nodes");
  int n = CudaDeviceCount();
  if (n == 0) return Status::Unavailable("no CUDA device (or no driver) is present");
  if (device < 0 || device >= n)
    return Status::InvalidArgument("CUDA device " + std::to_string(device) + " is outside [0, " +
                                   std::to_string(n) + ")");
  std::unique_ptr<GpuFeatureCache> c(new GpuFeatureCache());
  c->options_ = o;
  c->device_ = device;
  c->impl_ = std::make_unique<Impl>();
  c->slot_of_.assign(static_cast<size_t>(o.num_nodes), -1);
  FANOUT_RETURN_IF_ERROR(DeviceBuffer::Allocate(
      static_cast<size_t>(o.capacity_rows * o.feature_dim) * 4, device, &c->impl_->table));
  *out = std::move(c);
  return Status::OK();
}

int64_t GpuFeatureCache::device_memory_bytes() const {
  return static_cast<int64_t>(impl_->table.size());
}

CacheStats GpuFeatureCache::stats() const {
  CacheStats s;
  s.lookups = lookups_.load();
  s.hits = hits_.load();
  s.bytes_from_cache = s.hits * options_.feature_dim * 4;
  return s;
}

Status GpuFeatureCache::Insert(ArrayView<const int64_t> ids, const float* rows,
                               StreamHandle stream) {
  DeviceGuard g(device_);
  const int64_t d = options_.feature_dim;
  float* table = static_cast<float*>(impl_->table.data());
  for (size_t i = 0; i < ids.size() && used_ < options_.capacity_rows; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= options_.num_nodes || slot_of_[id] >= 0) continue;
    FANOUT_CUDA_RETURN(
        cudaMemcpyAsync(table + used_ * d, rows + i * d, d * 4, cudaMemcpyHostToDevice, S(stream)),
        "uploading a hot row");
    slot_of_[id] = static_cast<int32_t>(used_++);
  }
  FANOUT_CUDA_RETURN(cudaStreamSynchronize(S(stream)), "waiting for the hot rows");
  return Status::OK();
}

Status GpuFeatureCache::Gather(ArrayView<const int64_t> ids, float* d_out,
                               std::vector<int64_t>* misses, GpuWorkspace* ws,
                               StreamHandle stream) {
  DeviceGuard g(device_);
  const size_t n = ids.size();
  // Pairs (slot, position) in pinned memory: [slots of hits][positions of hits].
  FANOUT_RETURN_IF_ERROR(GpuWorkspace::Grow(&ws->h_hits, 2 * n * 8));
  int64_t* slots = static_cast<int64_t*>(ws->h_hits.data());
  std::vector<int64_t>& m = *misses;
  const size_t m0 = m.size();  // misses are appended
  int64_t hits = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= options_.num_nodes)
      return IdOutOfRange(id, i, 0, options_.num_nodes, kNoPosition);
    int32_t s = slot_of_[id];
    if (s < 0) {
      m.push_back(static_cast<int64_t>(i));
    } else {
      slots[hits++] = s;
    }
  }
  lookups_ += static_cast<int64_t>(n);
  hits_ += hits;
  if (hits == 0) return Status::OK();
  // Positions of the hits follow the slots (the complement of the misses).
  int64_t* pos = slots + hits;
  size_t k = 0, mi = m0;
  for (size_t i = 0; i < n; ++i) {
    if (mi < m.size() && m[mi] == static_cast<int64_t>(i)) {
      ++mi;
      continue;
    }
    pos[k++] = static_cast<int64_t>(i);
  }
  const size_t bytes = static_cast<size_t>(2 * hits) * 8;
  FANOUT_RETURN_IF_ERROR(GpuWorkspace::Grow(&ws->d_hits, bytes, device_));
  FANOUT_CUDA_RETURN(
      cudaMemcpyAsync(ws->d_hits.data(), slots, bytes, cudaMemcpyHostToDevice, S(stream)),
      "copying hit indices to the device");
  const int64_t* d_pairs = static_cast<const int64_t*>(ws->d_hits.data());
  return LaunchCopyRows(static_cast<const float*>(impl_->table.data()), d_pairs, d_pairs + hits,
                        hits, options_.feature_dim, d_out, S(stream));
}

Status GpuFeatureCache::ScatterRows(ArrayView<const int64_t> positions, const float* d_rows,
                                    float* d_out, GpuWorkspace* ws, StreamHandle stream) {
  DeviceGuard g(device_);
  const int64_t n = static_cast<int64_t>(positions.size()), d = options_.feature_dim;
  if (n == 0) return Status::OK();
  // Index layout: [identity rows 0..n) [positions].
  const size_t bytes = static_cast<size_t>(2 * n) * 8;
  FANOUT_RETURN_IF_ERROR(GpuWorkspace::Grow(&ws->h_misses, bytes));
  int64_t* index = static_cast<int64_t*>(ws->h_misses.data());
  for (int64_t j = 0; j < n; ++j) {
    index[j] = j;
    index[n + j] = positions[j];
  }
  FANOUT_RETURN_IF_ERROR(GpuWorkspace::Grow(&ws->d_misses, bytes, device_));
  FANOUT_CUDA_RETURN(
      cudaMemcpyAsync(ws->d_misses.data(), index, bytes, cudaMemcpyHostToDevice, S(stream)),
      "copying miss positions to the device");
  const int64_t* d_index = static_cast<const int64_t*>(ws->d_misses.data());
  return LaunchCopyRows(d_rows, d_index, d_index + n, n, d, d_out, S(stream));
}

Status GpuFeatureCache::ScatterMisses(ArrayView<const int64_t> positions, const float* host_rows,
                                      float* d_out, GpuWorkspace* ws, StreamHandle stream) {
  DeviceGuard g(device_);
  const int64_t n = static_cast<int64_t>(positions.size()), d = options_.feature_dim;
  if (n == 0) return Status::OK();
  const size_t row_bytes = static_cast<size_t>(n * d) * 4;
  FANOUT_RETURN_IF_ERROR(GpuWorkspace::Grow(&ws->d_rows, row_bytes, device_));
  FANOUT_CUDA_RETURN(
      cudaMemcpyAsync(ws->d_rows.data(), host_rows, row_bytes, cudaMemcpyHostToDevice, S(stream)),
      "copying miss rows to the device");
  return ScatterRows(positions, static_cast<const float*>(ws->d_rows.data()), d_out, ws, stream);
}

Status GpuFeatureCache::Synchronize(StreamHandle stream) {
  DeviceGuard g(device_);
  FANOUT_CUDA_RETURN(cudaStreamSynchronize(S(stream)), "synchronizing the stream");
  return Status::OK();
}

Status MeasureGatherBandwidth(int64_t rows, int64_t dim, int64_t batch, int iterations, int device,
                              double* gather_bytes_per_s, double* d2d_bytes_per_s) {
  if (CudaDeviceCount() == 0)
    return Status::Unavailable("no CUDA device (or no driver) is present");
  DeviceGuard g(device);
  DeviceBuffer table, out, idx, copy_dst;
  const size_t row_bytes = static_cast<size_t>(dim) * 4,
               out_bytes = static_cast<size_t>(batch) * row_bytes;
  FANOUT_RETURN_IF_ERROR(
      DeviceBuffer::Allocate(static_cast<size_t>(rows) * row_bytes, device, &table));
  FANOUT_RETURN_IF_ERROR(DeviceBuffer::Allocate(out_bytes, device, &out));
  FANOUT_RETURN_IF_ERROR(DeviceBuffer::Allocate(out_bytes, device, &copy_dst));
  std::vector<int64_t> pairs(2 * batch);
  uint64_t x = 88172645463325252ULL;
  for (int64_t i = 0; i < batch; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    pairs[i] = static_cast<int64_t>(x % static_cast<uint64_t>(rows));
    pairs[batch + i] = i;
  }
  FANOUT_RETURN_IF_ERROR(DeviceBuffer::Allocate(pairs.size() * 8, device, &idx));
  FANOUT_RETURN_IF_ERROR(idx.CopyFromHost(pairs.data(), pairs.size() * 8, nullptr));
  FANOUT_CUDA_RETURN(cudaMemset(table.data(), 1, table.size()), "filling the table");
  cudaEvent_t a, b;
  FANOUT_CUDA_RETURN(cudaEventCreate(&a), "creating an event");
  FANOUT_CUDA_RETURN(cudaEventCreate(&b), "creating an event");
  const int64_t* d_pairs = static_cast<const int64_t*>(idx.data());
  auto time_it = [&](auto&& body, double* out_rate) -> Status {
    FANOUT_RETURN_IF_ERROR(body());  // warm-up
    FANOUT_CUDA_RETURN(cudaEventRecord(a, nullptr), "recording an event");
    for (int it = 0; it < iterations; ++it) FANOUT_RETURN_IF_ERROR(body());
    FANOUT_CUDA_RETURN(cudaEventRecord(b, nullptr), "recording an event");
    FANOUT_CUDA_RETURN(cudaEventSynchronize(b), "waiting for an event");
    float ms = 0;
    FANOUT_CUDA_RETURN(cudaEventElapsedTime(&ms, a, b), "reading an event");
    *out_rate = static_cast<double>(out_bytes) * iterations / (ms * 1e-3);
    return Status::OK();
  };
  Status st = time_it(
      [&]() {
        return LaunchCopyRows(static_cast<const float*>(table.data()), d_pairs, d_pairs + batch,
                              batch, dim, static_cast<float*>(out.data()), nullptr);
      },
      gather_bytes_per_s);
  Status copy_st =
      !st.ok() ? Status::OK()
               : time_it(
                     [&]() -> Status {
                       FANOUT_CUDA_RETURN(cudaMemcpyAsync(copy_dst.data(), out.data(), out_bytes,
                                                          cudaMemcpyDeviceToDevice, nullptr),
                                          "device-to-device copy");
                       return Status::OK();
                     },
                     d2d_bytes_per_s);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return st.ok() ? copy_st : st;
}

}  // namespace fanout::cache
