// OGB node-property datasets as OGB ships them (raw/ and split/ folders). Read
// whole (LoadOgb) or streamed (StreamOgb, for partitioning in bounded memory);
// both give the same nodes, edges, features, labels and split.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

#include "datasets/bounded_partition.h"
#include "datasets/detail/feature_scratch.h"
#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {

const char* OgbFilesHelp() {
  return "An OGB node-property folder (as ogb's NodePropPredDataset unpacks it, e.g. ogbn-arxiv/) "
         "holds: required raw/num-node-list.csv (the node count) and raw/edge.csv (src,dst per "
         "line); optional raw/node-feat.csv (one row of floats per node), raw/node-label.csv (one "
         "label per node), split/<name>/{train,valid,test}.csv (node ids; --ogb-split picks "
         "<name>, else random fractions), raw/edge_time.csv or raw/edge_year.csv (one per edge, "
         "with --edge-times). Each may also be .csv.gz.";
}

const char* OgbHeteroFilesHelp() {
  return "A heterogeneous OGB folder (ogbn-mag's layout) holds: required raw/num-node-dict.csv "
         "(type names, then counts) and raw/relations/<src>___<rel>___<dst>/edge.csv; optional "
         "raw/node-feat/<type>/node-feat.csv, raw/node-label/<type>/node-label.csv and "
         "split/<name>/<type>/{train,valid,test}.csv. Each may also be .csv.gz.";
}

namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

Status ReadFirstInt(const std::string& path, int64_t* out) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  std::string_view line;
  if (!r->Next(&line)) {
    FANOUT_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(path + ": empty file, expected the node count");
  }
  std::vector<std::string_view> f;
  SplitFields(line, ",", false, &f);
  if (f.empty() || !ParseInt64(f[0], out) || *out <= 0)
    return Status::InvalidArgument(r->Where() + "expected a positive node count, found '" +
                                   std::string(line) + "'");
  return Status::OK();
}

// NotFound naming a required file of an OGB folder that is not there, the
// folder looked in, and what the format needs (`help`).
Status MissingOgbFile(const std::string& dir, const std::string& file, const char* help) {
  return Status::NotFound(dir + ": " + file + " (or " + file + ".gz) is missing; looked in " + dir +
                          "/" + file.substr(0, file.find_last_of('/') + 1) + ". " + help);
}

// The folder's name, its raw/ path and node count; every required file
// checked first, so a missing one is named before any work.
Status OpenOgbFolder(const std::string& input, std::string* dir, std::string* name,
                     std::string* raw, int64_t* n) {
  *dir = input;
  while (dir->size() > 1 && dir->back() == '/') dir->pop_back();
  size_t slash = dir->find_last_of('/');
  *name = slash == std::string::npos ? *dir : dir->substr(slash + 1);
  *raw = *dir + "/raw/";
  if (!Exists(*dir)) return Status::NotFound(*dir + ": no such folder. " + OgbFilesHelp());
  if (!Exists(*raw))
    return Status::NotFound(*dir + ": no raw/ folder (expected an OGB dataset folder). " +
                            OgbFilesHelp());
  for (const char* f : {"raw/num-node-list.csv", "raw/edge.csv"})
    if (!Exists(WithOptionalGz(*dir + "/" + f))) {
      if (std::string(f) == "raw/num-node-list.csv" &&
          Exists(WithOptionalGz(*raw + "num-node-dict.csv")))
        return Status::NotFound(*dir +
                                ": raw/num-node-list.csv is missing, but raw/num-node-dict.csv is "
                                "there: a heterogeneous OGB folder (use --format ogb-hetero)");
      return MissingOgbFile(*dir, f, OgbFilesHelp());
    }
  return ReadFirstInt(WithOptionalGz(*raw + "num-node-list.csv"), n);
}

