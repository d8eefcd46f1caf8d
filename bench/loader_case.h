// What the loader benchmarks share (loader_bench, updates_bench,
// network_client): the loader settings of a case, and a timed run of a
// BatchLoader. Header-only: its users link the client already.
#ifndef FANOUT_BENCH_LOADER_CASE_H_
#define FANOUT_BENCH_LOADER_CASE_H_

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "client/batch_loader.h"

namespace fanout::bench {

// Batches in order, no labels or edge ids, 2 workers, 4 batches ahead, one
// rank.
inline client::LoaderOptions LoaderCaseOptions(int64_t batch_size, std::vector<int64_t> fanouts,
                                               bool features) {
  client::LoaderOptions o;
  o.batch_size = batch_size;
  o.fanouts = std::move(fanouts);
  o.shuffle = false;
  o.features = features;
  o.labels = false;
  o.edge_ids = false;
  o.num_workers = 2;
  o.prefetch = 4;
  o.rank = 0;
  o.world_size = 1;
  return o;
}

struct TimedBatches {
  int64_t batches = 0, edges = 0;
  double seconds = 0;
  double edges_per_s() const { return seconds > 0 ? static_cast<double>(edges) / seconds : 0; }
};

// Takes batches from `loader` for `seconds` (epoch after epoch: at an
// epoch's end the next call starts another), counting them and their edges.
// The caller warms the loader up first.
inline TimedBatches TakeBatches(client::BatchLoader& loader, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  TimedBatches t;
  client::Batch b;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds)) {
    if (!loader.Next(&b)) continue;
    ++t.batches;
    t.edges += b.edge_index.size(1);
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_LOADER_CASE_H_
