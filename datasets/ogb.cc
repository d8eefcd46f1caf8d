// OGB node-property datasets as OGB ships them (raw/ and split/ folders).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>

#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {
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
    return Status::InvalidArgument(r->Where() + "expected a positive node count, found '" + std::string(line) + "'");
  return Status::OK();
}

}  // namespace

Status LoadOgb(const std::string& input, const LoadOptions& options, RawDataset* out,
               std::vector<std::string>* notes) {
  std::string dir = input;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  out->format = "ogb";
  size_t slash = dir.find_last_of('/');
  out->name = slash == std::string::npos ? dir : dir.substr(slash + 1);
  const std::string raw = dir + "/raw/";
  if (!Exists(raw)) return Status::NotFound(dir + ": no raw/ folder (expected an OGB dataset folder)");

  FANOUT_RETURN_IF_ERROR(ReadFirstInt(WithOptionalGz(raw + "num-node-list.csv"), &out->num_nodes));
  const int64_t n = out->num_nodes;
  FANOUT_RETURN_IF_ERROR(CheckFitsInMemory(raw + "num-node-list.csv: " + std::to_string(n) + " nodes need ", n, 32,
                                           options.memory_limit_bytes));
  out->original_ids.resize(n);
  for (int64_t v = 0; v < n; ++v) out->original_ids[v] = v;

  std::unique_ptr<LineReader> r;
  std::vector<std::string_view> f;
  std::string_view line;
  {
    FANOUT_RETURN_IF_ERROR(LineReader::Open(WithOptionalGz(raw + "edge.csv"), &r));
    Progress progress("reading " + r->path(), " bytes", r->file_size(), options.quiet);
    while (r->Next(&line)) {
      if (line.empty()) continue;
      SplitFields(line, ",", false, &f);
      int64_t u, v;
      if (f.size() != 2 || !ParseInt64(f[0], &u) || !ParseInt64(f[1], &v))
        return Status::InvalidArgument(r->Where() + "expected '<src>,<dst>', found '" + std::string(line.substr(0, 80)) + "'");
      if (u < 0 || u >= n || v < 0 || v >= n)
        return Status::InvalidArgument(r->Where() + "edge " + std::to_string(u) + "," + std::to_string(v) +
                                       " has an id outside [0, " + std::to_string(n) + ")");
      out->src.push_back(u);
      out->dst.push_back(v);
      if ((out->src.size() & 0xffff) == 0) progress.Update(r->bytes_read());
    }
    FANOUT_RETURN_IF_ERROR(r->status());
    progress.Update(r->file_size());
    progress.Done(std::to_string(out->src.size()) + " edges");
  }

  std::string feat = WithOptionalGz(raw + "node-feat.csv");
  if (Exists(feat)) {
    FANOUT_RETURN_IF_ERROR(LineReader::Open(feat, &r));
    Progress progress("reading " + feat, " bytes", r->file_size(), options.quiet);
    int64_t v = 0;
    while (r->Next(&line)) {
      if (line.empty()) continue;
      SplitFields(line, ",", false, &f);
      if (v == 0) {
        out->feature_dim = static_cast<int64_t>(f.size());
        FANOUT_RETURN_IF_ERROR(CheckFitsInMemory(r->Where() + std::to_string(n) + " nodes x " +
                                                     std::to_string(out->feature_dim) + " features need ",
                                                 static_cast<double>(n) * out->feature_dim, 4,
                                                 options.memory_limit_bytes));
        out->features.resize(static_cast<size_t>(n * out->feature_dim));
      }
      if (static_cast<int64_t>(f.size()) != out->feature_dim)
        return Status::InvalidArgument(r->Where() + "feature row has " + std::to_string(f.size()) +
                                       " values, expected " + std::to_string(out->feature_dim));
      if (v >= n) return Status::InvalidArgument(r->Where() + "more feature rows than the " + std::to_string(n) + " nodes");
      float* row = out->features.data() + v * out->feature_dim;
      for (int64_t j = 0; j < out->feature_dim; ++j)
        if (!ParseFloat(f[j], &row[j]))
          return Status::InvalidArgument(r->Where() + "feature " + std::to_string(j) + " '" + std::string(f[j]) +
                                         "' is not a number");
      if ((++v & 0x3fff) == 0) progress.Update(r->bytes_read());
    }
    FANOUT_RETURN_IF_ERROR(r->status());
    if (v != n)
      return Status::InvalidArgument(feat + ": " + std::to_string(v) + " feature rows for " + std::to_string(n) + " nodes");
    progress.Update(r->file_size());
    progress.Done(std::to_string(n) + " rows of " + std::to_string(out->feature_dim));
  } else {
    notes->push_back(raw + ": no node-feat.csv; the dataset has no features");
  }

  std::string lab = WithOptionalGz(raw + "node-label.csv");
  if (Exists(lab)) {
    FANOUT_RETURN_IF_ERROR(LineReader::Open(lab, &r));
    out->labels.reserve(n);
    while (r->Next(&line)) {
      if (line.empty()) continue;
      int64_t l;
      float fl;
      if (line == "nan" || line == "NaN") l = -1;  // unlabeled node
      else if (ParseInt64(line, &l)) {
      } else if (ParseFloat(line, &fl) && std::floor(fl) == fl && fl >= -1.0f && fl <= 1073741824.0f) {
        l = static_cast<int64_t>(fl);  // range-checked first: the cast of a larger float is undefined (fuzzing)
      } else {
        return Status::InvalidArgument(r->Where() + "label '" + std::string(line) + "' is not an integer class");
      }
      if (l < -1) return Status::InvalidArgument(r->Where() + "label " + std::to_string(l) + " is negative");
      if (l > (int64_t{1} << 30))
        return Status::InvalidArgument(r->Where() + "label " + std::to_string(l) + " is over 2^30 classes");
      if (static_cast<int64_t>(out->labels.size()) >= n)
        return Status::InvalidArgument(r->Where() + "more labels than the " + std::to_string(n) + " nodes");
      out->labels.push_back(l);
      out->num_classes = std::max(out->num_classes, l + 1);
    }
    FANOUT_RETURN_IF_ERROR(r->status());
    if (static_cast<int64_t>(out->labels.size()) != n)
      return Status::InvalidArgument(lab + ": " + std::to_string(out->labels.size()) + " labels for " +
                                     std::to_string(n) + " nodes");
  }

  // Split: the named one, else the only (or first) folder under split/.
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
    if (names.size() > 1) notes->push_back(dir + "/split: several splits, using '" + split_name + "' (choose with --ogb-split)");
  }
  if (split_name.empty()) {
    notes->push_back(dir + ": no split/ folder; no train/val/test split");
    return Status::OK();
  }
  std::string sd = dir + "/split/" + split_name + "/";
  if (!Exists(sd)) return Status::NotFound(sd + ": no such split folder");
  out->split.assign(n, static_cast<uint8_t>(Split::kNone));
  FANOUT_RETURN_IF_ERROR(ReadSplitFile(WithOptionalGz(sd + "train.csv"), n, Split::kTrain, &out->split));
  FANOUT_RETURN_IF_ERROR(ReadSplitFile(WithOptionalGz(sd + "valid.csv"), n, Split::kVal, &out->split));
  FANOUT_RETURN_IF_ERROR(ReadSplitFile(WithOptionalGz(sd + "test.csv"), n, Split::kTest, &out->split));
  return Status::OK();
}

}  // namespace fanout::datasets