// The ends' id ranges of an edge file: [0, n_src) and [0, n_dst), named in
// errors (a heterogeneous relation's ends are of two node types).
struct EdgeEnds {
  int64_t n_src = 0, n_dst = 0;
  std::string src_type, dst_type;  // empty: one node set of n_src ids
  std::string Outside(int64_t u, int64_t v) const {
    const std::string edge = "edge " + std::to_string(u) + "," + std::to_string(v);
    if (src_type.empty()) return edge + " has an id outside [0, " + std::to_string(n_src) + ")";
    return edge + " is outside the " + src_type + " ids [0, " + std::to_string(n_src) + ") or " +
           dst_type + " ids [0, " + std::to_string(n_dst) + ")";
  }
};

// Every edge of an OGB edge file (`<src>,<dst>` per line): fn(u, v) returns
// false to stop. `label` (non-empty): progress line prefix.
template <typename Fn>
Status ReadOgbEdgeFile(const std::string& path, const EdgeEnds& ends, const std::string& label,
                       bool quiet, Fn&& fn) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  std::unique_ptr<Progress> progress;
  if (!label.empty())
    progress = std::make_unique<Progress>(label + r->path(), " bytes", r->file_size(), quiet);
  std::vector<std::string_view> f;
  std::string_view line;
  int64_t edges = 0;
  while (r->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, ",", false, &f);
    int64_t u, v;
    if (f.size() != 2 || !ParseInt64(f[0], &u) || !ParseInt64(f[1], &v))
      return Status::InvalidArgument(r->Where() + "expected '<src>,<dst>', found '" +
                                     std::string(line.substr(0, 80)) + "'");
    if (u < 0 || u >= ends.n_src || v < 0 || v >= ends.n_dst)
      return Status::InvalidArgument(r->Where() + ends.Outside(u, v));
    if (!fn(u, v)) return Status::OK();
    if ((++edges & 0xffff) == 0 && progress) progress->Update(r->bytes_read());
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (progress) {
    progress->Update(r->file_size());
    progress->Done(std::to_string(edges) + " edges");
  }
  return Status::OK();
}

// Every edge of raw/edge.csv[.gz] over n nodes.
template <typename Fn>
Status ReadOgbEdges(const std::string& raw, int64_t n, const std::string& label, bool quiet,
                    Fn&& fn) {
  return ReadOgbEdgeFile(WithOptionalGz(raw + "edge.csv"), EdgeEnds{n, n, "", ""}, label, quiet,
                         std::forward<Fn>(fn));
}

// Every row of node-feat.csv[.gz], in node order: fn(v, row, dim); the first
// row fixes dim. Exactly n rows.
template <typename Fn>
Status ReadOgbFeatures(const std::string& feat, int64_t n, bool quiet, Fn&& fn) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(feat, &r));
  Progress progress("reading " + feat, " bytes", r->file_size(), quiet);
  std::vector<std::string_view> f;
  std::string_view line;
  std::vector<float> row;
  int64_t v = 0, dim = 0;
  while (r->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, ",", false, &f);
    if (v == 0) {
      dim = static_cast<int64_t>(f.size());
      row.resize(dim);
    }
    if (static_cast<int64_t>(f.size()) != dim)
      return Status::InvalidArgument(r->Where() + "feature row has " + std::to_string(f.size()) +
                                     " values, expected " + std::to_string(dim));
    if (v >= n)
      return Status::InvalidArgument(r->Where() + "more feature rows than the " +
                                     std::to_string(n) + " nodes");
    for (int64_t j = 0; j < dim; ++j)
      if (!ParseFloat(f[j], &row[j]))
        return Status::InvalidArgument(r->Where() + "feature " + std::to_string(j) + " '" +
                                       std::string(f[j]) + "' is not a number");
    FANOUT_RETURN_IF_ERROR(fn(v, row.data(), dim, r->Where()));
    if ((++v & 0x3fff) == 0) progress.Update(r->bytes_read());
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (v != n)
    return Status::InvalidArgument(feat + ": " + std::to_string(v) + " feature rows for " +
                                   std::to_string(n) + " nodes");
  progress.Update(r->file_size());
  progress.Done(std::to_string(n) + " rows of " + std::to_string(dim));
  return Status::OK();
}

