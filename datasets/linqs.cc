// LINQS text format (Cora, CiteSeer): <name>.content and <name>.cites.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {
namespace {

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Finds <prefix>.content[.gz] and <prefix>.cites from a folder or a prefix.
Status FindLinqsFiles(const std::string& input, std::string* content, std::string* cites,
                      std::string* name) {
  std::string prefix;
  if (IsDir(input)) {
    DIR* d = opendir(input.c_str());
    if (d == nullptr) return Status::IOError(input + ": cannot list folder");
    std::vector<std::string> found;
    while (dirent* e = readdir(d)) {
      std::string f = e->d_name;
      if (EndsWith(f, ".content") || EndsWith(f, ".content.gz")) found.push_back(f);
    }
    closedir(d);
    std::sort(found.begin(), found.end());
    if (found.empty())
      return Status::NotFound(input + ": no *.content or *.content.gz file in this folder");
    std::string f = found[0];
    std::string stem = f.substr(0, f.find(".content"));
    for (const auto& other : found)
      if (other.substr(0, other.find(".content")) != stem)
        return Status::InvalidArgument(input + ": several LINQS datasets here (" + f + ", " +
                                       other + "); pass the path prefix, e.g. " + input + "/" +
                                       stem);
    prefix = input + "/" + stem;
  } else {
    prefix = input;
    for (const char* ext : {".content.gz", ".content", ".cites"})
      if (EndsWith(prefix, ext)) prefix.resize(prefix.size() - std::string(ext).size());
  }
  *content = WithOptionalGz(prefix + ".content");
  *cites = prefix + ".cites";
  size_t slash = prefix.find_last_of('/');
  *name = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  return Status::OK();
}

}  // namespace

Status LoadLinqs(const std::string& input, const LoadOptions& options, RawDataset* out,
                 std::vector<std::string>* notes) {
  std::string content_path, cites_path;
  FANOUT_RETURN_IF_ERROR(FindLinqsFiles(input, &content_path, &cites_path, &out->name));
  out->format = "linqs";

  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(content_path, &r));
  Progress progress("reading " + content_path, " bytes", r->file_size(), options.quiet);
  std::unordered_map<std::string, int64_t> index;
  std::vector<std::string> ids, class_of_node;
  std::vector<std::string_view> fields;
  std::string_view line;
  int64_t dim = -1;
  while (r->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, " \t", true, &fields);
    if (fields.size() < 2)
      return Status::InvalidArgument(r->Where() + "expected '<id> <features...> <class>', found " +
                                     std::to_string(fields.size()) + " field(s)");
    int64_t width = static_cast<int64_t>(fields.size()) - 2;
    if (dim < 0) dim = width;
    if (width != dim)
      return Status::InvalidArgument(r->Where() + "feature row has " + std::to_string(width) +
                                     " values, expected " + std::to_string(dim) +
                                     " (as on line 1)");
    std::string id(fields[0]);
    if (!index.emplace(id, static_cast<int64_t>(ids.size())).second)
      return Status::InvalidArgument(r->Where() + "paper id '" + id + "' appears twice");
    ids.push_back(id);
    size_t base = out->features.size();
    out->features.resize(base + static_cast<size_t>(dim));
    for (int64_t j = 0; j < dim; ++j) {
      if (!ParseFloat(fields[1 + j], &out->features[base + j]))
        return Status::InvalidArgument(r->Where() + "feature " + std::to_string(j) + " '" +
                                       std::string(fields[1 + j]) + "' is not a number");
    }
    class_of_node.emplace_back(fields.back());
    if ((ids.size() & 255) == 0) progress.Update(r->bytes_read());
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (ids.empty()) return Status::InvalidArgument(content_path + ": no nodes");
  progress.Update(r->file_size());
  progress.Done(std::to_string(ids.size()) + " nodes, " + std::to_string(dim) + " features");

  out->num_nodes = static_cast<int64_t>(ids.size());
  out->feature_dim = dim;
  // Classes in name order, so class indices do not depend on line order.
  std::map<std::string, int64_t> classes;
  for (const auto& c : class_of_node) classes.emplace(c, 0);
  int64_t k = 0;
  for (auto& [name, idx] : classes) {
    idx = k++;
    out->class_names.push_back(name);
  }
  out->num_classes = k;
  out->labels.resize(out->num_nodes);
  for (int64_t v = 0; v < out->num_nodes; ++v) out->labels[v] = classes[class_of_node[v]];
  // Integer ids are kept as such; otherwise the names are kept and the
  // integer id is the line index.
  bool numeric = true;
  out->original_ids.resize(out->num_nodes);
  for (int64_t v = 0; v < out->num_nodes && numeric; ++v)
    numeric = ParseInt64(ids[v], &out->original_ids[v]);
  if (!numeric) {
    for (int64_t v = 0; v < out->num_nodes; ++v) out->original_ids[v] = v;
    out->original_names = ids;
  }

  FANOUT_RETURN_IF_ERROR(LineReader::Open(cites_path, &r));
  int64_t unknown = 0;
  std::string examples;
  while (r->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, " \t", true, &fields);
    if (fields.size() != 2)
      return Status::InvalidArgument(r->Where() + "expected '<cited id> <citing id>', found " +
                                     std::to_string(fields.size()) + " field(s)");
    auto cited = index.find(std::string(fields[0]));
    auto citing = index.find(std::string(fields[1]));
    if (cited == index.end() || citing == index.end()) {
      if (++unknown <= 3)
        examples += (examples.empty() ? "" : ", ") + std::string("line ") +
                    std::to_string(r->line_number()) + " ('" +
                    std::string(cited == index.end() ? fields[0] : fields[1]) + "')";
      continue;
    }
    out->src.push_back(citing->second);  // citing -> cited
    out->dst.push_back(cited->second);
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (unknown > 0)
    notes->push_back(cites_path + ": skipped " + std::to_string(unknown) +
                     " edge(s) to ids not in " + content_path + ": " + examples +
                     (unknown > 3 ? ", ..." : ""));
  return Status::OK();
}

}  // namespace fanout::datasets
