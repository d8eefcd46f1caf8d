#include "sampler/hetero.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "common/id_range.h"
#include "common/random.h"
#include "sampler/detail/sample_row.h"

namespace fanout::sampler {

NodeRanges::NodeRanges(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  int64_t total = 0;
  for (const auto& r : ranges) {
    if (r.second <= r.first) continue;
    assert(ranges_.empty() || ranges_.back().second <= r.first);  // REQUIRES: ascending, disjoint
    ranges_.push_back(r);
    total += r.second - r.first;
    cum_.push_back(total);
  }
}

int64_t NodeRanges::Id(int64_t i) const {
  assert(i >= 0 && i < count());  // REQUIRES
  const size_t k =
      static_cast<size_t>(std::upper_bound(cum_.begin(), cum_.end(), i) - cum_.begin());
  const int64_t before = k == 0 ? 0 : cum_[k - 1];
  return ranges_[k].first + (i - before);
}

int64_t NodeRanges::IndexOf(int64_t v) const {
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), v,
                       [](int64_t x, const std::pair<int64_t, int64_t>& r) { return x < r.first; });
  if (it == ranges_.begin()) return -1;
  --it;
  if (v >= it->second) return -1;
  const size_t k = static_cast<size_t>(it - ranges_.begin());
  return (k == 0 ? 0 : cum_[k - 1]) + (v - it->first);
}

int32_t HeteroSchema::NodeTypeOf(int64_t v) const {
  assert(!type_bounds.empty() && v >= type_bounds.front() && v < type_bounds.back());  // REQUIRES
  // The last bound <= v; empty ranges share their bound with the next one,
  // so upper_bound skips them.
  const int64_t i =
      std::upper_bound(type_bounds.begin(), type_bounds.end(), v) - type_bounds.begin() - 1;
  return static_cast<int32_t>(i % static_cast<int64_t>(node_types.size()));
}

NodeRanges HeteroSchema::NodesOfType(int32_t t) const {
  const size_t T = node_types.size();
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t i = static_cast<size_t>(t); i + 1 < type_bounds.size(); i += T)
    ranges.emplace_back(type_bounds[i], type_bounds[i + 1]);
  return NodeRanges(ranges);
}

std::string HeteroSchema::EdgeTypeName(int e) const {
  const EdgeType& t = edge_types[static_cast<size_t>(e)];
  return node_types[static_cast<size_t>(t.src)] + "," + t.rel + "," +
         node_types[static_cast<size_t>(t.dst)];
}

Status HeteroSchema::AddEdgeTypeNamed(const std::string& name) {
  const size_t a = name.find(','), b = name.rfind(',');
  EdgeType t;
  if (a != std::string::npos && b != a) {
    t.src = FindNodeType(name.substr(0, a));
    t.rel = name.substr(a + 1, b - a - 1);
    t.dst = FindNodeType(name.substr(b + 1));
  }
  if (a == std::string::npos || b == a || t.src < 0 || t.dst < 0)
    return Status::InvalidArgument("edge type '" + name + "' is not src,rel,dst of the node types");
  edge_types.push_back(std::move(t));
  return Status::OK();
}

int HeteroSchema::FindNodeType(const std::string& name) const {
  for (size_t t = 0; t < node_types.size(); ++t)
    if (node_types[t] == name) return static_cast<int>(t);
  return -1;
}

Status HeteroSchema::FindEdgeType(const std::string& text, int* out) const {
  std::string known;
  int found = -1, matches = 0;
  for (int e = 0; e < num_edge_types(); ++e) {
    known += (e ? "; " : "") + EdgeTypeName(e);
    if (EdgeTypeName(e) == text) {
      *out = e;
      return Status::OK();
    }
    if (edge_types[static_cast<size_t>(e)].rel == text) found = e, ++matches;
  }
  if (matches == 1) {
    *out = found;
    return Status::OK();
  }
  return Status::InvalidArgument(
      "edge type '" + text + "' " +
      (matches > 1 ? "names several of the dataset's edge types (give src,rel,dst)"
                   : "is not one of the dataset's edge types") +
      " (" + (known.empty() ? "none" : known) + ")");
}

