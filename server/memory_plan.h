// Where a server holds its partition (docs/DESIGN.md, "Memory tiers"):
// features in memory or on disk (the feature file read with io_uring under
// a byte-budgeted cache), neighbor ids in 32 or 64 bits, edge ids from the
// start or read on the first request that needs them. Decided from
// meta.json alone, before anything is loaded, against the server's memory
// limit (--memory-limit, else the cgroup's limit or physical memory).
#ifndef FANOUT_SERVER_MEMORY_PLAN_H_
#define FANOUT_SERVER_MEMORY_PLAN_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "datasets/partition_store.h"

namespace fanout::server {

struct ServerOptions;

struct MemoryPlan {
  bool features_on_disk = false;
  bool edge_ids_at_start = true;  // false: read on demand (the first request asking for them)
  int index_bits = 64;
  int64_t limit_bytes = 0;    // the memory limit planned against
  std::string limit_source;   // where it came from
  int64_t held_bytes = 0;     // the arrays held at start (the cache budget included)
  int64_t feature_bytes = 0;  // the partition's feature rows (in memory or on disk)
  int64_t edge_id_bytes = 0;  // its edge ids (held or not)
  int64_t cache_bytes = 0;    // the disk tier's cache budget (features on disk)
  std::string why;            // one line for the ready line and /stats

  std::string FeaturesTier() const { return features_on_disk ? "disk" : "memory"; }
};

// InvalidArgument naming the flag where the options cannot be met: disk
// features without a feature file, auto that does not fit without one,
// 32-bit ids for 2^31 nodes or more.
Status PlanMemory(const datasets::DatasetMeta& meta, int part, const ServerOptions& options,
                  MemoryPlan* out);

}  // namespace fanout::server

#endif  // FANOUT_SERVER_MEMORY_PLAN_H_