// node-label.csv[.gz]: one class per node ("nan" = unlabeled); empty when absent.
Status ReadOgbLabels(const std::string& raw, int64_t n, std::vector<int64_t>* labels,
                     int64_t* num_classes) {
  std::string lab = WithOptionalGz(raw + "node-label.csv");
  if (!Exists(lab)) return Status::OK();
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(lab, &r));
  labels->reserve(n);
  std::string_view line;
  while (r->Next(&line)) {
    if (line.empty()) continue;
    int64_t l;
    float fl;
    if (line == "nan" || line == "NaN")
      l = -1;  // unlabeled node
    else if (ParseInt64(line, &l)) {
    } else if (ParseFloat(line, &fl) && std::floor(fl) == fl && fl >= -1.0f &&
               fl <= 1073741824.0f) {
      l = static_cast<int64_t>(
          fl);  // range-checked first: the cast of a larger float is undefined (fuzzing)
    } else {
      return Status::InvalidArgument(r->Where() + "label '" + std::string(line) +
                                     "' is not an integer class");
    }
    if (l < -1)
      return Status::InvalidArgument(r->Where() + "label " + std::to_string(l) + " is negative");
    if (l > (int64_t{1} << 30))
      return Status::InvalidArgument(r->Where() + "label " + std::to_string(l) +
                                     " is over 2^30 classes");
    if (static_cast<int64_t>(labels->size()) >= n)
      return Status::InvalidArgument(r->Where() + "more labels than the " + std::to_string(n) +
                                     " nodes");
    labels->push_back(l);
    *num_classes = std::max(*num_classes, l + 1);
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (static_cast<int64_t>(labels->size()) != n)
    return Status::InvalidArgument(lab + ": " + std::to_string(labels->size()) + " labels for " +
                                   std::to_string(n) + " nodes");
  return Status::OK();
}

