#include "datasets/dataset.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace fanout::datasets {

Status RawDataset::Validate() const {
  if (src.size() != dst.size())
    return Status::InvalidArgument("edge list has " + std::to_string(src.size()) + " sources but " +
                                   std::to_string(dst.size()) + " targets");
  if (!edge_times.empty() && edge_times.size() != src.size())
    return Status::InvalidArgument("edge list has " + std::to_string(src.size()) + " edges but " +
                                   std::to_string(edge_times.size()) + " timestamps");
  if (!edge_weights.empty() && edge_weights.size() != src.size())
    return Status::InvalidArgument("edge list has " + std::to_string(src.size()) + " edges but " +
                                   std::to_string(edge_weights.size()) + " weights");
  for (size_t i = 0; i < edge_weights.size(); ++i)
    if (!(std::isfinite(edge_weights[i]) && edge_weights[i] >= 0))
      return Status::InvalidArgument("edge " + std::to_string(i) + " has weight " +
                                     std::to_string(edge_weights[i]) +
                                     ": weights must be finite and non-negative");
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes)
      return Status::InvalidArgument("edge " + std::to_string(i) + " (" + std::to_string(src[i]) +
                                     " -> " + std::to_string(dst[i]) + ") is outside [0, " +
                                     std::to_string(num_nodes) + ")");
  }
  if (!features.empty() && static_cast<int64_t>(features.size()) != num_nodes * feature_dim)
    return Status::InvalidArgument("features hold " + std::to_string(features.size()) +
                                   " values, expected " + std::to_string(num_nodes) + " x " +
                                   std::to_string(feature_dim));
  if (!labels.empty()) {
    if (static_cast<int64_t>(labels.size()) != num_nodes)
      return Status::InvalidArgument("labels hold " + std::to_string(labels.size()) +
                                     " values, expected " + std::to_string(num_nodes));
    for (int64_t v = 0; v < num_nodes; ++v)
      if (labels[v] < -1 || labels[v] >= num_classes)
        return Status::InvalidArgument("node " + std::to_string(v) + " has label " +
                                       std::to_string(labels[v]) + ", outside [0, " +
                                       std::to_string(num_classes) + ")");
  }
  if (!split.empty() && static_cast<int64_t>(split.size()) != num_nodes)
    return Status::InvalidArgument("split has " + std::to_string(split.size()) +
                                   " entries, expected " + std::to_string(num_nodes));
  if (hetero()) {
    if (static_cast<int64_t>(node_type.size()) != num_nodes)
      return Status::InvalidArgument("node types hold " + std::to_string(node_type.size()) +
                                     " entries, expected " + std::to_string(num_nodes));
    if (edge_type.size() != src.size())
      return Status::InvalidArgument("edge types hold " + std::to_string(edge_type.size()) +
                                     " entries for " + std::to_string(src.size()) + " edges");
    const int32_t T = static_cast<int32_t>(node_types.size()),
                  R = static_cast<int32_t>(edge_types.size());
    for (int64_t v = 0; v < num_nodes; ++v)
      if (node_type[v] < 0 || node_type[v] >= T)
        return Status::InvalidArgument("node " + std::to_string(v) + " has node type " +
                                       std::to_string(node_type[v]) + ", outside [0, " +
                                       std::to_string(T) + ")");
    for (size_t i = 0; i < src.size(); ++i) {
      const int32_t e = edge_type[i];
      if (e < 0 || e >= R)
        return Status::InvalidArgument("edge " + std::to_string(i) + " has edge type " +
                                       std::to_string(e) + ", outside [0, " + std::to_string(R) +
                                       ")");
      if (node_type[src[i]] != edge_types[e].src || node_type[dst[i]] != edge_types[e].dst)
        return Status::InvalidArgument(
            "edge " + std::to_string(i) + " (" + std::to_string(src[i]) + " -> " +
            std::to_string(dst[i]) + ") of type " + edge_types[e].rel + " joins node types " +
            node_types[node_type[src[i]]] + " -> " + node_types[node_type[dst[i]]] + ", not " +
            node_types[edge_types[e].src] + " -> " + node_types[edge_types[e].dst]);
    }
    sampler::HeteroSchema schema;  // names and feature dims (bounds are the writer's)
    schema.node_types = node_types;
    schema.edge_types = edge_types;
    schema.type_bounds.assign(node_types.size() + 1, num_nodes);
    schema.type_bounds[0] = 0;
    schema.feature_dims = type_feature_dims;
    FANOUT_RETURN_IF_ERROR(schema.Check(1, num_nodes, features.empty() ? 0 : feature_dim)
                               .WithContext("dataset types"));
    // Edge times on a heterogeneous graph are stored (rows by type, each
    // type's edges by time: the writer's two stable sorts); sampling by time
    // across types is refused where it is asked (sampler, client).
  } else if (!node_type.empty() || !edge_type.empty()) {
    return Status::InvalidArgument("node or edge types without type names");
  }
  if (static_cast<int64_t>(original_ids.size()) != num_nodes)
    return Status::InvalidArgument("original id map has " + std::to_string(original_ids.size()) +
                                   " entries, expected " + std::to_string(num_nodes));
  return Status::OK();
}

