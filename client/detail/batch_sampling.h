// One batch's sampling for the loaders (client/batch_loader.cc, internal to
// client/): client/batch_sampling.cc.
#ifndef FANOUT_CLIENT_DETAIL_BATCH_SAMPLING_H_
#define FANOUT_CLIENT_DETAIL_BATCH_SAMPLING_H_

#include <cstdint>
#include <vector>

#include "client/batch_loader.h"
#include "client/buffer_pool.h"

namespace fanout::client::detail {

// What a batch's sampling needs of the options, for `count` seeds (or seed
// edges, `link`): fanouts, times, heterogeneous fanouts. Throws
// std::invalid_argument naming what is wrong.
void CheckSampling(const Source& source, const LoaderOptions& options, size_t count, bool link);

// Link batches: negatives, then the seed nodes (distinct endpoints,
// ascending; temporal: every endpoint, with its edge's time) and the label
// tensors. `positions` index `links` and options.input_time.
Status LinkSeedNodes(const Source& source, const LoaderOptions& options, const LinkSeeds& links,
                     Session* session, ArrayView<const int64_t> positions, uint64_t request_seed,
                     std::vector<int64_t>* nodes, std::vector<int64_t>* times, Batch* out);

// The sampled subgraph of `seeds` (temporal: with one time each), then
// features, labels and ids. `pool` (may be null): where x and edge_index
// take their memory.
Status SampleAndFetch(const Source& source, const LoaderOptions& options, Session* session,
                      DeviceFeatureFetcher* fetcher, ArrayView<const int64_t> seeds,
                      ArrayView<const int64_t> times, uint64_t request_seed, Batch* out,
                      BufferPool* pool = nullptr);

// An int64 array of `v`'s values.
Array Int64Array(ArrayView<const int64_t> v);

}  // namespace fanout::client::detail

#endif  // FANOUT_CLIENT_DETAIL_BATCH_SAMPLING_H_
