// SNAP edge lists: '#' comments, tab or space separated, LF or CRLF.
#include <algorithm>

#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {

Status LoadSnap(const std::string& input, const LoadOptions& options, RawDataset* out,
                std::vector<std::string>* notes) {
  out->format = "snap";
  size_t slash = input.find_last_of('/');
  out->name = slash == std::string::npos ? input : input.substr(slash + 1);
  size_t dot = out->name.find('.');
  if (dot != std::string::npos && dot > 0) out->name.resize(dot);

  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(input, &r));
  Progress progress("reading " + input, " bytes", r->file_size(), options.quiet);
  std::vector<std::string_view> f;
  std::string_view line;
  while (r->Next(&line)) {
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    SplitFields(line, " \t,", true, &f);
    if (f.empty()) continue;
    int64_t u, v;
    if (f.size() < 2 || !ParseInt64(f[0], &u) || !ParseInt64(f[1], &v))
      return Status::InvalidArgument(r->Where() + "expected '<src> <dst>', found '" + std::string(line.substr(0, 80)) + "'");
    if (u < 0 || v < 0)
      return Status::InvalidArgument(r->Where() + "negative node id in '" + std::string(line) + "'");
    out->src.push_back(u);
    out->dst.push_back(v);
    if ((out->src.size() & 0xffff) == 0) progress.Update(r->bytes_read());
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  progress.Update(r->file_size());
  progress.Done(std::to_string(out->src.size()) + " edges");
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
  auto dense = [&](int64_t orig) { return std::lower_bound(ids.begin(), ids.end(), orig) - ids.begin(); };
  for (size_t i = 0; i < out->src.size(); ++i) {
    out->src[i] = dense(out->src[i]);
    out->dst[i] = dense(out->dst[i]);
  }

  if (!options.labels_path.empty()) {
    FANOUT_RETURN_IF_ERROR(LineReader::Open(options.labels_path, &r));
    out->labels.assign(out->num_nodes, -1);
    int64_t unknown = 0;
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
      out->labels[it - ids.begin()] = label;
      out->num_classes = std::max(out->num_classes, label + 1);
    }
    FANOUT_RETURN_IF_ERROR(r->status());
    if (unknown) notes->push_back(options.labels_path + ": skipped " + std::to_string(unknown) + " label(s) of nodes without edges");
  }
  return AssignRandomSplit(options.split_fractions, options.seed, out);
}

}  // namespace fanout::datasets