Status HeteroSchema::Check(int num_parts, int64_t num_nodes, int64_t feature_dim) const {
  if (node_types.empty())
    return Status::InvalidArgument("a heterogeneous dataset needs at least one node type");
  std::set<std::string> seen;
  for (const std::string& n : node_types) {
    if (n.empty() || n.find(',') != std::string::npos)
      return Status::InvalidArgument("node type name '" + n +
                                     "' must be non-empty and hold no ','");
    if (!seen.insert(n).second)
      return Status::InvalidArgument("node type '" + n + "' is named twice");
  }
  const int T = num_node_types();
  std::set<std::string> edge_names;
  for (int e = 0; e < num_edge_types(); ++e) {
    const EdgeType& t = edge_types[static_cast<size_t>(e)];
    if (t.src < 0 || t.src >= T || t.dst < 0 || t.dst >= T)
      return Status::InvalidArgument("edge type " + std::to_string(e) + " (" + t.rel +
                                     ") names node type " +
                                     std::to_string(t.src < 0 || t.src >= T ? t.src : t.dst) +
                                     ", outside [0, " + std::to_string(T) + ")");
    if (t.rel.empty() || t.rel.find(',') != std::string::npos)
      return Status::InvalidArgument("relation name '" + t.rel +
                                     "' must be non-empty and hold no ','");
    if (!edge_names.insert(EdgeTypeName(e)).second)
      return Status::InvalidArgument("edge type " + EdgeTypeName(e) + " is named twice");
  }
  const size_t want = static_cast<size_t>(num_parts) * static_cast<size_t>(T) + 1;
  if (type_bounds.size() != want)
    return Status::InvalidArgument("node type bounds hold " + std::to_string(type_bounds.size()) +
                                   " entries, expected " + std::to_string(want) + " (" +
                                   std::to_string(num_parts) + " partitions x " +
                                   std::to_string(T) + " node types + 1)");
  if (type_bounds.front() != 0 || type_bounds.back() != num_nodes)
    return Status::InvalidArgument(
        "node type bounds run from " + std::to_string(type_bounds.front()) + " to " +
        std::to_string(type_bounds.back()) + ", expected 0 to " + std::to_string(num_nodes));
  for (size_t i = 1; i < type_bounds.size(); ++i)
    if (type_bounds[i] < type_bounds[i - 1])
      return Status::InvalidArgument("node type bounds decrease at entry " + std::to_string(i));
  if (feature_dims.size() != static_cast<size_t>(T))
    return Status::InvalidArgument("feature dims name " + std::to_string(feature_dims.size()) +
                                   " node types, expected " + std::to_string(T));
  for (int t = 0; t < T; ++t)
    if (feature_dims[static_cast<size_t>(t)] < 0 ||
        feature_dims[static_cast<size_t>(t)] > feature_dim)
      return Status::InvalidArgument("node type '" + node_types[static_cast<size_t>(t)] +
                                     "' has feature dim " +
                                     std::to_string(feature_dims[static_cast<size_t>(t)]) +
                                     ", outside [0, " + std::to_string(feature_dim) + "]");
  return Status::OK();
}

Status HeteroHopFanouts(const HeteroSchema& schema,
                        const std::vector<std::vector<int64_t>>& fanouts,
                        std::vector<int64_t>* per_hop) {
  if (fanouts.size() != static_cast<size_t>(schema.num_edge_types()))
    return Status::InvalidArgument("per-edge-type fanouts name " + std::to_string(fanouts.size()) +
                                   " edge types; the dataset has " +
                                   std::to_string(schema.num_edge_types()));
  per_hop->clear();
  size_t hops = 0;
  for (size_t e = 0; e < fanouts.size(); ++e) hops = std::max(hops, fanouts[e].size());
  if (hops == 0) return Status::InvalidArgument("per-edge-type fanouts give no hop");
  per_hop->assign(hops, 0);
  for (size_t e = 0; e < fanouts.size(); ++e) {
    if (fanouts[e].size() != hops)
      return Status::InvalidArgument("edge type " + schema.EdgeTypeName(static_cast<int>(e)) +
                                     " has " + std::to_string(fanouts[e].size()) +
                                     " fanouts; every edge type needs " + std::to_string(hops) +
                                     " (one per hop; 0 = not sampled)");
    for (size_t h = 0; h < hops; ++h) {
      const int64_t f = fanouts[e][h];
      if (f < -1)
        return Status::InvalidArgument(
            "fanout " + std::to_string(f) + " of edge type " +
            schema.EdgeTypeName(static_cast<int>(e)) + " in hop " + std::to_string(h) +
            " is invalid: use -1 for all neighbors, 0 for none or a value >= 1");
      int64_t& m = (*per_hop)[h];
      if (m != -1) m = f == -1 ? -1 : std::max(m, f);
    }
  }
  return Status::OK();
}

void HopTypeFanouts(const std::vector<std::vector<int64_t>>& fanouts, size_t hop,
                    std::vector<int64_t>* out) {
  out->resize(fanouts.size());
  for (size_t e = 0; e < fanouts.size(); ++e) (*out)[e] = fanouts[e][hop];
}