std::string ApplyEdgeOptions(const EdgeOptions& options, RawDataset* ds) {
  std::string summary;
  auto note = [&](const std::string& s) { summary += (summary.empty() ? "" : ", ") + s; };
  if (options.drop_self_loops) {
    size_t w = 0;
    for (size_t i = 0; i < ds->src.size(); ++i) {
      if (ds->src[i] == ds->dst[i]) continue;
      ds->src[w] = ds->src[i];
      ds->dst[w] = ds->dst[i];
      if (!ds->edge_times.empty()) ds->edge_times[w] = ds->edge_times[i];
      if (!ds->edge_weights.empty()) ds->edge_weights[w] = ds->edge_weights[i];
      if (!ds->edge_type.empty()) ds->edge_type[w] = ds->edge_type[i];
      ++w;
    }
    note("dropped " + std::to_string(ds->src.size() - w) + " self-loops");
    ds->src.resize(w);
    ds->dst.resize(w);
    if (!ds->edge_times.empty()) ds->edge_times.resize(w);
    if (!ds->edge_weights.empty()) ds->edge_weights.resize(w);
    if (!ds->edge_type.empty()) ds->edge_type.resize(w);
  }
  if (options.make_undirected) {
    size_t n = ds->src.size();
    ds->src.reserve(2 * n);
    ds->dst.reserve(2 * n);
    if (!ds->edge_times.empty()) ds->edge_times.reserve(2 * n);
    if (!ds->edge_weights.empty()) ds->edge_weights.reserve(2 * n);
    // Heterogeneous: (s, r, d) gets the reverse type (d, rev_r, s); a type
    // joining one node type to itself is its own reverse.
    std::vector<int32_t> reverse_type;
    if (ds->hetero()) {
      reverse_type = AddReverseEdgeTypes(&ds->edge_types);
      ds->edge_type.reserve(2 * n);
    }
    for (size_t i = 0; i < n; ++i) {
      if (ds->src[i] == ds->dst[i]) continue;  // a self-loop is its own reverse
      ds->src.push_back(ds->dst[i]);
      ds->dst.push_back(ds->src[i]);
      if (!ds->edge_times.empty()) ds->edge_times.push_back(ds->edge_times[i]);
      if (!ds->edge_weights.empty()) ds->edge_weights.push_back(ds->edge_weights[i]);
      if (!reverse_type.empty()) ds->edge_type.push_back(reverse_type[ds->edge_type[i]]);
    }
    note("added " + std::to_string(ds->src.size() - n) + " reverse edges");
  }
  if (options.drop_duplicates) {
    size_t n = ds->src.size();
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    // Heterogeneous: equal (u, v) of different edge types are different edges.
    auto type_of = [&](int64_t i) { return ds->edge_type.empty() ? 0 : ds->edge_type[i]; };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (ds->src[a] != ds->src[b]) return ds->src[a] < ds->src[b];
      if (ds->dst[a] != ds->dst[b]) return ds->dst[a] < ds->dst[b];
      return type_of(a) < type_of(b);
    });
    std::vector<uint8_t> keep(n, 1);
    for (size_t i = 1; i < n; ++i)
      if (ds->src[order[i]] == ds->src[order[i - 1]] &&
          ds->dst[order[i]] == ds->dst[order[i - 1]] && type_of(order[i]) == type_of(order[i - 1]))
        keep[order[i]] = 0;  // stable sort: order[i-1] came first in input order
    size_t w = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      ds->src[w] = ds->src[i];
      ds->dst[w] = ds->dst[i];
      if (!ds->edge_times.empty()) ds->edge_times[w] = ds->edge_times[i];
      if (!ds->edge_weights.empty()) ds->edge_weights[w] = ds->edge_weights[i];
      if (!ds->edge_type.empty()) ds->edge_type[w] = ds->edge_type[i];
      ++w;
    }
    note("dropped " + std::to_string(n - w) + " duplicate edges");
    ds->src.resize(w);
    ds->dst.resize(w);
    if (!ds->edge_times.empty()) ds->edge_times.resize(w);
    if (!ds->edge_weights.empty()) ds->edge_weights.resize(w);
    if (!ds->edge_type.empty()) ds->edge_type.resize(w);
  }
  return summary;
}

