#include "client/device_features.h"

#include <algorithm>
#include <numeric>

namespace fanout::client {

DeviceFeatureFetcher::DeviceFeatureFetcher(cache::GpuFeatureCache* cache) : cache_(cache) {
  ws_.device = cache_->device();
}

Status DeviceFeatureFetcher::EnsureStream() {
  if (stream_.valid()) return Status::OK();
  return cache::Stream::Create(cache_->device(), &stream_);
}

Status DeviceFeatureFetcher::Fetch(Session& session, ArrayView<const int64_t> ids, float* d_out,
                                   cache::StreamHandle stream) {
  const int64_t d = cache_->options().feature_dim;
  misses_.clear();
  FANOUT_RETURN_IF_ERROR(cache_->Gather(ids, d_out, &misses_, &ws_, stream));
  const size_t m = misses_.size();
  stats_.rows += static_cast<int64_t>(ids.size());
  stats_.hit_rows += static_cast<int64_t>(ids.size() - m);
  if (m > 0) {
    // Misses in id order: each server's rows are then one run of the
    // destination (partitions own contiguous id ranges), which the direct
    // route receives as a single message per server.
    order_.resize(m);
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(),
              [&](int64_t a, int64_t b) { return ids[misses_[a]] < ids[misses_[b]]; });
    miss_ids_.resize(m);
    positions_.resize(m);
    for (size_t j = 0; j < m; ++j) {
      positions_[j] = misses_[order_[j]];
      miss_ids_[j] = ids[positions_[j]];
    }
    const size_t bytes = m * static_cast<size_t>(d) * 4;
    bool done = false;
    if (try_direct_) {
      FANOUT_RETURN_IF_ERROR(cache::GpuWorkspace::Grow(&ws_.d_rows, bytes, cache_->device()));
      Status st = session.FeaturesToDevice(miss_ids_, static_cast<float*>(ws_.d_rows.data()),
                                           cache_->device());
      if (st.ok()) {
        FANOUT_RETURN_IF_ERROR(cache_->ScatterRows(
            positions_, static_cast<const float*>(ws_.d_rows.data()), d_out, &ws_, stream));
        stats_.direct_bytes += static_cast<int64_t>(bytes);
        done = true;
      } else if (st.code() == Status::Code::kNotSupported ||
                 st.code() == Status::Code::kUnavailable ||
                 st.code() == Status::Code::kInvalidArgument) {
        // Not possible here (or the endpoint failed): stage these rows, and
        // stop asking where the answer cannot change.
        ++stats_.direct_refusals;
        refusal_ = st.message();
        if (st.code() == Status::Code::kNotSupported) try_direct_ = false;
      } else {
        return st;
      }
    }
    if (!done) {
      FANOUT_RETURN_IF_ERROR(cache::GpuWorkspace::Grow(&ws_.h_rows, bytes));
      float* h = static_cast<float*>(ws_.h_rows.data());
      FANOUT_RETURN_IF_ERROR(session.Features(miss_ids_, h));
      FANOUT_RETURN_IF_ERROR(cache_->ScatterMisses(positions_, h, d_out, &ws_, stream));
      stats_.staged_bytes += static_cast<int64_t>(bytes);
    }
  }
  return cache_->Synchronize(stream);
}

}  // namespace fanout::client
