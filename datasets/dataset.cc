#include "datasets/dataset.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace fanout::datasets {

Status RawDataset::Validate() const {
  if (src.size() != dst.size())
    return Status::InvalidArgument("edge list has " + std::to_string(src.size()) + " sources but " +
                                   std::to_string(dst.size()) + " targets");
  if (!edge_times.empty() && edge_times.size() != src.size())
    return Status::InvalidArgument("edge list has " + std::to_string(src.size()) + " edges but " +
                                   std::to_string(edge_times.size()) + " timestamps");
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes)
      return Status::InvalidArgument("edge " + std::to_string(i) + " (" + std::to_string(src[i]) + " -> " +
                                     std::to_string(dst[i]) + ") is outside [0, " + std::to_string(num_nodes) + ")");
  }
  if (!features.empty() && static_cast<int64_t>(features.size()) != num_nodes * feature_dim)
    return Status::InvalidArgument("features hold " + std::to_string(features.size()) + " values, expected " +
                                   std::to_string(num_nodes) + " x " + std::to_string(feature_dim));
  if (!labels.empty()) {
    if (static_cast<int64_t>(labels.size()) != num_nodes)
      return Status::InvalidArgument("labels hold " + std::to_string(labels.size()) + " values, expected " +
                                     std::to_string(num_nodes));
    for (int64_t v = 0; v < num_nodes; ++v)
      if (labels[v] < -1 || labels[v] >= num_classes)
        return Status::InvalidArgument("node " + std::to_string(v) + " has label " + std::to_string(labels[v]) +
                                       ", outside [0, " + std::to_string(num_classes) + ")");
  }
  if (!split.empty() && static_cast<int64_t>(split.size()) != num_nodes)
    return Status::InvalidArgument("split has " + std::to_string(split.size()) + " entries, expected " +
                                   std::to_string(num_nodes));
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
      ++w;
    }
    note("dropped " + std::to_string(ds->src.size() - w) + " self-loops");
    ds->src.resize(w);
    ds->dst.resize(w);
    if (!ds->edge_times.empty()) ds->edge_times.resize(w);
  }
  if (options.make_undirected) {
    size_t n = ds->src.size();
    ds->src.reserve(2 * n);
    ds->dst.reserve(2 * n);
    if (!ds->edge_times.empty()) ds->edge_times.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
      if (ds->src[i] == ds->dst[i]) continue;  // a self-loop is its own reverse
      ds->src.push_back(ds->dst[i]);
      ds->dst.push_back(ds->src[i]);
      if (!ds->edge_times.empty()) ds->edge_times.push_back(ds->edge_times[i]);
    }
    note("added " + std::to_string(ds->src.size() - n) + " reverse edges");
  }
  if (options.drop_duplicates) {
    size_t n = ds->src.size();
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return ds->src[a] != ds->src[b] ? ds->src[a] < ds->src[b] : ds->dst[a] < ds->dst[b];
    });
    std::vector<uint8_t> keep(n, 1);
    for (size_t i = 1; i < n; ++i)
      if (ds->src[order[i]] == ds->src[order[i - 1]] && ds->dst[order[i]] == ds->dst[order[i - 1]])
        keep[order[i]] = 0;  // stable sort: order[i-1] came first in input order
    size_t w = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      ds->src[w] = ds->src[i];
      ds->dst[w] = ds->dst[i];
      if (!ds->edge_times.empty()) ds->edge_times[w] = ds->edge_times[i];
      ++w;
    }
    note("dropped " + std::to_string(n - w) + " duplicate edges");
    ds->src.resize(w);
    ds->dst.resize(w);
    if (!ds->edge_times.empty()) ds->edge_times.resize(w);
  }
  return summary;
}

Status CheckStreamable(const EdgeOptions& options) {
  if (options.drop_duplicates)
    return Status::InvalidArgument("--drop-duplicates needs the whole edge list in memory; it cannot be streamed");
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

}  // namespace fanout::datasets