Status CheckStreamable(const EdgeOptions& options) {
  if (options.drop_duplicates)
    return Status::InvalidArgument(
        "--drop-duplicates needs the whole edge list in memory; it cannot be streamed");
  return Status::OK();
}

Status PlayWithEdgeOptions(const EdgeOptions& options, const EdgePlay& input, const EdgeFn& fn) {
  assert(!options.drop_duplicates);  // REQUIRES: CheckStreamable
  bool go = true;
  FANOUT_RETURN_IF_ERROR(input([&](int64_t s, int64_t d) {
    if (!(options.drop_self_loops && s == d)) go = fn(s, d);
    return go;
  }));
  if (options.make_undirected && go)
    FANOUT_RETURN_IF_ERROR(input([&](int64_t s, int64_t d) {
      if (s != d) go = fn(d, s);  // a self-loop is its own reverse
      return go;
    }));
  return Status::OK();
}

Status PlayAttrWithEdgeOptions(const EdgeOptions& options, const EdgeAttrPlay& input,
                               const EdgeAttrFn& fn, const std::vector<int32_t>& reverse_type) {
  assert(!options.drop_duplicates);  // REQUIRES: CheckStreamable
  bool go = true;
  FANOUT_RETURN_IF_ERROR(input([&](const EdgeAttr& e) {
    if (!(options.drop_self_loops && e.src == e.dst)) go = fn(e);
    return go;
  }));
  if (options.make_undirected && go)
    FANOUT_RETURN_IF_ERROR(input([&](const EdgeAttr& e) {
      if (e.src == e.dst) return true;  // a self-loop is its own reverse
      EdgeAttr r = e;
      r.src = e.dst;
      r.dst = e.src;
      if (!reverse_type.empty()) r.type = reverse_type[static_cast<size_t>(e.type)];
      go = fn(r);
      return go;
    }));
  return Status::OK();
}

std::vector<int32_t> AddReverseEdgeTypes(std::vector<sampler::EdgeType>* types) {
  std::vector<int32_t> reverse_type;
  const size_t R = types->size();
  for (size_t e = 0; e < R; ++e) {
    const sampler::EdgeType t = (*types)[e];
    if (t.src == t.dst) {
      reverse_type.push_back(static_cast<int32_t>(e));
    } else {
      reverse_type.push_back(static_cast<int32_t>(types->size()));
      types->push_back({t.dst, "rev_" + t.rel, t.src});
    }
  }
  return reverse_type;
}

}  // namespace fanout::datasets