uint64_t EdgeTypeKey(uint64_t request_seed, int64_t hop, int64_t node, int edge_type) {
  return Mix64(NodeKey(request_seed, static_cast<uint64_t>(hop), static_cast<uint64_t>(node)) ^
               (static_cast<uint64_t>(edge_type) + 1) * 0xa0761d6478bd642fULL);
}

Status SampleHeteroHop(const CsrGraph& graph, const int32_t* edge_types,
                       ArrayView<const int64_t> nodes, ArrayView<const int64_t> fanouts,
                       int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                       OneHopResult* out) {
  if (options.labor)
    return Status::InvalidArgument(
        "LABOR sampling of heterogeneous (per-edge-type) hops is not supported");
  if (options.weighted && !graph.has_weights())
    return Status::InvalidArgument("weighted sampling requested but the graph has no edge weights");
  const int64_t lo = options.node_offset, hi = options.node_offset + graph.num_nodes();
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(nodes, lo, hi));
  const int64_t num_types = static_cast<int64_t>(fanouts.size());
  const int64_t* indptr = graph.indptr();
  const int64_t* eids = graph.edge_ids();
  const int64_t m = static_cast<int64_t>(nodes.size());
  // Pass 1: each node's runs of a sampled type and their exact sample
  // counts, so the outputs are sized once. The rows' lines are prefetched a
  // few nodes ahead (indptr first, then the row's edge types), as HopSampler
  // does: on large graphs every row is a cache miss.
  struct Run {
    int64_t start, degree, count, at, node;
    int32_t type;
  };
  thread_local std::vector<Run> runs;
  runs.clear();
  out->offsets.resize(m + 1);
  out->edge_weights.clear();
  out->offsets[0] = 0;
  int64_t total = 0;
  constexpr int64_t kIndptrAhead = 16, kRowAhead = 8;
  for (int64_t i = 0; i < m; ++i) {
    if (i + kIndptrAhead < m) __builtin_prefetch(indptr + (nodes[i + kIndptrAhead] - lo));
    if (i + kRowAhead < m) __builtin_prefetch(edge_types + indptr[nodes[i + kRowAhead] - lo]);
    const int64_t v = nodes[i];
    const int64_t row_end = indptr[v - lo + 1];
    for (int64_t b = indptr[v - lo]; b < row_end;) {
      const int64_t e = detail::TypeRunEnd(edge_types, b, row_end);
      const int32_t t = edge_types[b];
      const int64_t fanout = t >= 0 && t < num_types ? fanouts[static_cast<size_t>(t)] : 0;
      if (fanout != 0) {
        const int64_t k = detail::RowSampleCount(graph, b, e - b, fanout, options);
        if (k > 0) {
          runs.push_back({b, e - b, k, total, v, t});
          total += k;
        }
      }
      b = e;
    }
    out->offsets[i + 1] = total;
  }
  out->neighbors.resize(total);
  out->edge_types.resize(total);
  out->edge_ids.resize(options.with_edge_ids ? total : 0);
  // Pass 2, software-pipelined: draw run r + kDrawAhead's positions into its
  // place and prefetch the lines they land on, then resolve run r.
  detail::RowScratch scratch;
  int64_t* nbr = out->neighbors.data();
  const int64_t num_runs = static_cast<int64_t>(runs.size());
  auto draw = [&](int64_t r) {
    const Run& run = runs[r];
    int64_t* pos = nbr + run.at;
    detail::SampleRowPositions(graph, run.start, run.degree, fanouts[static_cast<size_t>(run.type)],
                               run.count, EdgeTypeKey(request_seed, hop, run.node, run.type),
                               options, pos, &scratch);
    for (int64_t j = 0; j < run.count; ++j) {
      __builtin_prefetch(graph.neighbor_address(run.start + pos[j]));
      if (eids) __builtin_prefetch(eids + run.start + pos[j]);
    }
  };
  constexpr int64_t kDrawAhead = 6;
  for (int64_t r = 0; r < std::min(num_runs, kDrawAhead); ++r) draw(r);
  for (int64_t r = 0; r < num_runs; ++r) {
    if (r + kDrawAhead < num_runs) draw(r + kDrawAhead);
    const Run& run = runs[r];
    int64_t* pos = nbr + run.at;
    for (int64_t j = 0; j < run.count; ++j) {
      const int64_t p = run.start + pos[j];
      out->edge_types[run.at + j] = run.type;
      if (options.with_edge_ids) out->edge_ids[run.at + j] = graph.edge_id(p);
      pos[j] = graph.neighbor(p);
    }
  }
  return Status::OK();
}

}  // namespace fanout::sampler
