// SNAP edge lists: '#' comments, tab or space separated, LF or CRLF. Read
// whole (LoadSnap) or streamed (StreamSnap, for partitioning in bounded
// memory); both give the same dense ids, edges, labels and split.
#include <algorithm>
#include <functional>
#include <memory>

#include "common/cpu.h"
#include "datasets/bounded_partition.h"
#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {
namespace {

std::string SnapName(const std::string& input) {
  size_t slash = input.find_last_of('/');
  std::string name = slash == std::string::npos ? input : input.substr(slash + 1);
  size_t dot = name.find('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

// Reads every edge line of `input`: fn(u, v, t) with the ids as written and,
// with_time, the third column as the edge's timestamp (SNAP temporal: SRC
// DST UNIXTS; else t = 0). With a label, progress on stderr ends with "N
// edges" and `extra`.
template <typename Fn>
Status ReadSnapEdges(const std::string& input, const std::string& label, bool quiet, bool with_time,
                     Fn&& fn, const std::function<std::string()>& extra = nullptr) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(input, &r));
  std::unique_ptr<Progress> progress;
  if (!label.empty()) progress = std::make_unique<Progress>(label, " bytes", r->file_size(), quiet);
  std::vector<std::string_view> f;
  std::string_view line;
  int64_t edges = 0;
  while (r->Next(&line)) {
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    SplitFields(line, " \t,", true, &f);
    if (f.empty()) continue;
    int64_t u, v;
    if (f.size() < 2 || !ParseInt64(f[0], &u) || !ParseInt64(f[1], &v))
      return Status::InvalidArgument(r->Where() + "expected '<src> <dst>', found '" +
                                     std::string(line.substr(0, 80)) + "'");
    if (u < 0 || v < 0)
      return Status::InvalidArgument(r->Where() + "negative node id in '" + std::string(line) +
                                     "'");
    int64_t t = 0;
    if (with_time && (f.size() < 3 || !ParseInt64(f[2], &t)))
      return Status::InvalidArgument(
          r->Where() +
          "expected '<src> <dst> <time>' (--edge-times: an integer timestamp "
          "in the third column), found '" +
          std::string(line.substr(0, 80)) + "'");
    fn(u, v, t);
    if ((++edges & 0xffff) == 0 && progress != nullptr) progress->Update(r->bytes_read());
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (progress != nullptr) {
    progress->Update(r->file_size());
    progress->Done(std::to_string(edges) + " edges" + (extra ? extra() : std::string()));
  }
  return Status::OK();
}

// Labels from a '<node> <label>' file, for the nodes in `ids` (sorted).
Status ReadSnapLabels(const std::string& path, const std::vector<int64_t>& ids,
                      std::vector<int64_t>* labels, int64_t* num_classes,
                      std::vector<std::string>* notes) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  labels->assign(ids.size(), -1);
  int64_t unknown = 0;
  std::vector<std::string_view> f;
  std::string_view line;
  while (r->Next(&line)) {
    if (line.empty() || line[0] == '#') continue;
    SplitFields(line, " \t,", true, &f);
    int64_t node, label;
    if (f.size() != 2 || !ParseInt64(f[0], &node) || !ParseInt64(f[1], &label) || label < 0)
      return Status::InvalidArgument(r->Where() + "expected '<node> <label >= 0>'");
    auto it = std::lower_bound(ids.begin(), ids.end(), node);
    if (it == ids.end() || *it != node) {
      ++unknown;
      continue;
    }
    (*labels)[it - ids.begin()] = label;
    *num_classes = std::max(*num_classes, label + 1);
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (unknown)
    notes->push_back(path + ": skipped " + std::to_string(unknown) +
                     " label(s) of nodes without edges");
  return Status::OK();
}

}  // namespace

Status LoadSnap(const std::string& input, const LoadOptions& options, RawDataset* out,
                std::vector<std::string>* notes) {
  out->format = "snap";
  out->name = SnapName(input);
  FANOUT_RETURN_IF_ERROR(ReadSnapEdges(input, "reading " + input, options.quiet, options.edge_times,
                                       [&](int64_t u, int64_t v, int64_t t) {
                                         out->src.push_back(u);
                                         out->dst.push_back(v);
                                         if (options.edge_times) out->edge_times.push_back(t);
                                       }));
  if (out->src.empty()) return Status::InvalidArgument(input + ": no edges");

  // Dense ids in increasing original-id order.
  std::vector<int64_t>& ids = out->original_ids;
  ids.reserve(out->src.size() * 2);
  ids.insert(ids.end(), out->src.begin(), out->src.end());
  ids.insert(ids.end(), out->dst.begin(), out->dst.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ids.shrink_to_fit();
  out->num_nodes = static_cast<int64_t>(ids.size());
  auto dense = [&](int64_t orig) {
    return std::lower_bound(ids.begin(), ids.end(), orig) - ids.begin();
  };
  for (size_t i = 0; i < out->src.size(); ++i) {
    out->src[i] = dense(out->src[i]);
    out->dst[i] = dense(out->dst[i]);
  }
  if (!options.labels_path.empty())
    FANOUT_RETURN_IF_ERROR(
        ReadSnapLabels(options.labels_path, ids, &out->labels, &out->num_classes, notes));
  return AssignRandomSplit(options.split_fractions, options.seed, out);
}

namespace {

struct SnapStream {
  std::string input;
  std::vector<int64_t> ids;  // sorted distinct original ids
  std::vector<int64_t> labels;
  std::vector<double> fractions;
  uint64_t seed = 1;
};

}  // namespace

Status StreamSnap(const std::string& input, const LoadOptions& options,
                  const EdgeOptions& edge_options, StreamedGraph* out,
                  std::vector<std::string>* notes) {
  FANOUT_RETURN_IF_ERROR(CheckStreamable(edge_options));
  FANOUT_RETURN_IF_ERROR(CheckSplitFractions(options.split_fractions));
  if (options.edge_times)
    return Status::InvalidArgument(
        "edge timestamps are read whole (the in-memory writer), not streamed");
  auto s = std::make_shared<SnapStream>();
  s->input = input;
  s->fractions = options.split_fractions;
  s->seed = options.seed;

  // Pass 1: the distinct ids, merged batch by batch (8 bytes per node kept;
  // a batch of endpoints is sorted and merged in, never the whole list).
  const int64_t limit = options.memory_limit_bytes;
  const size_t batch_size = size_t{1} << 22;
  std::vector<int64_t> batch, merged;
  batch.reserve(batch_size);
  int64_t edges = 0, loops = 0;
  Status merge_error;
  auto merge = [&]() {
    std::sort(batch.begin(), batch.end());
    batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
    const int64_t need =
        ResidentSetBytes() + static_cast<int64_t>(s->ids.size() + batch.size()) * 8;
    if (limit > 0 && need > limit && merge_error.ok())
      merge_error = Status::ResourceExhausted(
          input + ": the " + std::to_string(s->ids.size() + batch.size()) +
          " distinct node ids found after " + std::to_string(edges) + " edges need " +
          FormatBytes(static_cast<double>(need)) +
          " with the rest of this process, more than the memory limit " +
          FormatBytes(static_cast<double>(limit)));
    merged.resize(s->ids.size() + batch.size());
    merged.resize(
        std::set_union(s->ids.begin(), s->ids.end(), batch.begin(), batch.end(), merged.begin()) -
        merged.begin());
    s->ids.swap(merged);
    std::vector<int64_t>().swap(merged);
    batch.clear();
  };
  FANOUT_RETURN_IF_ERROR(ReadSnapEdges(
      input, "reading " + input + " (node ids)", options.quiet, false,
      [&](int64_t u, int64_t v, int64_t) {
        ++edges;
        loops += u == v;
        batch.push_back(u);
        batch.push_back(v);
        if (batch.size() >= batch_size && merge_error.ok()) merge();
      },
      [&]() {
        if (merge_error.ok()) merge();
        return ", " + std::to_string(s->ids.size()) + " nodes";
      }));
  FANOUT_RETURN_IF_ERROR(merge_error);
  std::vector<int64_t>().swap(batch);
  s->ids.shrink_to_fit();
  if (edges == 0) return Status::InvalidArgument(input + ": no edges");

  *out = StreamedGraph();
  out->format = "snap";
  out->name = SnapName(input);
  out->num_nodes = static_cast<int64_t>(s->ids.size());
  out->num_edges = (edge_options.drop_self_loops ? edges - loops : edges) +
                   (edge_options.make_undirected ? edges - loops : 0);
  if (!options.labels_path.empty()) {
    FANOUT_RETURN_IF_ERROR(
        ReadSnapLabels(options.labels_path, s->ids, &s->labels, &out->num_classes, notes));
    out->has_labels = true;
  }
  out->has_split = !options.split_fractions.empty();
  SnapStream* st = s.get();
  // The input as written, mapped to dense ids.
  EdgePlay edges_as_read = [st](const EdgeFn& fn) -> Status {
    Status changed;
    auto dense = [&](int64_t orig) {
      auto it = std::lower_bound(st->ids.begin(), st->ids.end(), orig);
      if ((it == st->ids.end() || *it != orig) && changed.ok())
        changed = Status::InvalidArgument(st->input + " changed while it was being read: node id " +
                                          std::to_string(orig) + " was not in it the first time");
      return static_cast<int64_t>(it - st->ids.begin());
    };
    bool go = true;
    FANOUT_RETURN_IF_ERROR(
        ReadSnapEdges(st->input, "", true, false, [&](int64_t u, int64_t v, int64_t) {
          if (!go) return;
          const int64_t a = dense(u), b = dense(v);
          go = changed.ok() && fn(a, b);
        }));
    return changed;
  };
  out->for_each_edge = [edges_as_read, eo = edge_options](const EdgeFn& fn) {
    return PlayWithEdgeOptions(eo, edges_as_read, fn);
  };
  out->label = [st](int64_t v) { return st->labels[v]; };
  out->split = [st](int64_t v) { return RandomSplitOf(st->fractions, st->seed, v); };
  out->original_id = [st](int64_t v) { return st->ids[v]; };
  out->state = s;
  return Status::OK();
}

}  // namespace fanout::datasets
