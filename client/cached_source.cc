#include "client/cached_source.h"

#include <algorithm>
#include <numeric>

#include "common/random.h"

namespace fanout::client {
namespace {

class CachedSession : public Session {
 public:
  CachedSession(std::unique_ptr<Session> inner, cache::FeatureCache* cache)
      : inner_(std::move(inner)), cache_(cache) {}

  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                const sampler::MultiHopOptions& options, sampler::SampledSubgraph* out) override {
    Status st = inner_->Sample(seeds, request_seed, options, out);
    Sync();
    return st;
  }

  Status Features(ArrayView<const int64_t> ids, float* out) override {
    const int64_t d = cache_->options().feature_dim;
    misses_.clear();
    FANOUT_RETURN_IF_ERROR(cache_->Lookup(ids, out, &misses_));
    const int64_t hits = static_cast<int64_t>(ids.size() - misses_.size());
    stats_.cache_lookups += static_cast<int64_t>(ids.size());
    stats_.cache_hits += hits;
    stats_.cache_bytes += hits * d * 4;
    if (misses_.empty()) return Status::OK();
    miss_ids_.resize(misses_.size());
    for (size_t j = 0; j < misses_.size(); ++j) miss_ids_[j] = ids[misses_[j]];
    miss_rows_.resize(misses_.size() * d);
    Status st = inner_->Features(miss_ids_, miss_rows_.data());
    Sync();
    FANOUT_RETURN_IF_ERROR(st);
    for (size_t j = 0; j < misses_.size(); ++j)
      std::copy_n(miss_rows_.data() + j * d, d, out + misses_[j] * d);
    cache_->Admit(miss_ids_, miss_rows_.data());
    return Status::OK();
  }

  Status Labels(ArrayView<const int64_t> ids, int64_t* out) override {
    return Wrap(inner_->Labels(ids, out));
  }
  Status OriginalIds(ArrayView<const int64_t> ids, int64_t* out) override {
    return Wrap(inner_->OriginalIds(ids, out));
  }
  Status Degrees(ArrayView<const int64_t> ids, int64_t* out) override {
    return Wrap(inner_->Degrees(ids, out));
  }
  Status SampleTemporal(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                        uint64_t request_seed, const sampler::MultiHopOptions& options,
                        sampler::SampledSubgraph* out) override {
    Status st = inner_->SampleTemporal(seeds, seed_times, request_seed, options, out);
    Sync();
    return st;
  }
  Status HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst, uint8_t* exists,
                  int edge_type) override {
    return Wrap(inner_->HasEdges(src, dst, exists, edge_type));
  }
  Status SplitNodes(int split, std::vector<int64_t>* out) override {
    return Wrap(inner_->SplitNodes(split, out));
  }
  Status WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys, bool weighted,
                  int64_t* next, int edge_type = -1) override {
    Status st = inner_->WalkStep(nodes, keys, weighted, next, edge_type);
    Sync();
    return st;
  }
  Status PprPush(const sampler::PprPushRequest& in, sampler::PprPushResult* out) override {
    Status st = inner_->PprPush(in, out);
    Sync();
    return st;
  }
  bool StoresIncoming() const override { return inner_->StoresIncoming(); }
  std::vector<PartitionPath> Paths() const override { return inner_->Paths(); }

 private:
  // Carries the inner session's network counters into ours.
  void Sync() {
    const SessionStats& in = inner_->stats();
    stats_.network_wait_s = in.network_wait_s;
    std::copy(std::begin(in.stages), std::end(in.stages), std::begin(stats_.stages));
    stats_.feature_bytes = in.feature_bytes;
    stats_.requests = in.requests;
    stats_.thrift_bytes = in.thrift_bytes;
    stats_.ucx_bytes = in.ucx_bytes;
    stats_.local_bytes = in.local_bytes;
    stats_.local_edges = in.local_edges;
    stats_.local_rows = in.local_rows;
    stats_.staged_bytes = in.staged_bytes;
    stats_.fallbacks = in.fallbacks;
    stats_.retries = in.retries;
    stats_.failovers = in.failovers;
    stats_.health_abandons = in.health_abandons;
    stats_.data_faults = in.data_faults;
  }
  Status Wrap(Status st) {
    Sync();
    return st;
  }
  std::unique_ptr<Session> inner_;
  cache::FeatureCache* cache_;
  std::vector<int64_t> misses_, miss_ids_;
  std::vector<float> miss_rows_;
};

