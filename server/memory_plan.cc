#include "server/memory_plan.h"

#include <algorithm>

#include "datasets/bounded_partition.h"
#include "server/partition_server.h"

namespace fanout::server {

namespace {
std::string Bytes(int64_t b) { return datasets::FormatBytes(static_cast<double>(b)); }
}  // namespace

Status PlanMemory(const datasets::DatasetMeta& meta, int part, const ServerOptions& o,
                  MemoryPlan* out) {
  if (part < 0 || part >= meta.num_parts)
    return Status::InvalidArgument("partition " + std::to_string(part) + " is outside [0, " +
                                   std::to_string(meta.num_parts) + ")");
  if (o.features != "memory" && o.features != "disk" && o.features != "auto")
    return Status::InvalidArgument("--features must be memory, disk or auto, not '" + o.features +
                                   "'");
  if (o.edge_ids != "memory" && o.edge_ids != "on-demand" && o.edge_ids != "auto")
    return Status::InvalidArgument("--edge-ids must be memory, on-demand or auto, not '" +
                                   o.edge_ids + "'");
  MemoryPlan p;
  const bool fits32 = meta.num_nodes <= int64_t{INT32_MAX};
  if (o.index_bits == 32 && !fits32)
    return Status::InvalidArgument("--index-bits 32: dataset " + meta.name + " has " +
                                   std::to_string(meta.num_nodes) +
                                   " nodes, more than 32-bit ids can name");
  if (o.index_bits != 0 && o.index_bits != 32 && o.index_bits != 64)
    return Status::InvalidArgument("--index-bits must be 32, 64 or 0 (auto), not " +
                                   std::to_string(o.index_bits));
  p.index_bits = o.index_bits != 0 ? o.index_bits : (fits32 ? 32 : 64);
  if (o.memory_limit_bytes > 0) {
    p.limit_bytes = o.memory_limit_bytes;
    p.limit_source = "--memory-limit";
  } else {
    p.limit_bytes = datasets::UsableMemoryBytes(&p.limit_source);
  }
  // What the partition's arrays take, piece by piece (meta.json's counts).
  const int64_t n = meta.offsets[part + 1] - meta.offsets[part];
  const int64_t e = static_cast<int>(meta.stats.edges.size()) == meta.num_parts
                        ? meta.stats.edges[part]
                        : meta.num_edges;  // no per-partition count: the whole graph's, at most
  const int64_t row = meta.feature_dim * FeatureDTypeSize(meta.feature_dtype);
  const int64_t base = (n + 1) * 8 + e * (p.index_bits / 8) + n * 8 /* original ids */ +
                       (meta.has_labels ? n * 8 : 0) + (meta.has_split ? n : 0) +
                       (meta.has_edge_times ? e * 8 + e * 8 /* time index */ : 0) +
                       (meta.hetero.empty() ? 0 : e * 4) + (meta.has_edge_weights ? e * 4 : 0);
  p.feature_bytes = n * row;
  p.edge_id_bytes = e * 8;
  // Headroom for requests, replies and the process itself: a fifth of the limit.
  const int64_t fit = p.limit_bytes / 5 * 4;
  const bool files = meta.has_feature_files() && row > 0;
  // Features.
  if (o.features == "disk") {
    if (!files)
      return Status::InvalidArgument(
          "--features disk: dataset " + meta.name +
          " keeps its features in its store, not in feature files (write them with "
          "fanout-partition --feature-file)");
    p.features_on_disk = true;
  } else if (o.features == "auto") {
    p.features_on_disk = files && base + p.feature_bytes > fit;
    if (!files && base + p.feature_bytes > fit)
      return Status::InvalidArgument(
          "partition " + std::to_string(part) + " of " + meta.name + " needs " +
          Bytes(base + p.feature_bytes) + " with its features in memory, over " + Bytes(fit) +
          " (4/5 of the memory limit, " + Bytes(p.limit_bytes) + " from " + p.limit_source +
          "), and its dataset has no feature files for the disk tier: re-partition with "
          "fanout-partition --feature-file, raise --memory-limit, or give --features memory to "
          "load it anyway");
  }
  // The disk tier's cache: as asked, else a quarter of the feature bytes
  // within what the limit leaves.
  if (p.features_on_disk) {
    if (o.feature_memory_bytes >= 0) {
      p.cache_bytes = o.feature_memory_bytes;
    } else {
      p.cache_bytes = std::max<int64_t>(0, std::min(p.feature_bytes / 4, fit - base));
    }
  }
  const int64_t features_held = p.features_on_disk ? p.cache_bytes : p.feature_bytes;
  // Edge ids.
  if (o.edge_ids == "memory")
    p.edge_ids_at_start = true;
  else if (o.edge_ids == "on-demand")
    p.edge_ids_at_start = false;
  else
    p.edge_ids_at_start = base + features_held + p.edge_id_bytes <= fit;
  p.held_bytes = base + features_held + (p.edge_ids_at_start ? p.edge_id_bytes : 0);
  p.why = "features " + p.FeaturesTier() +
          (p.features_on_disk
               ? " (" + Bytes(p.feature_bytes) + " in the file, cache " + Bytes(p.cache_bytes) + ")"
               : " (" + Bytes(p.feature_bytes) + ")") +
          ", " + std::to_string(p.index_bits) + "-bit neighbor ids, edge ids " +
          (p.edge_ids_at_start ? "held" : "read on first use") + "; " + Bytes(p.held_bytes) +
          " of arrays for a limit of " + Bytes(p.limit_bytes) + " (" + p.limit_source + ")";
  *out = std::move(p);
  return Status::OK();
}

}  // namespace fanout::server
