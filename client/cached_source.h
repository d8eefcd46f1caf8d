// CachedSource: a Source whose feature fetches consult a FeatureCache first.
// Hits are copied from the cache, only misses go to the inner source (the
// servers), fetched rows are offered back to the cache (SIEVE admits them),
// and the output is bit for bit what the inner source alone returns.
//
// Hot-set selection for the initial contents:
//   SelectHotByDegree     the highest-degree nodes (PaGraph), from the
//                         servers' degree RPC;
//   SelectHotByPresampling the nodes most often reached by sampling a few
//                         batches ahead of training (GNNLab).
#ifndef FANOUT_CLIENT_CACHED_SOURCE_H_
#define FANOUT_CLIENT_CACHED_SOURCE_H_

#include <memory>
#include <vector>

#include "cache/feature_cache.h"
#include "client/source.h"

namespace fanout::client {

class CachedSource : public Source {
 public:
  CachedSource(std::shared_ptr<Source> inner, std::shared_ptr<cache::FeatureCache> cache)
      : inner_(std::move(inner)), cache_(std::move(cache)) {}
  Status NewSession(std::unique_ptr<Session>* out) override;
  int64_t num_nodes() const override { return inner_->num_nodes(); }
  int64_t feature_dim() const override { return inner_->feature_dim(); }
  int64_t num_classes() const override { return inner_->num_classes(); }
  std::vector<ReplicaHealth> Health() const override { return inner_->Health(); }
  std::string description() const override;
  cache::FeatureCache& cache() { return *cache_; }

 private:
  std::shared_ptr<Source> inner_;
  std::shared_ptr<cache::FeatureCache> cache_;
};

// The `k` nodes of highest degree (ties: lower id first).
Status SelectHotByDegree(Session& session, int64_t num_nodes, int64_t k, std::vector<int64_t>* out);

// The `k` nodes appearing most often in the n_id of `batches` sampled batches
// of `batch_size` seeds drawn from `seeds` with `seed` (ties: lower id first).
Status SelectHotByPresampling(Session& session, int64_t num_nodes,
                              const std::vector<int64_t>& seeds,
                              const sampler::MultiHopOptions& options, int64_t batch_size,
                              int64_t batches, uint64_t seed, int64_t k, std::vector<int64_t>* out);

// Fetches the rows of `hot` through `session` and inserts them into `cache`.
Status FillCache(Session& session, const std::vector<int64_t>& hot, cache::FeatureCache* cache);

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_CACHED_SOURCE_H_