std::vector<int64_t> TopK(const std::vector<int64_t>& score, int64_t k) {
  std::vector<int64_t> ids(score.size());
  std::iota(ids.begin(), ids.end(), 0);
  k = std::min<int64_t>(k, static_cast<int64_t>(ids.size()));
  auto better = [&](int64_t a, int64_t b) {
    return score[a] != score[b] ? score[a] > score[b] : a < b;
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
  ids.resize(k);
  return ids;
}

}  // namespace

Status CachedSource::NewSession(std::unique_ptr<Session>* out) {
  std::unique_ptr<Session> inner;
  FANOUT_RETURN_IF_ERROR(inner_->NewSession(&inner));
  *out = std::make_unique<CachedSession>(std::move(inner), cache_.get());
  return Status::OK();
}

std::string CachedSource::description() const {
  return inner_->description() + " with a " + cache::PolicyName(cache_->options().policy) +
         " feature cache of " + std::to_string(cache_->capacity()) + " rows";
}

Status SelectHotByDegree(Session& session, int64_t num_nodes, int64_t k,
                         std::vector<int64_t>* out) {
  std::vector<int64_t> degree(static_cast<size_t>(num_nodes)), ids;
  const int64_t step = 1 << 20;
  for (int64_t a = 0; a < num_nodes; a += step) {
    int64_t b = std::min(num_nodes, a + step);
    ids.resize(b - a);
    std::iota(ids.begin(), ids.end(), a);
    FANOUT_RETURN_IF_ERROR(session.Degrees(ids, degree.data() + a));
  }
  *out = TopK(degree, k);
  return Status::OK();
}

Status SelectHotByPresampling(Session& session, int64_t num_nodes,
                              const std::vector<int64_t>& seeds,
                              const sampler::MultiHopOptions& options, int64_t batch_size,
                              int64_t batches, uint64_t seed, int64_t k,
                              std::vector<int64_t>* out) {
  if (seeds.empty()) return Status::InvalidArgument("pre-sampling needs seeds");
  std::vector<int64_t> count(static_cast<size_t>(num_nodes), 0),
      batch(static_cast<size_t>(batch_size));
  SplitMix64 rng(Mix64(seed ^ 0x9e3779b97f4a7c15ULL));
  sampler::SampledSubgraph sub;
  for (int64_t b = 0; b < batches; ++b) {
    for (auto& v : batch) v = seeds[DrawBelow(rng.Next(), seeds.size())];
    FANOUT_RETURN_IF_ERROR(session.Sample(batch, Mix64(seed + b), options, &sub));
    for (int64_t v : sub.n_id) count[v]++;
  }
  *out = TopK(count, k);
  return Status::OK();
}

Status FillCache(Session& session, const std::vector<int64_t>& hot, cache::FeatureCache* cache) {
  const int64_t d = cache->options().feature_dim;
  const size_t step = 1 << 16;
  std::vector<float> rows;
  for (size_t a = 0; a < hot.size(); a += step) {
    size_t b = std::min(hot.size(), a + step);
    rows.resize((b - a) * d);
    ArrayView<const int64_t> ids(hot.data() + a, b - a);
    FANOUT_RETURN_IF_ERROR(session.Features(ids, rows.data()));
    cache->Insert(ids, rows.data());
  }
  return Status::OK();
}

}  // namespace fanout::client
