// The GPU placement of the feature cache: hot rows live in device memory and a
// CUDA gather kernel writes the hits of a batch straight into a device output
// buffer; the rows of misses (fetched from the servers into host memory) are
// copied in by a scatter kernel. With a CUDA-enabled LibTorch the loader can
// wrap the output as a CUDA tensor; with Debian's CPU-only LibTorch this API
// is used directly.
//
// This header includes no CUDA headers and has the same layout in every
// build. Without a CUDA build, Create() returns NotSupported; without a device
// (or driver), Unavailable. Device memory is owned by move-only DeviceBuffers;
// every call takes an explicit stream (nullptr = the default stream) and
// returns errors as Status, never aborting.
//
// Thread safety: a GpuFeatureCache is read-only after Insert(); Gather(),
// ScatterMisses() and ScatterRows() may run concurrently from several threads,
// each with its own GpuWorkspace, stream and output buffer (the cache keeps no
// per-call scratch of its own; its counters are atomic).
#ifndef FANOUT_CACHE_GPU_FEATURE_CACHE_H_
#define FANOUT_CACHE_GPU_FEATURE_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cache/feature_cache.h"
#include "common/array_view.h"
#include "common/status.h"

namespace fanout::cache {

using StreamHandle = void*;  // a cudaStream_t; nullptr = the default stream

// Number of usable CUDA devices (0 without a CUDA build, a driver or a device).
int CudaDeviceCount();
// Whether this build has CUDA (its cache kernels were compiled with nvcc).
bool CudaBuilt();

// A move-only owner of a CUDA stream (created non-blocking, on one device):
// a loader worker's own stream, so that workers' copies and kernels do not
// serialise on the default stream.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  static Status Create(int device, Stream* out);
  StreamHandle get() const { return s_; }
  bool valid() const { return s_ != nullptr; }

 private:
  void Reset();
  StreamHandle s_ = nullptr;
  int device_ = -1;
};

// A move-only owner of device memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  static Status Allocate(size_t bytes, int device, DeviceBuffer* out);
  // Stream-ordered (RMM's device_buffer(size, stream, mr) is the model): from
  // the device's memory pool (cudaMallocAsync), usable on `stream` in order,
  // kept pooled when freed (no cudaMalloc / cudaFree per batch, no device-wide
  // synchronisation). Freed with cudaFreeAsync on the legacy default stream,
  // so after the work of every blocking stream (PyTorch's default one
  // included) queued before the free; a consumer on a non-blocking stream of
  // its own must synchronise it before dropping the buffer, as with
  // PyTorch's own allocator (record_stream).
  static Status AllocateAsync(size_t bytes, int device, StreamHandle stream, DeviceBuffer* out);
  void* data() const { return d_ptr_; }
  size_t size() const { return size_; }
  int device() const { return device_; }
  // Copies between this buffer and host memory (synchronous on `stream`).
  Status CopyFromHost(const void* src, size_t bytes, StreamHandle stream);
  Status CopyToHost(void* dst, size_t bytes, StreamHandle stream) const;

 private:
  void Reset();
  void* d_ptr_ = nullptr;
  size_t size_ = 0;
  int device_ = -1;
  bool pooled_ = false;  // from AllocateAsync: freed with cudaFreeAsync
};

// A move-only owner of page-locked host memory (cudaHostAlloc): copies from
// it to the device are DMA and truly asynchronous. The staging buffer of the
// data plane's CUDA path: rows that cannot land in device memory directly are
// received here, then copied with cudaMemcpyAsync.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  static Status Allocate(size_t bytes, PinnedBuffer* out);
  void* data() const { return h_ptr_; }
  size_t size() const { return size_; }

 private:
  void Reset();
  void* h_ptr_ = nullptr;
  size_t size_ = 0;
};

// One caller's scratch for the cache's calls: index arrays and miss rows, on
// the host (pinned) and on the device. Used by one thread on one stream; it
// may be reused once that stream has been synchronized. Buffers grow (to 1.5x
// what is asked) and are kept.
struct GpuWorkspace {
  int device = 0;
  PinnedBuffer h_hits, h_misses;  // (slot, position) and (row, position) pairs
  DeviceBuffer d_hits, d_misses;
  PinnedBuffer h_rows;  // staged miss rows
  DeviceBuffer d_rows;  // miss rows on the device
  static Status Grow(PinnedBuffer* b, size_t bytes);
  static Status Grow(DeviceBuffer* b, size_t bytes, int device);
};

class GpuFeatureCache {
 public:
  // options.policy must be kStatic: the device cache holds a fixed hot set.
  static Status Create(const CacheOptions& options, int device,
                       std::unique_ptr<GpuFeatureCache>* out);
  ~GpuFeatureCache();

  // Uploads rows (rows[i] is ids[i]'s row) until the cache is full.
  Status Insert(ArrayView<const int64_t> ids, const float* host_rows, StreamHandle stream);

  // Writes the rows of the cached ids into d_out (device memory, at least
  // ids.size() * feature_dim floats, row i at d_out + i * feature_dim) and
  // appends the positions of the misses to *misses. Returns once the copies
  // and the kernel have been queued on `stream` (ws must outlive them).
  Status Gather(ArrayView<const int64_t> ids, float* d_out, std::vector<int64_t>* misses,
                GpuWorkspace* ws, StreamHandle stream);

  // Copies host rows (row j for positions[j]) into d_out at those positions:
  // one cudaMemcpyAsync into ws->d_rows, then the scatter kernel. host_rows
  // should be pinned (ws->h_rows) for the copy to be asynchronous DMA.
  Status ScatterMisses(ArrayView<const int64_t> positions, const float* host_rows, float* d_out,
                       GpuWorkspace* ws, StreamHandle stream);

  // The same for rows already in device memory (d_rows, row j for positions[j]),
  // e.g. received there by the data plane: no host copy at all.
  Status ScatterRows(ArrayView<const int64_t> positions, const float* d_rows, float* d_out,
                     GpuWorkspace* ws, StreamHandle stream);

  // Waits for the stream.
  Status Synchronize(StreamHandle stream);

  const CacheOptions& options() const { return options_; }
  int device() const { return device_; }
  int64_t size() const { return used_; }
  int64_t device_memory_bytes() const;
  CacheStats stats() const;

 private:
  GpuFeatureCache() = default;
  struct Impl;
  CacheOptions options_;
  int device_ = -1;
  int64_t used_ = 0;
  std::vector<int32_t>
      slot_of_;  // host mirror of the id index: hits are known without a round trip
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> lookups_{0}, hits_{0};
};

// Benchmark helper: gathers `batch` random rows of a `rows` x `dim` device
// table into a device buffer, `iterations` times, and copies the same number
// of bytes device-to-device for comparison. Returns bytes/s of each.
Status MeasureGatherBandwidth(int64_t rows, int64_t dim, int64_t batch, int iterations, int device,
                              double* gather_bytes_per_s, double* d2d_bytes_per_s);

}  // namespace fanout::cache

#endif  // FANOUT_CACHE_GPU_FEATURE_CACHE_H_
