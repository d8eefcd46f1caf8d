// Feature rows into device memory: the GPU feature cache's hits by its gather
// kernel, its misses from the servers by the best route this process has:
//   direct  the data plane receives them into device memory (UCX with CUDA;
//           GPUDirect RDMA between hosts), then a device-to-device scatter;
//   staged  received into pinned host memory, copied with cudaMemcpyAsync on
//           the caller's stream, then scattered (counted as staged bytes).
// No LibTorch here: the loader wraps the output as a CUDA tensor, and the GPU
// check runs this without LibTorch.
#ifndef FANOUT_CLIENT_DEVICE_FEATURES_H_
#define FANOUT_CLIENT_DEVICE_FEATURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cache/gpu_feature_cache.h"
#include "client/source.h"
#include "common/array_view.h"
#include "common/status.h"

namespace fanout::client {

struct DeviceFetchStats {
  int64_t rows = 0;             // rows written
  int64_t hit_rows = 0;         // ... from the device cache
  int64_t direct_bytes = 0;     // miss bytes received straight into device memory
  int64_t staged_bytes = 0;     // miss bytes that went through pinned host memory
  int64_t direct_refusals = 0;  // calls where the direct route was refused and the rows were staged
};

// One per thread (it owns a GpuWorkspace); not thread-safe. The cache may be
// shared by many fetchers.
class DeviceFeatureFetcher {
 public:
  explicit DeviceFeatureFetcher(cache::GpuFeatureCache* cache);

  // Writes the rows of ids into d_out (device memory on the cache's device,
  // ids.size() x feature_dim float32) and returns once they are there (the
  // stream is synchronized; nullptr = the default stream).
  Status Fetch(Session& session, ArrayView<const int64_t> ids, float* d_out,
               cache::StreamHandle stream);

  const DeviceFetchStats& stats() const { return stats_; }
  int64_t feature_dim() const { return cache_->options().feature_dim; }
  int device() const { return cache_->device(); }
  // Why the direct route was last refused ("" if never).
  const std::string& last_refusal() const { return refusal_; }
  // This fetcher's own stream on the cache's device (made on first use): a
  // loader worker's batches are allocated, filled and synchronised on it.
  Status EnsureStream();
  cache::StreamHandle stream() const { return stream_.get(); }

 private:
  cache::GpuFeatureCache* cache_;
  cache::GpuWorkspace ws_;
  cache::Stream stream_;
  std::vector<int64_t> misses_, order_, miss_ids_, positions_;
  bool try_direct_ = true;  // off after the session refused for good (NotSupported)
  DeviceFetchStats stats_;
  std::string refusal_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_DEVICE_FEATURES_H_
