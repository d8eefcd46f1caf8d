// Tables with a schema (fanout-partition --format tables --schema graph.json;
// docs/DATA.md): node and edge tables as CSV files (optionally gzip), a JSON
// schema naming their columns. See formats.h (LoadTables) for the schema.
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"
#include "datasets/table_source.h"

namespace fanout::datasets {

namespace {

using nlohmann::json;

// One node table's columns, resolved against its files' headers.
struct NodeSpec {
  std::string type;
  std::vector<std::string> files;
  std::string id;
  bool string_ids = false;
  std::vector<std::string> feature_columns;  // scalar columns, in order
  std::string feature_list;                  // or one column holding the row ("1 2 3" or "[1,2,3]")
  std::string label, split, train_mask, val_mask, test_mask;
};

struct EdgeSpec {
  std::string type;
  std::vector<std::string> files;
  std::string source, destination;            // columns
  std::string source_type, destination_type;  // node types
  std::string time;
  std::string reverse;  // a reverse edge type's name ("" = none)
};

struct Schema {
  std::string name;
  std::vector<NodeSpec> nodes;
  std::vector<EdgeSpec> edges;
  bool drop_dangling = false;
  int heterogeneous = -1;  // -1: more than one node or edge table; 0/1: as the schema says
  char delimiter = ',';
};

std::string FolderOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// `what`'s files: each a path or a glob, relative to the schema's folder;
// every pattern must match a file.
Status ResolveFiles(const json& j, const std::string& base, const std::string& what,
                    std::vector<std::string>* out) {
  std::vector<std::string> patterns;
  if (j.is_string()) {
    patterns.push_back(j.get<std::string>());
  } else if (j.is_array() && !j.empty()) {
    for (const json& p : j) {
      if (!p.is_string()) return Status::InvalidArgument(what + ": \"files\" must list strings");
      patterns.push_back(p.get<std::string>());
    }
  } else {
    return Status::InvalidArgument(what + ": \"files\" must be a path, a glob or a list of them");
  }
  for (const std::string& p : patterns) {
    const std::string full = !p.empty() && p[0] == '/' ? p : base + "/" + p;
    glob_t g{};
    const int rc = ::glob(full.c_str(), 0, nullptr, &g);
    std::vector<std::string> found;
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (found.empty()) return Status::NotFound(what + ": no file matches '" + full + "'");
    std::sort(found.begin(), found.end());
    out->insert(out->end(), found.begin(), found.end());
  }
  return Status::OK();
}

Status Str(const json& j, const char* key, const std::string& what, std::string* out,
           bool required) {
  if (!j.contains(key)) {
    if (required) return Status::InvalidArgument(what + ": \"" + key + "\" is missing");
    return Status::OK();
  }
  if (!j[key].is_string() || j[key].get<std::string>().empty())
    return Status::InvalidArgument(what + ": \"" + key + "\" must be a non-empty string");
  *out = j[key].get<std::string>();
  return Status::OK();
}

Status CheckKeys(const json& j, const std::string& what, std::initializer_list<const char*> known) {
  if (!j.is_object()) return Status::InvalidArgument(what + " must be a JSON object");
  for (const auto& [k, v] : j.items()) {
    bool ok = false;
    for (const char* x : known) ok = ok || k == x;
    if (!ok) {
      std::string list;
      for (const char* x : known) list += std::string(list.empty() ? "" : ", ") + x;
      if (k == "weight")
        return Status::InvalidArgument(
            what + ": \"weight\": Fanout's stores hold no edge weights yet (drop the key)");
      return Status::InvalidArgument(what + ": unknown key \"" + k + "\" (known: " + list + ")");
    }
  }
  return Status::OK();
}

Status ParseSchema(const std::string& path, Schema* s) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("schema " + path + " cannot be read");
  json j;
  try {
    j = json::parse(f);
  } catch (const std::exception& e) {
    return Status::InvalidArgument("schema " + path + " is not JSON: " + e.what());
  }
  const std::string base = FolderOf(path), w = "schema " + path;
  FANOUT_RETURN_IF_ERROR(
      CheckKeys(j, w, {"name", "nodes", "edges", "dangling_edges", "delimiter", "heterogeneous"}));
  if (j.contains("heterogeneous")) {
    if (!j["heterogeneous"].is_boolean())
      return Status::InvalidArgument(w + ": \"heterogeneous\" must be true or false");
    s->heterogeneous = j["heterogeneous"].get<bool>() ? 1 : 0;
  }
  s->name = "tables";
  FANOUT_RETURN_IF_ERROR(Str(j, "name", w, &s->name, false));
  std::string dangling = "error", delim = ",";
  FANOUT_RETURN_IF_ERROR(Str(j, "dangling_edges", w, &dangling, false));
  if (dangling != "error" && dangling != "drop")
    return Status::InvalidArgument(
        w + ": \"dangling_edges\" must be \"error\" or \"drop\", not \"" + dangling + "\"");
  s->drop_dangling = dangling == "drop";
  FANOUT_RETURN_IF_ERROR(Str(j, "delimiter", w, &delim, false));
  if (delim.size() != 1 || delim[0] == '"')
    return Status::InvalidArgument(w + ": \"delimiter\" must be one character (not '\"')");
  s->delimiter = delim[0];
  if (!j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty())
    return Status::InvalidArgument(w + ": \"nodes\" must list at least one node table");
  if (!j.contains("edges") || !j["edges"].is_array() || j["edges"].empty())
    return Status::InvalidArgument(w + ": \"edges\" must list at least one edge table");
  std::unordered_set<std::string> node_types, edge_types;
  for (size_t i = 0; i < j["nodes"].size(); ++i) {
    const json& n = j["nodes"][i];
    const std::string what = w + ", nodes[" + std::to_string(i) + "]";
    FANOUT_RETURN_IF_ERROR(CheckKeys(n, what,
                                     {"type", "files", "id", "id_type", "features", "label",
                                      "split", "train_mask", "val_mask", "test_mask"}));
    NodeSpec ns;
    FANOUT_RETURN_IF_ERROR(Str(n, "type", what, &ns.type, j["nodes"].size() > 1));
    if (ns.type.empty()) ns.type = "node";
    if (!node_types.insert(ns.type).second)
      return Status::InvalidArgument(what + ": node type '" + ns.type + "' is listed twice");
    if (!n.contains("files")) return Status::InvalidArgument(what + ": \"files\" is missing");
    FANOUT_RETURN_IF_ERROR(ResolveFiles(n["files"], base, what, &ns.files));
    FANOUT_RETURN_IF_ERROR(Str(n, "id", what, &ns.id, true));
    std::string id_type = "int64";
    FANOUT_RETURN_IF_ERROR(Str(n, "id_type", what, &id_type, false));
    if (id_type != "int64" && id_type != "string")
      return Status::InvalidArgument(
          what + ": \"id_type\" must be \"int64\" or \"string\", not \"" + id_type + "\"");
    ns.string_ids = id_type == "string";
    if (n.contains("features")) {
      const json& fj = n["features"];
      if (fj.is_string() && !fj.get<std::string>().empty()) {
        ns.feature_list = fj.get<std::string>();
      } else if (fj.is_array() && !fj.empty()) {
        for (const json& c : fj) {
          if (!c.is_string() || c.get<std::string>().empty())
            return Status::InvalidArgument(what + ": \"features\" must list column names");
          ns.feature_columns.push_back(c.get<std::string>());
        }
      } else {
        return Status::InvalidArgument(
            what + ": \"features\" must name one list column or list scalar columns");
      }
    }
    FANOUT_RETURN_IF_ERROR(Str(n, "label", what, &ns.label, false));
    FANOUT_RETURN_IF_ERROR(Str(n, "split", what, &ns.split, false));
    FANOUT_RETURN_IF_ERROR(Str(n, "train_mask", what, &ns.train_mask, false));
    FANOUT_RETURN_IF_ERROR(Str(n, "val_mask", what, &ns.val_mask, false));
    FANOUT_RETURN_IF_ERROR(Str(n, "test_mask", what, &ns.test_mask, false));
    if (!ns.split.empty() && !(ns.train_mask + ns.val_mask + ns.test_mask).empty())
      return Status::InvalidArgument(what + ": give \"split\" or masks, not both");
    s->nodes.push_back(std::move(ns));
  }
  for (size_t i = 0; i < j["edges"].size(); ++i) {
    const json& e = j["edges"][i];
    const std::string what = w + ", edges[" + std::to_string(i) + "]";
    FANOUT_RETURN_IF_ERROR(CheckKeys(e, what,
                                     {"type", "files", "source", "destination", "source_type",
                                      "destination_type", "time", "reverse"}));
    EdgeSpec es;
    FANOUT_RETURN_IF_ERROR(Str(e, "type", what, &es.type, j["edges"].size() > 1));
    if (es.type.empty()) es.type = "to";
    if (!e.contains("files")) return Status::InvalidArgument(what + ": \"files\" is missing");
    FANOUT_RETURN_IF_ERROR(ResolveFiles(e["files"], base, what, &es.files));
    FANOUT_RETURN_IF_ERROR(Str(e, "source", what, &es.source, true));
    FANOUT_RETURN_IF_ERROR(Str(e, "destination", what, &es.destination, true));
    const bool one_type = s->nodes.size() == 1;
    FANOUT_RETURN_IF_ERROR(Str(e, "source_type", what, &es.source_type, !one_type));
    FANOUT_RETURN_IF_ERROR(Str(e, "destination_type", what, &es.destination_type, !one_type));
    if (one_type) {
      if (es.source_type.empty()) es.source_type = s->nodes[0].type;
      if (es.destination_type.empty()) es.destination_type = s->nodes[0].type;
    }
    for (const std::string* t : {&es.source_type, &es.destination_type})
      if (!node_types.count(*t))
        return Status::InvalidArgument(what + ": node type '" + *t + "' has no node table");
    FANOUT_RETURN_IF_ERROR(Str(e, "time", what, &es.time, false));
    FANOUT_RETURN_IF_ERROR(Str(e, "reverse", what, &es.reverse, false));
    const std::string key = es.source_type + "/" + es.type + "/" + es.destination_type;
    if (!edge_types.insert(key).second)
      return Status::InvalidArgument(what + ": edge type (" + es.source_type + ", " + es.type +
                                     ", " + es.destination_type + ") is listed twice");
    s->edges.push_back(std::move(es));
  }
  const bool timed = !s->edges[0].time.empty();
  for (const EdgeSpec& e : s->edges)
    if (e.time.empty() == timed)
      return Status::InvalidArgument(
          w + ": either every edge table names a \"time\" column or none does (edge type '" +
          e.type + "')");
  return Status::OK();
}

// A CSV file read row by row: its header's columns looked up by name.
class CsvTable final : public TableSource {
 public:
  static Status Open(const std::string& path, char delimiter, bool quiet,
                     std::unique_ptr<TableSource>* out) {
    auto t = std::unique_ptr<CsvTable>(new CsvTable());
    t->delim_ = delimiter;
    FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &t->r_));
    t->progress_ =
        std::make_unique<Progress>("reading " + path, " bytes", t->r_->file_size(), quiet);
    std::string_view line;
    while (t->r_->Next(&line)) {
      if (line.size() >= 3 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      Status st = t->Split(line, &t->header_);
      if (!st.ok()) return Status::InvalidArgument(t->r_->Where() + st.message());
      *out = std::move(t);
      return Status::OK();
    }
    FANOUT_RETURN_IF_ERROR(t->r_->status());
    return Status::InvalidArgument(path + ": empty file, expected a header line");
  }
  Status Column(const std::string& name, const std::string& role, size_t* index) override {
    for (size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) {
        *index = i;
        return Status::OK();
      }
    std::string have;
    for (size_t i = 0; i < header_.size() && i < 12; ++i) have += (i ? ", " : "") + header_[i];
    return Status::InvalidArgument(r_->path() + ": no column '" + name + "' (the " + role +
                                   "); its header has: " + have);
  }
  bool Next(Status* st) override {
    std::string_view line;
    while (r_->Next(&line)) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      *st = Split(line, &row_);
      if (st->ok() && row_.size() != header_.size())
        *st = Status::InvalidArgument("expected " + std::to_string(header_.size()) +
                                      " fields (as the header), found " +
                                      std::to_string(row_.size()));
      if (!st->ok()) *st = Status::InvalidArgument(r_->Where() + st->message());
      if ((++rows_ & 0x3fff) == 0) progress_->Update(r_->bytes_read());
      return true;
    }
    *st = r_->status();
    progress_->Update(r_->file_size());
    progress_->Done(std::to_string(rows_) + " rows");
    return false;
  }
  bool Empty(size_t col) const override { return row_[col].empty(); }
  Status Int(size_t col, int64_t* out) const override {
    if (!ParseInt64(row_[col], out))
      return Status::InvalidArgument(Where(col) + "'" + row_[col].substr(0, 40) +
                                     "' is not an integer");
    return Status::OK();
  }
  Status Float(size_t col, float* out) const override { return ParseOne(col, row_[col], out); }
  // A list cell: "1 2 3", "1;2;3" or "[1, 2, 3]".
  Status FloatList(size_t col, std::vector<float>* out) const override {
    std::string_view s = row_[col];
    while (!s.empty() && (s.front() == ' ' || s.front() == '[')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == ']')) s.remove_suffix(1);
    out->clear();
    std::vector<std::string_view> parts;
    SplitFields(s, " ,;", true, &parts);
    for (std::string_view p : parts) {
      if (p.empty()) continue;
      float v = 0;
      FANOUT_RETURN_IF_ERROR(ParseOne(col, p, &v));
      out->push_back(v);
    }
    return Status::OK();
  }
  std::string Text(size_t col) const override { return row_[col]; }
  bool Truthy(size_t col) const override {
    const std::string& s = row_[col];
    return s == "1" || s == "true" || s == "True" || s == "yes";
  }
  std::string Where(size_t column) const override {
    return r_->Where() + "column '" + header_[column] + "': ";
  }

 private:
  CsvTable() = default;
  Status ParseOne(size_t col, std::string_view text, float* out) const {
    if (!ParseFloat(text, out) || !std::isfinite(*out))
      return Status::InvalidArgument(Where(col) + "'" + std::string(text.substr(0, 40)) +
                                     "' is not a finite number");
    return Status::OK();
  }
  Status Split(std::string_view line, std::vector<std::string>* f) const {
    if (delim_ == ',') return SplitCsvLine(line, f);
    f->clear();
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i)
      if (i == line.size() || line[i] == delim_) {
        f->emplace_back(line.substr(start, i - start));
        start = i + 1;
      }
    return Status::OK();
  }
  std::unique_ptr<LineReader> r_;
  std::unique_ptr<Progress> progress_;
  std::vector<std::string> header_, row_;
  char delim_ = ',';
  int64_t rows_ = 0;
};

