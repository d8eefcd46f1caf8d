// Node partitioners: METIS (k-way on the undirected view), seeded random,
// contiguous ranges, a hash of the original id, and a given assignment (a
// file: one part per line, node by node, as METIS's gpmetis writes it). Each
// returns part[v] in [0, num_parts) for every node.
#ifndef FANOUT_DATASETS_PARTITIONER_H_
#define FANOUT_DATASETS_PARTITIONER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "datasets/dataset.h"

namespace fanout::datasets {

enum class PartitionMethod { kMetis, kRandom, kRange, kHash, kFile };

// "metis", "random", "range", "hash", "file".
Status ParsePartitionMethod(const std::string& name, PartitionMethod* out);
const char* PartitionMethodName(PartitionMethod m);

struct PartitionOptions {
  int num_parts = 1;  // K >= 1
  PartitionMethod method = PartitionMethod::kMetis;
  uint64_t seed = 1;  // random and METIS seed
  // METIS: also balance the edges each part stores (a second constraint)
  // besides its node count. Default on; falls back to nodes only if METIS
  // rejects the two-constraint problem.
  bool metis_balance_edges = true;
  // METIS: allowed imbalance of the node constraint (1.03 = 3%).
  double metis_imbalance = 1.03;
  // Which endpoint stores an edge (for the edge constraint): true = the
  // target (incoming adjacency, the default), false = the source.
  bool store_by_target = true;
  bool quiet = false;
  // kFile: the assignment's path (ReadAssignment's format).
  std::string assignment_path;
};

// Reads an assignment of `n` nodes to `num_parts` parts: one integer per
// line (blank lines and '#' comments skipped), node by node in the input's
// order. Errors name the file and line (a value out of range, too few or too
// many lines). Memory: 4 bytes per node.
Status ReadAssignment(const std::string& path, int64_t n, int num_parts,
                      std::vector<int32_t>* part);

Status ComputePartition(const RawDataset& ds, const PartitionOptions& options,
                        std::vector<int32_t>* part, std::vector<std::string>* notes);

// The methods that need no edges (random, range, hash), for `n` nodes whose
// original ids original_id(v) gives (hash uses them: a node keeps its part
// whatever else the graph holds). Memory: 4 bytes per node for the result,
// plus 8 per node while random shuffles. ComputePartition calls it for them.
Status ComputeNodePartition(int64_t n, const std::function<int64_t(int64_t)>& original_id,
                            const PartitionOptions& options, std::vector<int32_t>* part);

// Nodes, stored edges and cut edges per part for an assignment.
struct PartitionStats {
  std::vector<int64_t> nodes, edges;
  int64_t cut_edges = 0;         // edges whose endpoints lie in different parts
  double edge_cut_fraction = 0;  // cut_edges / num_edges
  double node_balance = 0;       // max nodes / mean nodes
  double edge_balance = 0;       // max stored edges / mean stored edges
};
PartitionStats ComputePartitionStats(const RawDataset& ds, const std::vector<int32_t>& part,
                                     int num_parts, bool store_by_target);
// Fills the fraction and balances from nodes, edges and cut_edges.
void FinishPartitionStats(int64_t num_nodes, int64_t num_edges, PartitionStats* s);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_PARTITIONER_H_
