// Planetoid plain split folder (text conversion of the GCN split pickles).
#include <cstdio>

#include "datasets/formats.h"
#include "datasets/line_reader.h"

namespace fanout::datasets {
namespace {

// Reads "node value" lines (labels.txt).
Status ReadNodeLabels(const std::string& path, std::vector<int64_t>* labels) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  std::vector<std::string_view> f;
  std::string_view line;
  while (r->Next(&line)) {
    if (line.empty() || line[0] == '#') continue;
    SplitFields(line, " \t", true, &f);
    int64_t node, label;
    if (f.size() != 2 || !ParseInt64(f[0], &node) || !ParseInt64(f[1], &label))
      return Status::InvalidArgument(r->Where() + "expected '<node> <label>'");
    if (node != static_cast<int64_t>(labels->size()))
      return Status::InvalidArgument(r->Where() + "node " + std::to_string(node) +
                                     " out of order (expected " + std::to_string(labels->size()) +
                                     ")");
    if (label < -1)
      return Status::InvalidArgument(r->Where() + "label " + std::to_string(label) +
                                     " is negative");
    if (label > (int64_t{1} << 30))
      return Status::InvalidArgument(r->Where() + "label " + std::to_string(label) +
                                     " is over 2^30 classes");
    labels->push_back(label);
  }
  return r->status();
}

}  // namespace

// Reads one node id per line into `split` as `value`.
Status ReadSplitFile(const std::string& path, int64_t num_nodes, Split value,
                     std::vector<uint8_t>* split) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  std::string_view line;
  while (r->Next(&line)) {
    if (line.empty() || line[0] == '#') continue;
    // OGB split files are one-column csv; tolerate surrounding spaces.
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    int64_t v;
    if (!ParseInt64(line, &v))
      return Status::InvalidArgument(r->Where() + "'" + std::string(line) + "' is not a node id");
    if (v < 0 || v >= num_nodes)
      return Status::InvalidArgument(r->Where() + "node " + std::to_string(v) + " is outside [0, " +
                                     std::to_string(num_nodes) + ")");
    if ((*split)[v] != static_cast<uint8_t>(Split::kNone) &&
        (*split)[v] != static_cast<uint8_t>(value))
      return Status::InvalidArgument(r->Where() + "node " + std::to_string(v) +
                                     " is already in another split");
    (*split)[v] = static_cast<uint8_t>(value);
  }
  return r->status();
}

Status LoadPlanetoid(const std::string& input, const LoadOptions& options, RawDataset* out,
                     std::vector<std::string>* notes) {
  out->format = "planetoid";
  std::string dir = input;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  size_t slash = dir.find_last_of('/');
  out->name = slash == std::string::npos ? dir : dir.substr(slash + 1);

  FANOUT_RETURN_IF_ERROR(ReadNodeLabels(WithOptionalGz(dir + "/labels.txt"), &out->labels));
  out->num_nodes = static_cast<int64_t>(out->labels.size());
  if (out->num_nodes == 0) return Status::InvalidArgument(dir + "/labels.txt: no nodes");
  for (int64_t l : out->labels) out->num_classes = std::max(out->num_classes, l + 1);
  out->original_ids.resize(out->num_nodes);
  for (int64_t v = 0; v < out->num_nodes; ++v) out->original_ids[v] = v;

  std::unique_ptr<LineReader> r;
  std::vector<std::string_view> f;
  std::string_view line;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(WithOptionalGz(dir + "/edges.txt"), &r));
  while (r->Next(&line)) {
    if (line.empty() || line[0] == '#') continue;
    SplitFields(line, " \t", true, &f);
    int64_t u, v;
    if (f.size() != 2 || !ParseInt64(f[0], &u) || !ParseInt64(f[1], &v))
      return Status::InvalidArgument(r->Where() + "expected '<node> <node>'");
    if (u < 0 || u >= out->num_nodes || v < 0 || v >= out->num_nodes)
      return Status::InvalidArgument(r->Where() + "edge " + std::to_string(u) + " " +
                                     std::to_string(v) + " has an id outside [0, " +
                                     std::to_string(out->num_nodes) + ")");
    out->src.push_back(u);
    out->dst.push_back(v);
  }
  FANOUT_RETURN_IF_ERROR(r->status());

  // Sparse binary features: "node col col ..."; the header comment names the width.
  std::string feat_path = WithOptionalGz(dir + "/features.txt");
  Status st = LineReader::Open(feat_path, &r);
  if (st.IsNotFound()) {
    notes->push_back(dir + ": no features.txt; the dataset has no features");
  } else {
    FANOUT_RETURN_IF_ERROR(st);
    int64_t dim = 0;
    std::vector<std::pair<int64_t, int64_t>> ones;
    while (r->Next(&line)) {
      if (line.empty()) continue;
      if (line[0] == '#') {
        long long n = 0, d = 0;
        if (std::sscanf(std::string(line).c_str(), "# %lld nodes, %lld", &n, &d) == 2)
          dim = std::max<int64_t>(dim, d);
        continue;
      }
      SplitFields(line, " \t", true, &f);
      int64_t v;
      if (f.empty() || !ParseInt64(f[0], &v) || v < 0 || v >= out->num_nodes)
        return Status::InvalidArgument(r->Where() + "expected '<node in [0, " +
                                       std::to_string(out->num_nodes) + ")> <column>...'");
      for (size_t j = 1; j < f.size(); ++j) {
        int64_t c;
        if (!ParseInt64(f[j], &c) || c < 0)
          return Status::InvalidArgument(r->Where() + "column '" + std::string(f[j]) +
                                         "' is not a column index");
        ones.emplace_back(v, c);
        dim = std::max(dim, c + 1);
      }
    }
    FANOUT_RETURN_IF_ERROR(r->status());
    FANOUT_RETURN_IF_ERROR(CheckFitsInMemory(
        feat_path + ": " + std::to_string(out->num_nodes) + " nodes x " + std::to_string(dim) +
            " features (the largest column or the header) need ",
        static_cast<double>(out->num_nodes) * dim, 4, options.memory_limit_bytes));
    out->feature_dim = dim;
    out->features.assign(static_cast<size_t>(out->num_nodes * dim), 0.0f);
    for (auto [v, c] : ones) out->features[v * dim + c] = 1.0f;
  }

  out->split.assign(out->num_nodes, static_cast<uint8_t>(Split::kNone));
  FANOUT_RETURN_IF_ERROR(
      ReadSplitFile(dir + "/split_train.txt", out->num_nodes, Split::kTrain, &out->split));
  FANOUT_RETURN_IF_ERROR(
      ReadSplitFile(dir + "/split_val.txt", out->num_nodes, Split::kVal, &out->split));
  FANOUT_RETURN_IF_ERROR(
      ReadSplitFile(dir + "/split_test.txt", out->num_nodes, Split::kTest, &out->split));

  return Status::OK();
}

}  // namespace fanout::datasets
