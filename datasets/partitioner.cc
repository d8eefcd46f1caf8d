#include "datasets/partitioner.h"

#include <metis.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "common/random.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {

Status ParsePartitionMethod(const std::string& name, PartitionMethod* out) {
  if (name == "metis")
    *out = PartitionMethod::kMetis;
  else if (name == "random")
    *out = PartitionMethod::kRandom;
  else if (name == "range")
    *out = PartitionMethod::kRange;
  else if (name == "hash")
    *out = PartitionMethod::kHash;
  else if (name == "file")
    *out = PartitionMethod::kFile;
  else
    return Status::InvalidArgument("unknown partition method '" + name +
                                   "' (known: metis, random, range, hash, file)");
  return Status::OK();
}

const char* PartitionMethodName(PartitionMethod m) {
  switch (m) {
    case PartitionMethod::kMetis:
      return "metis";
    case PartitionMethod::kRandom:
      return "random";
    case PartitionMethod::kRange:
      return "range";
    case PartitionMethod::kHash:
      return "hash";
    case PartitionMethod::kFile:
      return "file";
  }
  return "?";
}

namespace {

Status MetisPartition(const RawDataset& ds, const PartitionOptions& o, std::vector<int32_t>* part,
                      std::vector<std::string>* notes) {
  const int64_t n = ds.num_nodes;
  if (n >= std::numeric_limits<idx_t>::max())
    return Status::NotSupported("METIS (32-bit idx_t build) cannot take " + std::to_string(n) +
                                " nodes");
  Progress progress("METIS: building the undirected view", " edges", ds.num_edges(), o.quiet);
  // Undirected simple view: (min, max) pairs, deduplicated, no self-loops.
  std::vector<uint64_t> pairs;
  pairs.reserve(ds.src.size());
  for (size_t i = 0; i < ds.src.size(); ++i) {
    uint64_t a = static_cast<uint64_t>(ds.src[i]), b = static_cast<uint64_t>(ds.dst[i]);
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    pairs.push_back((a << 32) | b);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  if (static_cast<int64_t>(pairs.size()) * 2 >= std::numeric_limits<idx_t>::max())
    return Status::NotSupported("METIS (32-bit idx_t build) cannot take " +
                                std::to_string(pairs.size()) + " undirected edges");
  std::vector<idx_t> xadj(n + 1, 0), adjncy(pairs.size() * 2);
  for (uint64_t p : pairs) {
    xadj[(p >> 32) + 1]++;
    xadj[(p & 0xffffffffULL) + 1]++;
  }
  for (int64_t v = 0; v < n; ++v) xadj[v + 1] += xadj[v];
  std::vector<idx_t> fill(xadj.begin(), xadj.end() - 1);
  for (uint64_t p : pairs) {
    idx_t a = static_cast<idx_t>(p >> 32), b = static_cast<idx_t>(p & 0xffffffffULL);
    adjncy[fill[a]++] = b;
    adjncy[fill[b]++] = a;
  }
  progress.Update(ds.num_edges());
  progress.Done(std::to_string(pairs.size()) + " undirected edges");
  std::vector<uint64_t>().swap(pairs);

  idx_t nvtxs = static_cast<idx_t>(n), nparts = o.num_parts, objval = 0;
  std::vector<idx_t> where(n, 0);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(o.seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;

  // Two constraints: node count, stored edges.
  std::vector<idx_t> vwgt;
  idx_t ncon = 1;
  if (o.metis_balance_edges && ds.num_edges() > 0) {
    ncon = 2;
    vwgt.assign(static_cast<size_t>(2 * n), 0);
    for (int64_t v = 0; v < n; ++v) vwgt[2 * v] = 1;
    for (size_t i = 0; i < ds.src.size(); ++i)
      vwgt[2 * (o.store_by_target ? ds.dst[i] : ds.src[i]) + 1]++;
  }
  Progress metis_progress("METIS: k-way partitioning into " + std::to_string(o.num_parts), " nodes",
                          n, o.quiet);
  int rc;
  if (ncon == 2) {
    real_t ubvec[2] = {static_cast<real_t>(o.metis_imbalance), static_cast<real_t>(1.10)};
    rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                             nullptr, &nparts, nullptr, ubvec, options, &objval, where.data());
    if (rc != METIS_OK) {
      notes->push_back("METIS rejected the node+edge balanced problem (code " + std::to_string(rc) +
                       "); partitioned balancing nodes only");
      ncon = 1;
    }
  }
  if (ncon == 1) {
    real_t ubvec[1] = {static_cast<real_t>(o.metis_imbalance)};
    rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr, nullptr,
                             &nparts, nullptr, ubvec, options, &objval, where.data());
    if (rc != METIS_OK)
      return Status::Internal("METIS_PartGraphKway failed with code " + std::to_string(rc) +
                              (rc == METIS_ERROR_MEMORY ? " (out of memory)" : ""));
  }
  metis_progress.Update(n);
  metis_progress.Done("edge cut " + std::to_string(objval) + " undirected edges");
  part->resize(n);
  for (int64_t v = 0; v < n; ++v) (*part)[v] = static_cast<int32_t>(where[v]);
  return Status::OK();
}

}  // namespace

