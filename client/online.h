// Online inference: one query's k-hop subgraph and features, with a
// deadline, for a model's forward pass (docs/TENANTS.md, "Online inference").
//
// A query is the batch SampleBatch builds for its seeds (the same seeds and
// request seed give the same tensors as a NodeLoader with these options):
// one round trip per hop, to every partition that holds a frontier node at
// once, and one for the features (none to partitions whose export is read
// here). The servers serve it ahead of training work where the client's
// tenant has class `online`.
//
// The deadline is the caller's: Query returns DeadlineExceeded once it has
// passed, whatever the servers do. The query itself goes on in the
// background on its worker (each call is bounded by the cluster's
// call_timeout_ms), its result dropped; a worker is busy until then, so a
// serving process gives its cluster a call timeout near its deadline and
// enough workers for its concurrency.
//
// Thread safety: Query from any number of threads at once (at most
// `workers` run at a time, the others wait their turn within their
// deadline).
#ifndef FANOUT_CLIENT_ONLINE_H_
#define FANOUT_CLIENT_ONLINE_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "client/batch_loader.h"
#include "client/source.h"

namespace fanout::client {

struct QueryOptions {
  std::vector<int64_t> num_neighbors = {10, 10};  // per hop (-1 = all neighbors)
  bool features = true, labels = false, edge_ids = false;
  int deadline_ms = 0;        // 0 = none (the cluster's call timeout bounds each call)
  uint64_t request_seed = 0;  // the sampling seed: the loader's batch for the same seeds
  // A PPR neighborhood instead of k hops (client/ppr.h): one hop, each
  // seed's num_neighbors[0] nodes of highest approximate personalized
  // PageRank (ppr_options' alpha, eps and max_rounds), edge weights their
  // scores; the pushes run on the servers that own the rows.
  bool ppr = false;
  PprOptions ppr_options;
};

class OnlineSampler {
 public:
  static constexpr int kMaxSeeds = 4096;

  // `workers` (1..256): queries in flight at once, each with a session of
  // its own.
  static Status Create(std::shared_ptr<Source> source, int workers,
                       std::unique_ptr<OnlineSampler>* out);
  ~OnlineSampler();  // waits for the queries in flight (each bounded by the call timeout)

  // InvalidArgument for no seeds, more than kMaxSeeds, an id outside the
  // graph or a bad fanout; DeadlineExceeded once options.deadline_ms passed;
  // else what the servers said.
  Status Query(const std::vector<int64_t>& seeds, const QueryOptions& options, Batch* out);

  struct Stats {
    int64_t queries = 0, failed = 0, deadline_exceeded = 0;
  };
  Stats stats() const;

 private:
  struct Call;
  OnlineSampler() = default;
  void Work();
  std::shared_ptr<Source> source_;
  std::vector<std::thread> workers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Call>> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;                        // GUARDED_BY(mu_)
  Stats stats_;                              // GUARDED_BY(mu_)
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_ONLINE_H_
