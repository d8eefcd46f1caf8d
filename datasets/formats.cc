#include "datasets/formats.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/random.h"
#include "datasets/bounded_partition.h"
#include "datasets/progress.h"

namespace fanout::datasets {

const std::vector<std::string>& FormatNames() {
  static const std::vector<std::string> kNames = {"linqs",     "planetoid", "ogb",  "ogb-hetero",
                                                  "movielens", "snap",      "rmat", "tables"};
  return kNames;
}

std::string WithOptionalGz(const std::string& base) {
  struct stat st;
  if (stat(base.c_str(), &st) == 0) return base;
  if (stat((base + ".gz").c_str(), &st) == 0) return base + ".gz";
  return base;
}

Status CheckSplitFractions(const std::vector<double>& f) {
  if (f.empty()) return Status::OK();
  if (f.size() != 3)
    return Status::InvalidArgument("split fractions need 3 values (train,val,test), got " +
                                   std::to_string(f.size()));
  double sum = 0;
  for (double x : f) {
    if (!(x >= 0) || x > 1)
      return Status::InvalidArgument("split fraction " + std::to_string(x) + " is outside [0, 1]");
    sum += x;
  }
  if (sum > 1 + 1e-9)
    return Status::InvalidArgument("split fractions sum to " + std::to_string(sum) + " > 1");
  return Status::OK();
}

uint8_t RandomSplitOf(const std::vector<double>& f, uint64_t seed, int64_t v) {
  const double sum = f[0] + f[1] + f[2];
  double u = static_cast<double>(Mix64(Mix64(seed + kGolden64) ^ static_cast<uint64_t>(v)) >> 11) *
             0x1.0p-53;
  Split s = u < f[0]          ? Split::kTrain
            : u < f[0] + f[1] ? Split::kVal
            : u < sum         ? Split::kTest
                              : Split::kNone;
  return static_cast<uint8_t>(s);
}

Status AssignRandomSplit(const std::vector<double>& f, uint64_t seed, RawDataset* ds) {
  if (f.empty()) return Status::OK();
  FANOUT_RETURN_IF_ERROR(CheckSplitFractions(f));
  ds->split.resize(ds->num_nodes);
  for (int64_t v = 0; v < ds->num_nodes; ++v) ds->split[v] = RandomSplitOf(f, seed, v);
  return Status::OK();
}

Status LoadDataset(const std::string& format, const std::string& input, const LoadOptions& options,
                   RawDataset* out, std::vector<std::string>* notes) {
  *out = RawDataset();
  Status st;
  if (format == "linqs")
    st = LoadLinqs(input, options, out, notes);
  else if (format == "planetoid")
    st = LoadPlanetoid(input, options, out, notes);
  else if (format == "ogb")
    st = LoadOgb(input, options, out, notes);
  else if (format == "ogb-hetero")
    st = LoadOgbHetero(input, options, out, notes);
  else if (format == "movielens")
    st = LoadMovieLens(input, options, out, notes);
  else if (format == "snap")
    st = LoadSnap(input, options, out, notes);
  else if (format == "rmat")
    st = LoadRmat(options, out, notes);
  else if (format == "tables")
    st = LoadTables(input, options, out, notes);
  else
    return Status::InvalidArgument(
        "unknown format '" + format +
        "' (known: linqs, planetoid, ogb, ogb-hetero, movielens, snap, rmat, tables)");
  if (!st.ok()) return st;
  if (out->format.empty()) out->format = format;
  return out->Validate();
}

namespace {

Status CheckRmatData(const LoadOptions& options) {
  if (options.feature_dim < 0)
    return Status::InvalidArgument("feature dim " + std::to_string(options.feature_dim) +
                                   " is negative");
  if (options.num_classes < 0)
    return Status::InvalidArgument("num classes " + std::to_string(options.num_classes) +
                                   " is negative");
  if (options.rmat_node_types < 0 || options.rmat_node_types > 64)
    return Status::InvalidArgument("R-MAT node types " + std::to_string(options.rmat_node_types) +
                                   " is outside [0, 64]");
  return CheckSplitFractions(options.split_fractions);
}

// Node v's synthetic features: uniform [-1, 1) values, a pure function of
// (seed, node, column).
uint64_t RmatFeatureKey(uint64_t seed, int64_t v) {
  return Mix64(Mix64(seed ^ 0x5eedfea7ULL) ^ static_cast<uint64_t>(v));
}
float RmatFeature(uint64_t key, int64_t j) {
  return static_cast<float>(static_cast<double>(Draw(key, j) >> 40) * 0x1.0p-23 - 1.0);
}
void RmatFeatureRow(uint64_t seed, int64_t v, int64_t d, float* row) {
  const uint64_t key = RmatFeatureKey(seed, v);
  for (int64_t j = 0; j < d; ++j) row[j] = RmatFeature(key, j);
}

// Learnable labels: the argmax (first of equals) of the first min(d, c)
// feature columns, or a hash of the node when there are too few features.
// `row`: the node's features where they are at hand; null generates the c
// columns needed (the streamed path, which holds no rows).
int64_t RmatLabel(uint64_t seed, int64_t v, const float* row, int64_t d, int64_t c) {
  if (d < c) return static_cast<int64_t>(Mix64(seed * 31 + v) % static_cast<uint64_t>(c));
  if (row != nullptr) return std::max_element(row, row + c) - row;
  const uint64_t key = RmatFeatureKey(seed, v);
  int64_t best = 0;
  float best_value = RmatFeature(key, 0);
  for (int64_t j = 1; j < c; ++j) {
    const float f = RmatFeature(key, j);
    if (f > best_value) {
      best_value = f;
      best = j;
    }
  }
  return best;
}

}  // namespace

Status LoadRmat(const LoadOptions& options, RawDataset* out, std::vector<std::string>* notes) {
  const RmatOptions& r = options.rmat;
  FANOUT_RETURN_IF_ERROR(CheckRmatData(options));
  out->name = "rmat-" + std::to_string(r.scale);
  out->format = "rmat";
  out->num_nodes = int64_t{1} << r.scale;
  const int64_t e_total = r.edge_factor * out->num_nodes;
  out->src.reserve(e_total);
  out->dst.reserve(e_total);
  Progress progress("generating R-MAT scale " + std::to_string(r.scale), " edges", e_total,
                    options.quiet);
  int64_t done = 0;
  FANOUT_RETURN_IF_ERROR(ForEachRmatEdge(r, [&](int64_t s, int64_t d) {
    out->src.push_back(s);
    out->dst.push_back(d);
    if ((++done & 0xfffff) == 0) progress.Update(done);
  }));
  progress.Update(done);
  progress.Done();
  if (options.edge_times) {  // synthetic: uniform in [0, 2^30), a seeded hash of the edge's index
    out->edge_times.resize(out->src.size());
    for (size_t i = 0; i < out->src.size(); ++i)
      out->edge_times[i] =
          static_cast<int64_t>(Mix64(options.seed * kGolden64 ^ (i + 0x7e3a)) >> 34);
  }
  out->original_ids.resize(out->num_nodes);
  for (int64_t v = 0; v < out->num_nodes; ++v) out->original_ids[v] = v;
  const int64_t d = options.feature_dim, c = options.num_classes;
  if (const int T = options.rmat_node_types; T > 0) {
    for (int t = 0; t < T; ++t) out->node_types.push_back("t" + std::to_string(t));
    for (int s = 0; s < T; ++s)
      for (int t = 0; t < T; ++t) out->edge_types.push_back({s, "links", t});
    out->node_type.resize(out->num_nodes);
    for (int64_t v = 0; v < out->num_nodes; ++v) out->node_type[v] = static_cast<int32_t>(v % T);
    out->edge_type.resize(out->src.size());
    for (size_t i = 0; i < out->src.size(); ++i)
      out->edge_type[i] = static_cast<int32_t>((out->src[i] % T) * T + out->dst[i] % T);
    out->type_feature_dims.assign(T, d);
  }
  if (d > 0) {
    out->feature_dim = d;
    out->features.resize(static_cast<size_t>(out->num_nodes * d));
    for (int64_t v = 0; v < out->num_nodes; ++v)
      RmatFeatureRow(options.seed, v, d, out->features.data() + v * d);
  }
  if (c > 0) {
    out->num_classes = c;
    out->labels.resize(out->num_nodes);
    for (int64_t v = 0; v < out->num_nodes; ++v)
      out->labels[v] =
          RmatLabel(options.seed, v, d > 0 ? out->features.data() + v * d : nullptr, d, c);
  }
  return AssignRandomSplit(options.split_fractions, options.seed, out);
}

Status StreamRmat(const LoadOptions& options, const EdgeOptions& edge_options, StreamedGraph* out) {
  FANOUT_RETURN_IF_ERROR(CheckStreamable(edge_options));
  if (options.edge_times)
    return Status::InvalidArgument(
        "edge timestamps are generated whole (the in-memory writer), not streamed");
  if (options.rmat_node_types > 0)
    return Status::InvalidArgument(
        "node and edge types are generated whole (the in-memory writer), not streamed");
  FANOUT_RETURN_IF_ERROR(CheckRmatData(options));
  FANOUT_RETURN_IF_ERROR(ForEachRmatEdgeWhile(
      options.rmat, [](int64_t, int64_t) { return false; }));  // checks the options
  const RmatOptions r = options.rmat;
  const uint64_t seed = options.seed;
  const int64_t d = options.feature_dim, c = options.num_classes;
  const std::vector<double> fractions = options.split_fractions;
  *out = StreamedGraph();
  out->name = "rmat-" + std::to_string(r.scale);
  out->format = "rmat";
  out->num_nodes = int64_t{1} << r.scale;
  if (!edge_options.drop_self_loops && !edge_options.make_undirected)
    out->num_edges = r.edge_factor * out->num_nodes;
  out->feature_dim = d;
  out->num_classes = c;
  out->has_labels = c > 0;
  out->has_split = !fractions.empty();
  EdgePlay edges_as_read = [r](const EdgeFn& fn) { return ForEachRmatEdgeWhile(r, fn); };
  out->for_each_edge = [edges_as_read, eo = edge_options](const EdgeFn& fn) {
    return PlayWithEdgeOptions(eo, edges_as_read, fn);
  };
  out->feature_row = [seed, d](int64_t v, float* row) { RmatFeatureRow(seed, v, d, row); };
  out->label = [seed, d, c](int64_t v) { return RmatLabel(seed, v, nullptr, d, c); };
  out->split = [fractions, seed](int64_t v) { return RandomSplitOf(fractions, seed, v); };
  out->original_id = [](int64_t v) { return v; };
  return Status::OK();
}

void NormalizeFeatureRow(float* row, int64_t d) {
  double sum = 0;
  for (int64_t j = 0; j < d; ++j) sum += std::fabs(row[j]);
  if (sum > 0)
    for (int64_t j = 0; j < d; ++j) row[j] = static_cast<float>(row[j] / sum);
}

Status CheckFitsInMemory(const std::string& what, double count, double bytes_each,
                         int64_t limit_bytes) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double physical =
      pages > 0 && page > 0 ? static_cast<double>(pages) * page : 64.0 * (1 << 30);
  const double memory =
      limit_bytes > 0 ? std::min(physical, static_cast<double>(limit_bytes)) : physical;
  const double bytes = count * bytes_each;
  if (count < 0 || bytes > memory) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%.0f values of %.0f bytes (%.1f GiB), more than the %.1f GiB of memory allowed",
                  count, bytes_each, bytes / (1 << 30), memory / (1 << 30));
    return Status::ResourceExhausted(what + buf);
  }
  return Status::OK();
}

}  // namespace fanout::datasets