// Edge timestamps: raw/edge_time.csv[.gz] (or edge_year.csv[.gz], ogbl-collab's
// column), one integer per line of edge.csv, in the same order.
Status ReadOgbEdgeTimes(const std::string& raw, int64_t num_edges, std::vector<int64_t>* times) {
  std::string path = WithOptionalGz(raw + "edge_time.csv");
  if (!Exists(path)) path = WithOptionalGz(raw + "edge_year.csv");
  if (!Exists(path))
    return Status::NotFound(
        raw + ": --edge-times needs raw/edge_time.csv (or edge_year.csv), one integer per edge");
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  times->reserve(static_cast<size_t>(num_edges));
  std::string_view line;
  while (r->Next(&line)) {
    if (line.empty()) continue;
    int64_t t;
    if (!ParseInt64(line, &t))
      return Status::InvalidArgument(r->Where() + "edge time '" + std::string(line.substr(0, 80)) +
                                     "' is not an integer");
    if (static_cast<int64_t>(times->size()) >= num_edges)
      return Status::InvalidArgument(r->Where() + "more edge times than the " +
                                     std::to_string(num_edges) + " edges");
    times->push_back(t);
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (static_cast<int64_t>(times->size()) != num_edges)
    return Status::InvalidArgument(path + ": " + std::to_string(times->size()) +
                                   " edge times for " + std::to_string(num_edges) + " edges");
  return Status::OK();
}

// Split: the named one, else the only (or first) folder under split/; empty
// when there is none.
Status ReadOgbSplit(const std::string& dir, const LoadOptions& options, int64_t n,
                    std::vector<uint8_t>* split, std::vector<std::string>* notes) {
  std::string split_name = options.ogb_split;
  if (split_name.empty()) {
    std::vector<std::string> names;
    if (DIR* d = opendir((dir + "/split").c_str())) {
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') names.push_back(e->d_name);
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    if (!names.empty()) split_name = names[0];
    if (names.size() > 1)
      notes->push_back(dir + "/split: several splits, using '" + split_name +
                       "' (choose with --ogb-split)");
  }
  if (split_name.empty()) {
    notes->push_back(dir + ": no split/ folder; no train/val/test split");
    return Status::OK();
  }
  std::string sd = dir + "/split/" + split_name + "/";
  if (!Exists(sd)) return Status::NotFound(sd + ": no such split folder");
  split->assign(n, static_cast<uint8_t>(Split::kNone));
  FANOUT_RETURN_IF_ERROR(ReadSplitFile(WithOptionalGz(sd + "train.csv"), n, Split::kTrain, split));
  FANOUT_RETURN_IF_ERROR(ReadSplitFile(WithOptionalGz(sd + "valid.csv"), n, Split::kVal, split));
  return ReadSplitFile(WithOptionalGz(sd + "test.csv"), n, Split::kTest, split);
}

}  // namespace

Status LoadOgb(const std::string& input, const LoadOptions& options, RawDataset* out,
               std::vector<std::string>* notes) {
  std::string dir, raw;
  out->format = "ogb";
  int64_t n = 0;
  FANOUT_RETURN_IF_ERROR(OpenOgbFolder(input, &dir, &out->name, &raw, &n));
  out->num_nodes = n;
  FANOUT_RETURN_IF_ERROR(
      CheckFitsInMemory(raw + "num-node-list.csv: " + std::to_string(n) + " nodes need ", n, 32,
                        options.memory_limit_bytes));
  out->original_ids.resize(n);
  for (int64_t v = 0; v < n; ++v) out->original_ids[v] = v;

  FANOUT_RETURN_IF_ERROR(ReadOgbEdges(raw, n, "reading ", options.quiet, [&](int64_t u, int64_t v) {
    out->src.push_back(u);
    out->dst.push_back(v);
    return true;
  }));
  if (options.edge_times)
    FANOUT_RETURN_IF_ERROR(ReadOgbEdgeTimes(raw, out->num_edges(), &out->edge_times));

  std::string feat = WithOptionalGz(raw + "node-feat.csv");
  if (Exists(feat)) {
    FANOUT_RETURN_IF_ERROR(ReadOgbFeatures(
        feat, n, options.quiet,
        [&](int64_t v, const float* row, int64_t dim, const std::string& where) -> Status {
          if (v == 0) {
            out->feature_dim = dim;
            FANOUT_RETURN_IF_ERROR(CheckFitsInMemory(
                where + std::to_string(n) + " nodes x " + std::to_string(dim) + " features need ",
                static_cast<double>(n) * dim, 4, options.memory_limit_bytes));
            out->features.resize(static_cast<size_t>(n * dim));
          }
          std::copy_n(row, dim, out->features.data() + v * dim);
          return Status::OK();
        }));
  } else {
    notes->push_back(raw + ": no node-feat.csv; the dataset has no features");
  }
  FANOUT_RETURN_IF_ERROR(ReadOgbLabels(raw, n, &out->labels, &out->num_classes));
  return ReadOgbSplit(dir, options, n, &out->split, notes);
}

namespace {

// The folders directly under `dir`, sorted; empty when there is none.
std::vector<std::string> SubFolders(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      struct stat st;
      if (stat((dir + "/" + e->d_name).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Status LoadOgbHetero(const std::string& input, const LoadOptions& options, RawDataset* out,
                     std::vector<std::string>* notes) {
  std::string dir = input;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.find_last_of('/');
  out->name = slash == std::string::npos ? dir : dir.substr(slash + 1);
  out->format = "ogb-hetero";
  const std::string raw = dir + "/raw/";
  if (!Exists(dir)) return Status::NotFound(dir + ": no such folder. " + OgbHeteroFilesHelp());
  if (!Exists(raw))
    return Status::NotFound(dir +
                            ": no raw/ folder (expected an OGB heterogeneous dataset folder). " +
                            OgbHeteroFilesHelp());
  if (!Exists(WithOptionalGz(raw + "num-node-dict.csv")))
    return MissingOgbFile(dir, "raw/num-node-dict.csv", OgbHeteroFilesHelp());
  if (options.edge_times)
    return Status::InvalidArgument("--edge-times is not supported for heterogeneous datasets (" +
                                   input + ")");

  // raw/num-node-dict.csv: the type names, then their counts.
  std::vector<int64_t> counts;
  {
    std::unique_ptr<LineReader> r;
    FANOUT_RETURN_IF_ERROR(LineReader::Open(WithOptionalGz(raw + "num-node-dict.csv"), &r));
    std::string_view line;
    std::vector<std::string_view> f;
    if (!r->Next(&line)) {
      FANOUT_RETURN_IF_ERROR(r->status());
      return Status::InvalidArgument(r->path() +
                                     ": empty file, expected node type names and counts");
    }
    SplitFields(line, ",", false, &f);
    for (std::string_view name : f) out->node_types.emplace_back(name);
    if (!r->Next(&line)) {
      FANOUT_RETURN_IF_ERROR(r->status());
      return Status::InvalidArgument(r->path() + ": no second line with the node counts");
    }
    SplitFields(line, ",", false, &f);
    if (f.size() != out->node_types.size())
      return Status::InvalidArgument(r->Where() + std::to_string(f.size()) + " counts for " +
                                     std::to_string(out->node_types.size()) + " node types");
    for (size_t t = 0; t < f.size(); ++t) {
      int64_t c;
      if (!ParseInt64(f[t], &c) || c < 0)
        return Status::InvalidArgument(r->Where() + "node count '" + std::string(f[t]) +
                                       "' of type " + out->node_types[t] + " is not a count");
      counts.push_back(c);
    }
  }
  const int T = static_cast<int>(out->node_types.size());
  std::vector<int64_t> base(T + 1, 0);
  for (int t = 0; t < T; ++t) base[t + 1] = base[t] + counts[t];
  const int64_t n = base[T];
  FANOUT_RETURN_IF_ERROR(
      CheckFitsInMemory(raw + "num-node-dict.csv: " + std::to_string(n) + " nodes need ", n, 40,
                        options.memory_limit_bytes));
  out->num_nodes = n;
  out->node_type.resize(n);
  out->original_ids.resize(n);
  for (int t = 0; t < T; ++t)
    for (int64_t i = 0; i < counts[t]; ++i)
      out->node_type[base[t] + i] = t, out->original_ids[base[t] + i] = i;

  // raw/relations/<src>___<rel>___<dst>/edge.csv: per-type indices.
  const std::vector<std::string> relations = SubFolders(raw + "relations");
  if (relations.empty())
    return Status::NotFound(raw + "relations/: no relation folders (<src>___<rel>___<dst>)");
  for (const std::string& rel : relations) {
    const size_t a = rel.find("___"), b = rel.rfind("___");
    const int s = a == std::string::npos ? -1 : out->FindNodeTypeIndex(rel.substr(0, a));
    const int d = b == std::string::npos ? -1 : out->FindNodeTypeIndex(rel.substr(b + 3));
    if (a == b || s < 0 || d < 0)
      return Status::InvalidArgument(
          raw + "relations/" + rel +
          ": not <src>___<rel>___<dst> with node types from num-node-dict.csv");
    const int32_t e = static_cast<int32_t>(out->edge_types.size());
    out->edge_types.push_back({s, rel.substr(a + 3, b - a - 3), d});
    const EdgeEnds ends{counts[s], counts[d], out->node_types[s], out->node_types[d]};
    FANOUT_RETURN_IF_ERROR(ReadOgbEdgeFile(WithOptionalGz(raw + "relations/" + rel + "/edge.csv"),
                                           ends, "reading ", options.quiet,
                                           [&](int64_t u, int64_t v) {
                                             out->src.push_back(base[s] + u);
                                             out->dst.push_back(base[d] + v);
                                             out->edge_type.push_back(e);
                                             return true;
                                           }));
  }

  // raw/node-feat/<type>/node-feat.csv and raw/node-label/<type>/node-label.csv, where present.
  out->type_feature_dims.assign(T, 0);
  std::vector<std::vector<float>> feats(T);
  for (int t = 0; t < T; ++t) {
    const std::string feat =
        WithOptionalGz(raw + "node-feat/" + out->node_types[t] + "/node-feat.csv");
    if (!Exists(feat)) continue;
    FANOUT_RETURN_IF_ERROR(ReadOgbFeatures(
        feat, counts[t], options.quiet,
        [&](int64_t v, const float* row, int64_t dim, const std::string& where) -> Status {
          if (v == 0) {
            out->type_feature_dims[t] = dim;
            FANOUT_RETURN_IF_ERROR(CheckFitsInMemory(
                where + std::to_string(counts[t]) + " nodes x " + std::to_string(dim) +
                    " features need ",
                static_cast<double>(counts[t]) * dim, 4, options.memory_limit_bytes));
            feats[t].resize(static_cast<size_t>(counts[t] * dim));
          }
          std::copy_n(row, dim, feats[t].data() + v * dim);
          return Status::OK();
        }));
  }
  const int64_t fd =
      *std::max_element(out->type_feature_dims.begin(), out->type_feature_dims.end());
  if (fd > 0) {  // rows at the widest type's width, zero-padded
    FANOUT_RETURN_IF_ERROR(CheckFitsInMemory(raw + "node-feat: " + std::to_string(n) + " nodes x " +
                                                 std::to_string(fd) + " features need ",
                                             static_cast<double>(n) * fd, 4,
                                             options.memory_limit_bytes));
    out->feature_dim = fd;
    out->features.assign(static_cast<size_t>(n * fd), 0.0f);
    for (int t = 0; t < T; ++t) {
      const int64_t d = out->type_feature_dims[t];
      for (int64_t i = 0; i < counts[t] && d > 0; ++i)
        std::copy_n(feats[t].data() + i * d, d, out->features.data() + (base[t] + i) * fd);
      std::vector<float>().swap(feats[t]);
    }
  } else {
    notes->push_back(raw + "node-feat/: no node type has features");
  }
  for (int t = 0; t < T; ++t) {
    std::vector<int64_t> labels;
    int64_t classes = 0;
    FANOUT_RETURN_IF_ERROR(ReadOgbLabels(raw + "node-label/" + out->node_types[t] + "/", counts[t],
                                         &labels, &classes));
    if (labels.empty()) continue;
    if (out->labels.empty()) out->labels.assign(n, -1);
    std::copy(labels.begin(), labels.end(), out->labels.begin() + base[t]);
    out->num_classes = std::max(out->num_classes, classes);
  }

  // split/<name>/<type>/{train,valid,test}.csv: per-type indices.
  std::string split_name = options.ogb_split;
  const std::vector<std::string> splits = SubFolders(dir + "/split");
  if (split_name.empty() && !splits.empty()) {
    split_name = splits[0];
    if (splits.size() > 1)
      notes->push_back(dir + "/split: several splits, using '" + split_name +
                       "' (choose with --ogb-split)");
  }
  if (split_name.empty()) {
    notes->push_back(dir + ": no split/ folder; no train/val/test split");
    return Status::OK();
  }
  const std::string sd = dir + "/split/" + split_name + "/";
  if (!Exists(sd)) return Status::NotFound(sd + ": no such split folder");
  out->split.assign(n, static_cast<uint8_t>(Split::kNone));
  for (int t = 0; t < T; ++t) {
    const std::string td = sd + out->node_types[t] + "/";
    if (!Exists(td)) continue;
    std::vector<uint8_t> split(counts[t], static_cast<uint8_t>(Split::kNone));
    FANOUT_RETURN_IF_ERROR(
        ReadSplitFile(WithOptionalGz(td + "train.csv"), counts[t], Split::kTrain, &split));
    FANOUT_RETURN_IF_ERROR(
        ReadSplitFile(WithOptionalGz(td + "valid.csv"), counts[t], Split::kVal, &split));
    FANOUT_RETURN_IF_ERROR(
        ReadSplitFile(WithOptionalGz(td + "test.csv"), counts[t], Split::kTest, &split));
    std::copy(split.begin(), split.end(), out->split.begin() + base[t]);
  }
  return Status::OK();
}

namespace {

// A streamed OGB folder's state: labels and split in memory (9 bytes per
// node), features converted once to a float32 file read back row by row.
struct OgbStream {
  std::string raw;
  int64_t n = 0;
  std::vector<int64_t> labels;
  std::vector<uint8_t> split;
  detail::FeatureScratch features;
};

}  // namespace

Status StreamOgb(const std::string& input, const LoadOptions& options,
                 const EdgeOptions& edge_options, const std::string& scratch_path,
                 StreamedGraph* out, std::vector<std::string>* notes) {
  FANOUT_RETURN_IF_ERROR(CheckStreamable(edge_options));
  if (options.edge_times)
    return Status::InvalidArgument(
        "edge timestamps are read whole (the in-memory writer), not streamed");
  auto s = std::make_shared<OgbStream>();
  std::string dir, name;
  FANOUT_RETURN_IF_ERROR(OpenOgbFolder(input, &dir, &name, &s->raw, &s->n));
  const int64_t n = s->n;
  FANOUT_RETURN_IF_ERROR(
      CheckFitsInMemory(s->raw + "num-node-list.csv: " + std::to_string(n) + " nodes need ", n, 32,
                        options.memory_limit_bytes));
  *out = StreamedGraph();
  out->name = name;
  out->format = "ogb";
  out->num_nodes = n;

  std::string feat = WithOptionalGz(s->raw + "node-feat.csv");
  if (Exists(feat)) {
    bool created = false;
    FANOUT_RETURN_IF_ERROR(ReadOgbFeatures(
        feat, n, options.quiet,
        [&](int64_t v, const float* row, int64_t dim, const std::string&) -> Status {
          if (v == 0) {
            FANOUT_RETURN_IF_ERROR(s->features.Create(scratch_path, dim));
            created = true;
          }
          return s->features.Append(row);
        }));
    if (created) FANOUT_RETURN_IF_ERROR(s->features.Finish());
    out->feature_dim = s->features.dim();
  } else {
    notes->push_back(s->raw + ": no node-feat.csv; the dataset has no features");
  }
  FANOUT_RETURN_IF_ERROR(ReadOgbLabels(s->raw, n, &s->labels, &out->num_classes));
  FANOUT_RETURN_IF_ERROR(ReadOgbSplit(dir, options, n, &s->split, notes));
  out->has_labels = !s->labels.empty();
  out->has_split = !s->split.empty();

  OgbStream* st = s.get();
  EdgePlay edges_as_read = [st](const EdgeFn& fn) {
    return ReadOgbEdges(st->raw, st->n, "", true, fn);
  };
  out->for_each_edge = [edges_as_read, eo = edge_options](const EdgeFn& fn) {
    return PlayWithEdgeOptions(eo, edges_as_read, fn);
  };
  out->feature_row = [st](int64_t v, float* row) { st->features.Row(v, row); };
  out->label = [st](int64_t v) { return st->labels[v]; };
  out->split = [st](int64_t v) { return st->split[v]; };
  out->original_id = [](int64_t v) { return v; };
  out->node_status = [st]() { return st->features.error(); };
  out->state = s;
  return Status::OK();
}

}  // namespace fanout::datasets