Status ComputeNodePartition(int64_t n, const std::function<int64_t(int64_t)>& original_id,
                            const PartitionOptions& o, std::vector<int32_t>* part) {
  if (o.num_parts < 1)
    return Status::InvalidArgument("--parts " + std::to_string(o.num_parts) +
                                   " must be at least 1");
  if (o.num_parts > n)
    return Status::InvalidArgument("--parts " + std::to_string(o.num_parts) + " exceeds the " +
                                   std::to_string(n) + " nodes of the graph");
  if (o.method == PartitionMethod::kFile)
    return ReadAssignment(o.assignment_path, n, o.num_parts, part);
  part->assign(n, 0);
  if (o.num_parts == 1) return Status::OK();
  switch (o.method) {
    case PartitionMethod::kRange:
      for (int64_t v = 0; v < n; ++v)
        (*part)[v] = static_cast<int32_t>((static_cast<__int128>(v) * o.num_parts) / n);
      return Status::OK();
    case PartitionMethod::kRandom: {
      // A seeded shuffle cut into K equal pieces: random and exactly balanced.
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      SplitMix64 rng(o.seed);
      for (int64_t i = n - 1; i > 0; --i)
        std::swap(order[i],
                  order[static_cast<int64_t>(DrawBelow(rng.Next(), static_cast<uint64_t>(i + 1)))]);
      for (int64_t i = 0; i < n; ++i)
        (*part)[order[i]] = static_cast<int32_t>((static_cast<__int128>(i) * o.num_parts) / n);
      return Status::OK();
    }
    case PartitionMethod::kHash: {
      // A seeded hash of the original id: balanced in expectation, and a
      // node's part does not depend on the rest of the graph.
      const uint64_t key = Mix64(o.seed ^ 0x6861736870617274ULL);
      for (int64_t v = 0; v < n; ++v)
        (*part)[v] =
            static_cast<int32_t>(DrawBelow(Mix64(key ^ static_cast<uint64_t>(original_id(v))),
                                           static_cast<uint64_t>(o.num_parts)));
      return Status::OK();
    }
    case PartitionMethod::kMetis:
      return Status::InvalidArgument("METIS needs the edges: use ComputePartition");
    case PartitionMethod::kFile:
      break;  // above
  }
  return Status::InvalidArgument("unknown partition method");
}

Status ReadAssignment(const std::string& path, int64_t n, int num_parts,
                      std::vector<int32_t>* part) {
  if (path.empty()) return Status::InvalidArgument("--method file needs --assignment FILE");
  std::unique_ptr<LineReader> in;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &in));
  part->assign(static_cast<size_t>(n), 0);
  int64_t v = 0;
  std::string_view line;
  while (in->Next(&line)) {
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string_view::npos || line[a] == '#') continue;
    const size_t z = line.find_last_not_of(" \t\r");
    const std::string text(line.substr(a, z - a + 1));
    char* end = nullptr;
    errno = 0;
    const long long p = std::strtoll(text.c_str(), &end, 10);
    const std::string where = "--assignment " + path + " line " + std::to_string(in->line_number());
    if (end == text.c_str() || *end != '\0' || errno != 0)
      return Status::InvalidArgument(where + ": '" + text.substr(0, 40) + "' is not a part number");
    if (p < 0 || p >= num_parts)
      return Status::InvalidArgument(where + ": part " + text + " is outside [0, " +
                                     std::to_string(num_parts) + ") (--parts " +
                                     std::to_string(num_parts) + ")");
    if (v == n)
      return Status::InvalidArgument(where + ": more lines than the graph's " + std::to_string(n) +
                                     " nodes");
    (*part)[static_cast<size_t>(v++)] = static_cast<int32_t>(p);
  }
  FANOUT_RETURN_IF_ERROR(in->status());
  if (v != n)
    return Status::InvalidArgument("--assignment " + path + " gives " + std::to_string(v) +
                                   " parts, for a graph of " + std::to_string(n) +
                                   " nodes (one line per node, in the input's order)");
  return Status::OK();
}

Status ComputePartition(const RawDataset& ds, const PartitionOptions& o, std::vector<int32_t>* part,
                        std::vector<std::string>* notes) {
  if (o.method != PartitionMethod::kMetis || o.num_parts <= 1)
    return ComputeNodePartition(
        ds.num_nodes, [&](int64_t v) { return ds.original_ids[v]; }, o, part);
  const int64_t n = ds.num_nodes;
  if (o.num_parts > n)
    return Status::InvalidArgument("--parts " + std::to_string(o.num_parts) + " exceeds the " +
                                   std::to_string(n) + " nodes of the graph");
  return MetisPartition(ds, o, part, notes);
}

PartitionStats ComputePartitionStats(const RawDataset& ds, const std::vector<int32_t>& part, int k,
                                     bool store_by_target) {
  PartitionStats s;
  s.nodes.assign(k, 0);
  s.edges.assign(k, 0);
  for (int32_t p : part) s.nodes[p]++;
  for (size_t i = 0; i < ds.src.size(); ++i) {
    int32_t ps = part[ds.src[i]], pd = part[ds.dst[i]];
    s.edges[store_by_target ? pd : ps]++;
    s.cut_edges += ps != pd;
  }
  FinishPartitionStats(ds.num_nodes, ds.num_edges(), &s);
  return s;
}

void FinishPartitionStats(int64_t num_nodes, int64_t e, PartitionStats* s) {
  const double k = static_cast<double>(s->nodes.size());
  s->edge_cut_fraction = e ? static_cast<double>(s->cut_edges) / e : 0.0;
  double mean_n = static_cast<double>(num_nodes) / k, mean_e = static_cast<double>(e) / k;
  s->node_balance = mean_n > 0 ? *std::max_element(s->nodes.begin(), s->nodes.end()) / mean_n : 1.0;
  s->edge_balance = mean_e > 0 ? *std::max_element(s->edges.begin(), s->edges.end()) / mean_e : 1.0;
}

}  // namespace fanout::datasets