// A table file: Parquet (.parquet, .pq) through pyarrow, else CSV.
Status OpenTable(const std::string& path, char delimiter, bool quiet,
                 std::unique_ptr<TableSource>* out) {
  if (IsParquetPath(path)) return OpenParquetTable(path, quiet, out);
  return CsvTable::Open(path, delimiter, quiet, out);
}

}  // namespace

Status LoadTables(const std::string& schema_path, const LoadOptions& options, RawDataset* out,
                  std::vector<std::string>* notes) {
  Schema s;
  FANOUT_RETURN_IF_ERROR(ParseSchema(schema_path, &s));
  out->name = s.name;
  out->format = "tables";
  const bool many = s.nodes.size() > 1 || s.edges.size() > 1 ||
                    std::any_of(s.edges.begin(), s.edges.end(),
                                [](const EdgeSpec& e) { return !e.reverse.empty(); });
  if (s.heterogeneous == 0 && many)
    return Status::InvalidArgument("schema " + schema_path +
                                   ": \"heterogeneous\": false, but it lists more than one node or "
                                   "edge type");
  const bool hetero = s.heterogeneous == 1 || many;
  const int num_types = static_cast<int>(s.nodes.size());
  // Nodes: dense ids in type order, each type's rows in file order.
  std::vector<std::unordered_map<std::string, int64_t>> by_name(static_cast<size_t>(num_types));
  std::vector<std::unordered_map<int64_t, int64_t>> by_id(static_cast<size_t>(num_types));
  // Per type: its feature rows back to back (every row of a type has its width), and its first id.
  std::vector<std::vector<float>> type_rows(static_cast<size_t>(num_types));
  std::vector<int64_t> type_first(static_cast<size_t>(num_types), 0);
  std::vector<int64_t> type_dims(static_cast<size_t>(num_types), 0);
  bool any_label = false, any_split = false, any_names = false;
  std::vector<float> row;
  for (int t = 0; t < num_types; ++t) {
    const NodeSpec& ns = s.nodes[static_cast<size_t>(t)];
    type_first[static_cast<size_t>(t)] = out->num_nodes;
    int64_t width = -1;
    const std::string what = "node type '" + ns.type + "'";
    for (const std::string& file : ns.files) {
      std::unique_ptr<TableSource> tb;
      FANOUT_RETURN_IF_ERROR(OpenTable(file, s.delimiter, options.quiet, &tb));
      size_t id_col = 0, list_col = 0, label_col = 0, split_col = 0, masks[3] = {0, 0, 0};
      FANOUT_RETURN_IF_ERROR(tb->Column(ns.id, what + "'s id", &id_col));
      std::vector<size_t> feat_cols;
      for (const std::string& c : ns.feature_columns) {
        size_t k = 0;
        FANOUT_RETURN_IF_ERROR(tb->Column(c, what + "'s feature", &k));
        feat_cols.push_back(k);
      }
      if (!ns.feature_list.empty())
        FANOUT_RETURN_IF_ERROR(tb->Column(ns.feature_list, what + "'s features", &list_col));
      if (!ns.label.empty())
        FANOUT_RETURN_IF_ERROR(tb->Column(ns.label, what + "'s label", &label_col));
      if (!ns.split.empty())
        FANOUT_RETURN_IF_ERROR(tb->Column(ns.split, what + "'s split", &split_col));
      const std::string* mask_names[3] = {&ns.train_mask, &ns.val_mask, &ns.test_mask};
      for (int m = 0; m < 3; ++m)
        if (!mask_names[m]->empty())
          FANOUT_RETURN_IF_ERROR(tb->Column(*mask_names[m], what + "'s mask", &masks[m]));
      const bool has_masks = !(ns.train_mask + ns.val_mask + ns.test_mask).empty();
      Status st;
      while (tb->Next(&st)) {
        FANOUT_RETURN_IF_ERROR(st);
        const int64_t v = out->num_nodes;
        int64_t original = by_name[t].size() + by_id[t].size();
        if (ns.string_ids) {
          const std::string key = tb->Text(id_col);
          if (key.empty()) return Status::InvalidArgument(tb->Where(id_col) + "an empty id");
          if (!by_name[t].emplace(key, v).second)
            return Status::InvalidArgument(tb->Where(id_col) + "id '" + key.substr(0, 40) +
                                           "' is listed twice for " + what);
          out->original_names.push_back(key);
          any_names = true;
        } else {
          FANOUT_RETURN_IF_ERROR(tb->Int(id_col, &original));
          if (!by_id[t].emplace(original, v).second)
            return Status::InvalidArgument(tb->Where(id_col) + "id " + std::to_string(original) +
                                           " is listed twice for " + what);
          out->original_names.emplace_back();
        }
        out->original_ids.push_back(original);
        out->node_type.push_back(t);
        // Features.
        row.clear();
        if (!feat_cols.empty()) {
          row.resize(feat_cols.size());
          for (size_t c = 0; c < feat_cols.size(); ++c)
            FANOUT_RETURN_IF_ERROR(tb->Float(feat_cols[c], &row[c]));
        } else if (!ns.feature_list.empty()) {
          FANOUT_RETURN_IF_ERROR(tb->FloatList(list_col, &row));
        }
        if (!feat_cols.empty() || !ns.feature_list.empty()) {
          if (width < 0) width = static_cast<int64_t>(row.size());
          if (static_cast<int64_t>(row.size()) != width)
            return Status::InvalidArgument(tb->Where(feat_cols.empty() ? list_col : feat_cols[0]) +
                                           "a feature row of " + std::to_string(row.size()) +
                                           " values; earlier rows of " + what + " have " +
                                           std::to_string(width));
        }
        type_rows[static_cast<size_t>(t)].insert(type_rows[static_cast<size_t>(t)].end(),
                                                 row.begin(), row.end());
        // Label.
        int64_t label = -1;
        if (!ns.label.empty() && !tb->Empty(label_col)) {
          FANOUT_RETURN_IF_ERROR(tb->Int(label_col, &label));
          if (label < -1)
            return Status::InvalidArgument(tb->Where(label_col) + "label " + std::to_string(label) +
                                           " (-1 or empty: none)");
          any_label = any_label || label >= 0;
        }
        out->labels.push_back(label);
        // Split.
        uint8_t split = static_cast<uint8_t>(Split::kNone);
        if (!ns.split.empty()) {
          const std::string x = tb->Text(split_col);
          if (x == "train")
            split = static_cast<uint8_t>(Split::kTrain);
          else if (x == "val" || x == "valid" || x == "validation")
            split = static_cast<uint8_t>(Split::kVal);
          else if (x == "test")
            split = static_cast<uint8_t>(Split::kTest);
          else if (!x.empty() && x != "none")
            return Status::InvalidArgument(tb->Where(split_col) + "'" + x.substr(0, 40) +
                                           "' (train, val, test, or empty)");
          any_split = true;
        } else if (has_masks) {
          for (int m = 0; m < 3; ++m)
            if (!mask_names[m]->empty() && tb->Truthy(masks[m])) {
              if (split != static_cast<uint8_t>(Split::kNone))
                return Status::InvalidArgument(tb->Where(masks[m]) + "the node is in two masks");
              split = static_cast<uint8_t>(m + 1);
            }
          any_split = true;
        }
        out->split.push_back(split);
        ++out->num_nodes;
      }
      FANOUT_RETURN_IF_ERROR(st);
    }
    type_dims[static_cast<size_t>(t)] = std::max<int64_t>(0, width);
  }
  if (out->num_nodes == 0) return Status::InvalidArgument("schema " + schema_path + ": no nodes");
  // Features: the widest type's width, others zero-padded.
  out->feature_dim = *std::max_element(type_dims.begin(), type_dims.end());
  if (out->feature_dim > 0) {
    FANOUT_RETURN_IF_ERROR(CheckFitsInMemory("the feature matrix",
                                             static_cast<double>(out->num_nodes * out->feature_dim),
                                             4, options.memory_limit_bytes));
    if (num_types == 1) {  // one type: its rows are the matrix
      out->features = std::move(type_rows[0]);
    } else {
      out->features.assign(static_cast<size_t>(out->num_nodes * out->feature_dim), 0.0f);
      for (size_t t = 0; t < type_rows.size(); ++t) {
        const int64_t w = type_dims[t],
                      n = w > 0 ? static_cast<int64_t>(type_rows[t].size()) / w : 0;
        for (int64_t k = 0; k < n; ++k)
          std::copy(type_rows[t].begin() + k * w, type_rows[t].begin() + (k + 1) * w,
                    out->features.begin() + (type_first[t] + k) * out->feature_dim);
        std::vector<float>().swap(type_rows[t]);
      }
    }
  }
  type_rows.clear();
  if (any_label) {
    for (int64_t l : out->labels) out->num_classes = std::max(out->num_classes, l + 1);
  } else {
    out->labels.clear();
  }
  if (!any_split) out->split.clear();
  if (!any_names) {
    out->original_names.clear();
  }
  // Edges.
  auto type_index = [&](const std::string& name) {
    for (int t = 0; t < num_types; ++t)
      if (s.nodes[static_cast<size_t>(t)].type == name) return t;
    return -1;
  };
  // Integer ids in a compact range (most tables number their rows) resolve
  // through an array instead of the hash map: an edge table's endpoints are
  // most of the reading time.
  std::vector<int64_t> direct_lo(static_cast<size_t>(num_types), 0);
  std::vector<std::vector<int64_t>> direct(static_cast<size_t>(num_types));
  for (int t = 0; t < num_types; ++t) {
    if (by_id[t].empty()) continue;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& [id, v] : by_id[t]) lo = std::min(lo, id), hi = std::max(hi, id);
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    if (span > 4 * by_id[t].size() + (uint64_t{1} << 16)) continue;
    direct_lo[t] = lo;
    direct[t].assign(span, -1);
    for (const auto& [id, v] : by_id[t])
      direct[t][static_cast<uint64_t>(id) - static_cast<uint64_t>(lo)] = v;
    std::unordered_map<int64_t, int64_t>().swap(by_id[t]);
  }
  const bool timed = !s.edges[0].time.empty();
  int64_t dangling = 0;
  for (const EdgeSpec& es : s.edges) {
    const int st_ = type_index(es.source_type), dt_ = type_index(es.destination_type);
    const int32_t etype = static_cast<int32_t>(out->edge_types.size());
    out->edge_types.push_back({st_, es.type, dt_});
    const size_t first = out->src.size();
    for (const std::string& file : es.files) {
      std::unique_ptr<TableSource> tb;
      FANOUT_RETURN_IF_ERROR(OpenTable(file, s.delimiter, options.quiet, &tb));
      size_t sc = 0, dc = 0, tc = 0;
      const std::string what = "edge type '" + es.type + "'";
      FANOUT_RETURN_IF_ERROR(tb->Column(es.source, what + "'s source", &sc));
      FANOUT_RETURN_IF_ERROR(tb->Column(es.destination, what + "'s destination", &dc));
      if (timed) FANOUT_RETURN_IF_ERROR(tb->Column(es.time, what + "'s time", &tc));
      auto resolve = [&](int t, size_t col, int64_t* v, bool* found) -> Status {
        const NodeSpec& ns = s.nodes[static_cast<size_t>(t)];
        if (ns.string_ids) {
          auto it = by_name[t].find(tb->Text(col));
          *found = it != by_name[t].end();
          if (*found) *v = it->second;
        } else {
          int64_t id = 0;
          FANOUT_RETURN_IF_ERROR(tb->Int(col, &id));
          if (!direct[t].empty()) {
            const uint64_t k = static_cast<uint64_t>(id) - static_cast<uint64_t>(direct_lo[t]);
            *found = k < direct[t].size() && direct[t][k] >= 0;
            if (*found) *v = direct[t][k];
          } else {
            auto it = by_id[t].find(id);
            *found = it != by_id[t].end();
            if (*found) *v = it->second;
          }
        }
        if (!*found && !s.drop_dangling)
          return Status::InvalidArgument(
              tb->Where(col) + "'" + tb->Text(col).substr(0, 40) + "' names no node of type '" +
              ns.type +
              "' (the schema's \"dangling_edges\": \"drop\" counts and drops such edges)");
        return Status::OK();
      };
      Status st;
      while (tb->Next(&st)) {
        FANOUT_RETURN_IF_ERROR(st);
        int64_t u = 0, v = 0, time = 0;
        bool fu = false, fv = false;
        FANOUT_RETURN_IF_ERROR(resolve(st_, sc, &u, &fu));
        FANOUT_RETURN_IF_ERROR(resolve(dt_, dc, &v, &fv));
        if (timed) FANOUT_RETURN_IF_ERROR(tb->Int(tc, &time));
        if (!fu || !fv) {
          ++dangling;
          continue;
        }
        out->src.push_back(u);
        out->dst.push_back(v);
        if (timed) out->edge_times.push_back(time);
        if (hetero) out->edge_type.push_back(etype);
      }
      FANOUT_RETURN_IF_ERROR(st);
    }
    if (!es.reverse.empty()) {  // the reverse edge type, every edge reversed
      const int32_t rtype = static_cast<int32_t>(out->edge_types.size());
      out->edge_types.push_back({dt_, es.reverse, st_});
      const size_t last = out->src.size();
      for (size_t i = first; i < last; ++i) {
        out->src.push_back(out->dst[i]);
        out->dst.push_back(out->src[i]);
        if (timed) out->edge_times.push_back(out->edge_times[i]);
        out->edge_type.push_back(rtype);
      }
    }
  }
  if (dangling > 0)
    notes->push_back("dropped " + std::to_string(dangling) +
                     " edges whose endpoint no node table has (\"dangling_edges\": \"drop\")");
  if (hetero) {
    for (const NodeSpec& ns : s.nodes) out->node_types.push_back(ns.type);
    out->type_feature_dims = type_dims;
  } else {
    out->node_type.clear();
    out->edge_type.clear();
    out->edge_types.clear();
  }
  return Status::OK();
}

}  // namespace fanout::datasets
