// Tables with a schema (fanout-partition --format tables --schema graph.json;
// docs/DATA.md): node and edge tables as CSV files (optionally gzip), a JSON
// schema naming their columns. See formats.h (LoadTables) for the schema.
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "datasets/bounded_partition.h"
#include "datasets/detail/feature_scratch.h"
#include "datasets/detail/name_spill.h"
#include "datasets/detail/string_id_map.h"
#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"
#include "datasets/table_source.h"
#include "datasets/table_tasks.h"

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
  std::string weight;   // a weight column ("" = none: weight 1 where other tables have one)
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
                                      "destination_type", "time", "weight", "reverse"}));
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
    FANOUT_RETURN_IF_ERROR(Str(e, "weight", what, &es.weight, false));
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
  std::string_view TextView(size_t col) const override { return row_[col]; }
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
    SplitFields(line, std::string_view(&delim_, 1), false, &parts_);
    f->assign(parts_.begin(), parts_.end());
    return Status::OK();
  }
  std::unique_ptr<LineReader> r_;
  std::unique_ptr<Progress> progress_;
  std::vector<std::string> header_, row_;
  mutable std::vector<std::string_view> parts_;  // Split's scratch
  char delim_ = ',';
  int64_t rows_ = 0;
};

// A table file: Parquet (.parquet, .pq) through pyarrow, else CSV.
Status OpenTable(const std::string& path, char delimiter, bool quiet,
                 std::unique_ptr<TableSource>* out, const ParquetRange* range = nullptr) {
  if (IsParquetPath(path))
    return OpenParquetTable(path, quiet, out, range ? *range : ParquetRange());
  if (range != nullptr)
    return Status::InvalidArgument(path + ": row groups are read from Parquet files only");
  return CsvTable::Open(path, delimiter, quiet, out);
}

// One node as its table gives it.
struct NodeRow {
  int type = 0;
  int64_t original = 0;               // its int64 id, or its row within its type (string ids)
  const std::string* name = nullptr;  // its string id (null: int64 ids)
  const std::vector<float>* features = nullptr;  // its row (empty: the type has none)
  int64_t label = -1;
  uint8_t split = 0;
};

// String ids past their memory budget (StreamTables): once the node types'
// maps hold more than the budget, the type being read goes to disk (its
// names so far and every later one, in node order, in a NameFile) and its
// map is emptied. Duplicates among such a type's ids and the edge endpoints
// that name them are found later, a bucket of names at a time
// (ResolveSpilledEdges).
class NameSpill {
 public:
  NameSpill(std::string dir, int64_t budget, size_t num_types)
      : dir_(std::move(dir)), budget_(budget), names_(num_types) {}
  ~NameSpill() {
    names_.clear();
    if (made_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  bool any() const {
    return std::any_of(names_.begin(), names_.end(), [](const auto& f) { return f != nullptr; });
  }
  bool spilled(int t) const { return names_[static_cast<size_t>(t)] != nullptr; }
  const detail::NameFile& names(int t) const { return *names_[static_cast<size_t>(t)]; }
  int64_t budget() const { return budget_; }
  // A fresh file name in the spill folder (made on first use).
  Status Path(const std::string& name, std::string* path) {
    if (!made_) {
      std::error_code ec;
      if (!std::filesystem::create_directory(dir_, ec) || ec)
        return Status::IOError("cannot create the string id spill folder " + dir_ + ": " +
                               (ec ? ec.message() : std::string("it exists")));
      made_ = true;
    }
    *path = dir_ + "/" + name;
    return Status::OK();
  }
  // After type t's map took a name: spills type t where the maps hold more
  // than the budget.
  Status AfterInsert(int t, std::vector<detail::StringIdMap>* maps) {
    int64_t held = 0;
    for (const auto& m : *maps) held += m.MemoryBytes();
    if (held <= budget_) return Status::OK();
    auto f = std::make_unique<detail::NameFile>();
    std::string path;
    FANOUT_RETURN_IF_ERROR(Path("names-t" + std::to_string(t), &path));
    FANOUT_RETURN_IF_ERROR(f->Create(path));
    detail::StringIdMap& m = (*maps)[static_cast<size_t>(t)];
    for (int64_t k = 0; k < m.size(); ++k) FANOUT_RETURN_IF_ERROR(f->Append(m.Key(k)));
    m = detail::StringIdMap();
    names_[static_cast<size_t>(t)] = std::move(f);
    return Status::OK();
  }
  Status Append(int t, std::string_view name) {
    return names_[static_cast<size_t>(t)]->Append(name);
  }
  Status Finish() {
    for (auto& f : names_)
      if (f != nullptr) FANOUT_RETURN_IF_ERROR(f->Finish());
    return Status::OK();
  }
  Status error() const {
    for (const auto& f : names_)
      if (f != nullptr && !f->error().ok()) return f->error();
    return Status::OK();
  }

 private:
  std::string dir_;
  int64_t budget_;
  bool made_ = false;
  std::vector<std::unique_ptr<detail::NameFile>> names_;  // per type: its names, where spilled
};

std::string TwiceMessage(const TableSource& tb, size_t id_col, const std::string& what) {
  return tb.Where(id_col) + "id '" + std::string(tb.TextView(id_col).substr(0, 40)) +
         "' is listed twice for " + what;
}

std::string DanglingMessage(const TableSource& tb, size_t col, const std::string& type) {
  return tb.Where(col) + "'" + tb.Text(col).substr(0, 40) + "' names no node of type '" + type +
         "' (the schema's \"dangling_edges\": \"drop\" counts and drops such edges)";
}

// The node tables' ids, to resolve an edge's endpoints to dense node ids.
struct NodeIndex {
  std::vector<int64_t> first;                // per type, its first dense id
  std::vector<detail::StringIdMap> by_name;  // string ids: the row within the type
  std::vector<std::unordered_map<int64_t, int64_t>> by_id;
  // Integer ids in a compact range (most tables number their rows) resolve
  // through an array instead of the hash map: an edge table's endpoints are
  // most of the reading time.
  std::vector<int64_t> direct_lo;
  std::vector<std::vector<int64_t>> direct;
  NameSpill* spill = nullptr;  // string ids past their budget (StreamTables; may be null)

  void Compact() {
    direct_lo.assign(by_id.size(), 0);
    direct.assign(by_id.size(), {});
    for (size_t t = 0; t < by_id.size(); ++t) {
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
  }
  // The dense id of the node of type t (its table `ns`) the field names
  // (*found false: none; an error then unless `drop`).
  Status Resolve(const NodeSpec& ns, int t, const TableSource& tb, size_t col, bool drop,
                 int64_t* v, bool* found) const {
    if (ns.string_ids) {
      const int64_t k = by_name[t].Find(tb.TextView(col));
      *found = k >= 0;
      if (*found) *v = first[t] + k;
    } else {
      int64_t id = 0;
      FANOUT_RETURN_IF_ERROR(tb.Int(col, &id));
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
    if (!*found && !drop) return Status::InvalidArgument(DanglingMessage(tb, col, ns.type));
    return Status::OK();
  }
};

// What the node tables held, beyond each node.
struct NodeSummary {
  int64_t num_nodes = 0;
  std::vector<int64_t> type_dims;  // per type, its feature width
  bool any_label = false, any_split = false, any_names = false;
};

// Reads one node file of type t (its table `ns`): features, label and split
// of each row parsed, then id_fn(table, id column, row) sets the row's
// original id (and name) and sink takes it. *width: the type's feature width
// (-1 until a row has one), checked across rows and files.
Status ReadNodeFile(const NodeSpec& ns, int t, const std::string& file, char delimiter, bool quiet,
                    int64_t* width, NodeSummary* sum,
                    const std::function<Status(const TableSource&, size_t, NodeRow*)>& id_fn,
                    const std::function<Status(const NodeRow&)>& sink,
                    const ParquetRange* range = nullptr) {
  const std::string what = "node type '" + ns.type + "'";
  std::unique_ptr<TableSource> tb;
  FANOUT_RETURN_IF_ERROR(OpenTable(file, delimiter, quiet, &tb, range));
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
  std::vector<float> row;
  Status st;
  while (tb->Next(&st)) {
    FANOUT_RETURN_IF_ERROR(st);
    NodeRow nr;
    nr.type = t;
    FANOUT_RETURN_IF_ERROR(id_fn(*tb, id_col, &nr));
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
      if (*width < 0) *width = static_cast<int64_t>(row.size());
      if (static_cast<int64_t>(row.size()) != *width)
        return Status::InvalidArgument(tb->Where(feat_cols.empty() ? list_col : feat_cols[0]) +
                                       "a feature row of " + std::to_string(row.size()) +
                                       " values; earlier rows of " + what + " have " +
                                       std::to_string(*width));
    }
    nr.features = &row;
    // Label.
    int64_t label = -1;
    if (!ns.label.empty() && !tb->Empty(label_col)) {
      FANOUT_RETURN_IF_ERROR(tb->Int(label_col, &label));
      if (label < -1)
        return Status::InvalidArgument(tb->Where(label_col) + "label " + std::to_string(label) +
                                       " (-1 or empty: none)");
      sum->any_label = sum->any_label || label >= 0;
    }
    nr.label = label;
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
      sum->any_split = true;
    } else if (has_masks) {
      for (int m = 0; m < 3; ++m)
        if (!mask_names[m]->empty() && tb->Truthy(masks[m])) {
          if (split != static_cast<uint8_t>(Split::kNone))
            return Status::InvalidArgument(tb->Where(masks[m]) + "the node is in two masks");
          split = static_cast<uint8_t>(m + 1);
        }
      sum->any_split = true;
    }
    nr.split = split;
    FANOUT_RETURN_IF_ERROR(sink(nr));
    ++sum->num_nodes;
  }
  return st;
}

// Reads every node table in schema order (dense ids in that order, each
// type's rows in file order), calling sink for each node; `index` then
// resolves the edges' endpoints.
Status ReadNodeTables(const Schema& s, const LoadOptions& options, NodeIndex* index,
                      NodeSummary* sum, const std::function<Status(const NodeRow&)>& sink) {
  const int num_types = static_cast<int>(s.nodes.size());
  index->by_name.assign(static_cast<size_t>(num_types), detail::StringIdMap());
  index->first.assign(static_cast<size_t>(num_types), 0);
  index->by_id.assign(static_cast<size_t>(num_types), {});
  auto& by_name = index->by_name;
  auto& by_id = index->by_id;
  sum->type_dims.assign(static_cast<size_t>(num_types), 0);
  std::string name;
  for (int t = 0; t < num_types; ++t) {
    const NodeSpec& ns = s.nodes[static_cast<size_t>(t)];
    index->first[static_cast<size_t>(t)] = sum->num_nodes;
    int64_t width = -1;
    const std::string what = "node type '" + ns.type + "'";
    auto id_fn = [&](const TableSource& tb, size_t id_col, NodeRow* nr) -> Status {
      int64_t original = sum->num_nodes - index->first[static_cast<size_t>(t)];  // the row
      if (ns.string_ids) {
        const std::string_view key = tb.TextView(id_col);
        if (key.empty()) return Status::InvalidArgument(tb.Where(id_col) + "an empty id");
        if (index->spill != nullptr && index->spill->spilled(t)) {
          FANOUT_RETURN_IF_ERROR(index->spill->Append(t, key));  // duplicates: found in the join
        } else {
          if (!by_name[t].Insert(key))
            return Status::InvalidArgument(TwiceMessage(tb, id_col, what));
          if (index->spill != nullptr)
            FANOUT_RETURN_IF_ERROR(index->spill->AfterInsert(t, &by_name));
        }
        name.assign(key.data(), key.size());
        nr->name = &name;
        sum->any_names = true;
      } else {
        FANOUT_RETURN_IF_ERROR(tb.Int(id_col, &original));
        if (!by_id[t].emplace(original, sum->num_nodes).second)
          return Status::InvalidArgument(tb.Where(id_col) + "id " + std::to_string(original) +
                                         " is listed twice for " + what);
      }
      nr->original = original;
      return Status::OK();
    };
    for (const std::string& file : ns.files)
      FANOUT_RETURN_IF_ERROR(
          ReadNodeFile(ns, t, file, s.delimiter, options.quiet, &width, sum, id_fn, sink));
    sum->type_dims[static_cast<size_t>(t)] = std::max<int64_t>(0, width);
  }
  index->Compact();
  return Status::OK();
}

// An edge table's source, destination, (where `timed`) time and (where it
// names one) weight columns.
Status EdgeColumns(const EdgeSpec& es, bool timed, TableSource* tb, size_t* sc, size_t* dc,
                   size_t* tc, size_t* wc) {
  const std::string what = "edge type '" + es.type + "'";
  FANOUT_RETURN_IF_ERROR(tb->Column(es.source, what + "'s source", sc));
  FANOUT_RETURN_IF_ERROR(tb->Column(es.destination, what + "'s destination", dc));
  if (timed) FANOUT_RETURN_IF_ERROR(tb->Column(es.time, what + "'s time", tc));
  if (!es.weight.empty()) FANOUT_RETURN_IF_ERROR(tb->Column(es.weight, what + "'s weight", wc));
  return Status::OK();
}

// The row's edge weight: a finite number >= 0.
Status EdgeWeight(const TableSource& tb, size_t wc, float* w) {
  FANOUT_RETURN_IF_ERROR(tb.Float(wc, w));
  if (!(*w >= 0))
    return Status::InvalidArgument(tb.Where(wc) + "edge weight " + std::to_string(*w) +
                                   " is negative (weights are >= 0)");
  return Status::OK();
}

bool Weighted(const Schema& s) {
  return std::any_of(s.edges.begin(), s.edges.end(),
                     [](const EdgeSpec& e) { return !e.weight.empty(); });
}

// Plays edge table `es` (its source and destination node types st and dt):
// fn(u, v, time, weight) for every edge whose endpoints resolve (the others
// counted in *dangling where the schema drops them), until fn returns false;
// weight 1 where the table names no weight column.
Status PlayEdgeTable(const Schema& s, const EdgeSpec& es, int st, int dt, bool timed,
                     const LoadOptions& options, const NodeIndex& index, int64_t* dangling,
                     const std::function<bool(int64_t, int64_t, int64_t, float)>& fn) {
  for (const std::string& file : es.files) {
    std::unique_ptr<TableSource> tb;
    FANOUT_RETURN_IF_ERROR(OpenTable(file, s.delimiter, options.quiet, &tb));
    size_t sc = 0, dc = 0, tc = 0, wc = 0;
    FANOUT_RETURN_IF_ERROR(EdgeColumns(es, timed, tb.get(), &sc, &dc, &tc, &wc));
    Status status;
    while (tb->Next(&status)) {
      FANOUT_RETURN_IF_ERROR(status);
      int64_t u = 0, v = 0, time = 0;
      float weight = 1;
      bool fu = false, fv = false;
      FANOUT_RETURN_IF_ERROR(index.Resolve(s.nodes[st], st, *tb, sc, s.drop_dangling, &u, &fu));
      FANOUT_RETURN_IF_ERROR(index.Resolve(s.nodes[dt], dt, *tb, dc, s.drop_dangling, &v, &fv));
      if (timed) FANOUT_RETURN_IF_ERROR(tb->Int(tc, &time));
      if (!es.weight.empty()) FANOUT_RETURN_IF_ERROR(EdgeWeight(*tb, wc, &weight));
      if (!fu || !fv) {
        ++*dangling;
        continue;
      }
      if (!fn(u, v, time, weight)) return Status::OK();
    }
    FANOUT_RETURN_IF_ERROR(status);
  }
  return Status::OK();
}

int TypeIndex(const Schema& s, const std::string& name) {
  for (size_t t = 0; t < s.nodes.size(); ++t)
    if (s.nodes[t].type == name) return static_cast<int>(t);
  return -1;
}

std::string DroppedNote(int64_t dangling) {
  return "dropped " + std::to_string(dangling) +
         " edges whose endpoint no node table has (\"dangling_edges\": \"drop\")";
}

// Every edge table's rows (schema order, each table's files in order) with
// their endpoints resolved, in a scratch file: what the edge plays read
// where some node type's string ids went to disk (NameSpill). A row whose
// endpoint no node table has keeps -1 there (dropped; the schema's
// "dangling_edges": "drop", or an error before this is done).
struct ResolvedEdges {
  struct Row {
    int64_t src, dst, time;
    float weight;
    int32_t unused;
  };
  std::unique_ptr<detail::ScratchFile> rows;
  std::vector<int64_t> table_first;  // per edge table its first row, then the row count
};

// Where an edge file's rows start among all the edge tables' rows.
struct EdgeFileStart {
  size_t table, file;
  int64_t first_row;
};

constexpr size_t kBucketBuffer = size_t{64} << 10;  // per bucket file: there are many
constexpr int64_t kMaxBuckets = 64;
// Bucket files open at once, at most (each spilled type has up to three per bucket open: its names,
// its endpoints, its run).
constexpr int64_t kMaxOpenBuckets = 384;

// A bucket record: uint32 length, the name's bytes, int64 value.
Status PutNameRecord(detail::ScratchFile* f, std::string_view name, int64_t value) {
  FANOUT_RETURN_IF_ERROR(f->Put(static_cast<uint32_t>(name.size())));
  FANOUT_RETURN_IF_ERROR(f->Append(name.data(), name.size()));
  return f->Put(value);
}
bool GetNameRecord(detail::ScratchReader* r, std::string* name, int64_t* value) {
  uint32_t n = 0;
  if (!r->Get(&n)) return false;
  name->resize(n);
  return r->Read(name->data(), n) && r->Get(value);
}
Status ReaderStatus(const detail::ScratchReader& r, const detail::ScratchFile& f) {
  return r.status().ok() ? Status::OK() : r.status().WithContext("reading " + f.path());
}

// The in-memory reader's error for node `k` (its row within type t) whose id
// an earlier row of the type holds: the node files read again to that row.
Status LocateTwice(const Schema& s, bool quiet, int t, int64_t k) {
  const NodeSpec& ns = s.nodes[static_cast<size_t>(t)];
  int64_t at = 0;
  for (const std::string& file : ns.files) {
    std::unique_ptr<TableSource> tb;
    FANOUT_RETURN_IF_ERROR(OpenTable(file, s.delimiter, quiet, &tb));
    size_t id_col = 0;
    FANOUT_RETURN_IF_ERROR(tb->Column(ns.id, "node type '" + ns.type + "''s id", &id_col));
    Status st;
    while (tb->Next(&st))
      if (at++ == k)
        return Status::InvalidArgument(TwiceMessage(*tb, id_col, "node type '" + ns.type + "'"));
    FANOUT_RETURN_IF_ERROR(st);
  }
  return Status::InvalidArgument("node type '" + ns.type + "': the id of its node " +
                                 std::to_string(k) + " is listed twice");
}

// The in-memory reader's error for an endpoint (key: row * 2 + end, 1 the
// destination) that names no node: the edge file read again to that row.
Status LocateDangling(const Schema& s, bool quiet, const std::vector<EdgeFileStart>& starts,
                      bool timed, int64_t key) {
  const int64_t row = key / 2;
  size_t f = 0;
  while (f + 1 < starts.size() && starts[f + 1].first_row <= row) ++f;
  const EdgeSpec& es = s.edges[starts[f].table];
  std::unique_ptr<TableSource> tb;
  FANOUT_RETURN_IF_ERROR(OpenTable(es.files[starts[f].file], s.delimiter, quiet, &tb));
  size_t sc = 0, dc = 0, tc = 0, wc = 0;
  FANOUT_RETURN_IF_ERROR(EdgeColumns(es, timed, tb.get(), &sc, &dc, &tc, &wc));
  Status st;
  for (int64_t r = starts[f].first_row; tb->Next(&st); ++r)
    if (r == row)
      return Status::InvalidArgument(
          DanglingMessage(*tb, key % 2 ? dc : sc, key % 2 ? es.destination_type : es.source_type));
  FANOUT_RETURN_IF_ERROR(st);
  return Status::InvalidArgument("edge type '" + es.type + "': row " + std::to_string(row) +
                                 " names a node no node table has");
}

// Resolves every edge table's rows into out->rows (ResolvedEdges), the
// endpoints of spilled types through a join in buckets: the type's names and
// the endpoints naming them go to bucket files by the name's hash; each
// bucket's names are mapped in memory (under the spill's budget: as many
// buckets as that takes, kMaxBuckets at most) and its endpoints looked up,
// giving runs of (row * 2 + end, dense id) in row order, merged back into
// the rows. Duplicate ids of spilled types are found first (before any edge
// is read, as the in-memory reader finds them while reading the nodes); the
// first dangling endpoint in row order is the one named.
Status ResolveSpilledEdges(const Schema& s, const LoadOptions& options, const NodeIndex& index,
                           NameSpill* spill, bool timed, ResolvedEdges* out, int64_t* dangling,
                           std::vector<std::string>* notes) {
  const int T = static_cast<int>(s.nodes.size());
  int64_t most = 0, spilled_types = 0;
  for (int t = 0; t < T; ++t)
    if (spill->spilled(t)) {
      most = std::max(most, spill->names(t).bytes() + 48 * spill->names(t).size());
      ++spilled_types;
    }
  const int64_t budget = std::max<int64_t>(spill->budget(), 1);
  const int64_t B = std::max<int64_t>(1, (most + budget - 1) / budget);
  const int64_t max_buckets =
      std::max<int64_t>(1, std::min(kMaxBuckets, kMaxOpenBuckets / (3 * spilled_types)));
  if (B > max_buckets)
    return Status::ResourceExhausted(
        "string ids: " + FormatBytes(static_cast<double>(most)) + " of ids would need " +
        std::to_string(B) + " join buckets of " + FormatBytes(static_cast<double>(budget)) +
        " each (at most " + std::to_string(max_buckets) +
        " here); raise --memory-limit (string ids may take a quarter of it) or "
        "--string-id-memory");
  detail::StringIdMap hasher;  // its seeded hash picks the buckets
  auto bucket_of = [&](std::string_view name) {
    return static_cast<size_t>(hasher.HashOf(name) % static_cast<uint64_t>(B));
  };
  auto make = [&](const std::string& name, std::unique_ptr<detail::ScratchFile>* f) {
    std::string path;
    FANOUT_RETURN_IF_ERROR(spill->Path(name, &path));
    *f = std::make_unique<detail::ScratchFile>();
    return (*f)->Create(path, kBucketBuffer);
  };
  using Files = std::vector<std::unique_ptr<detail::ScratchFile>>;
  std::vector<Files> name_buckets(static_cast<size_t>(T)), end_buckets(static_cast<size_t>(T)),
      runs(static_cast<size_t>(T));
  // Type t's B files of one kind.
  auto make_buckets = [&](int t, const std::string& kind, std::vector<Files>* of) {
    Files& files = (*of)[static_cast<size_t>(t)];
    files.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b)
      FANOUT_RETURN_IF_ERROR(
          make("t" + std::to_string(t) + "-" + kind + "-" + std::to_string(b), &files[b]));
    return Status::OK();
  };
  // The names, by bucket, with their row within the type.
  for (int t = 0; t < T; ++t) {
    if (!spill->spilled(t)) continue;
    FANOUT_RETURN_IF_ERROR(make_buckets(t, "names", &name_buckets));
    Files& nb = name_buckets[static_cast<size_t>(t)];
    const detail::NameFile& names = spill->names(t);
    for (int64_t k = 0; k < names.size(); ++k) {
      const std::string_view name = names.Get(k);
      FANOUT_RETURN_IF_ERROR(names.error());
      FANOUT_RETURN_IF_ERROR(PutNameRecord(nb[bucket_of(name)].get(), name, k));
    }
    for (auto& f : nb) FANOUT_RETURN_IF_ERROR(f->Flush());
    notes->push_back("node type '" + s.nodes[static_cast<size_t>(t)].type +
                     "': " + std::to_string(names.size()) + " string ids past their memory (" +
                     FormatBytes(static_cast<double>(budget)) + "), joined on disk in " +
                     std::to_string(B) + " bucket(s)");
  }
  // Each bucket's names in memory: a map and each name's row.
  auto load = [&](int t, int64_t b, detail::StringIdMap* m, std::vector<int64_t>* rows,
                  int64_t* twice) -> Status {
    const detail::ScratchFile& f = *name_buckets[static_cast<size_t>(t)][static_cast<size_t>(b)];
    detail::ScratchReader r(f, 0, -1, kBucketBuffer);
    std::string name;
    int64_t k = 0;
    while (GetNameRecord(&r, &name, &k)) {
      if (m->Insert(name))
        rows->push_back(k);
      else
        *twice = std::min(*twice, k);  // the later row: the one the in-memory reader names
    }
    return ReaderStatus(r, f);
  };
  // Duplicates first: the first type, and its earliest row, that repeats an id.
  for (int t = 0; t < T; ++t) {
    if (!spill->spilled(t)) continue;
    int64_t twice = INT64_MAX;
    for (int64_t b = 0; b < B; ++b) {
      detail::StringIdMap m;
      std::vector<int64_t> rows;
      FANOUT_RETURN_IF_ERROR(load(t, b, &m, &rows, &twice));
    }
    if (twice != INT64_MAX) return LocateTwice(s, options.quiet, t, twice);
  }
  // The edges: endpoints of types in memory resolved now, the others sent to their bucket.
  for (int t = 0; t < T; ++t)
    if (spill->spilled(t)) FANOUT_RETURN_IF_ERROR(make_buckets(t, "ends", &end_buckets));
  FANOUT_RETURN_IF_ERROR(make("edges", &out->rows));
  std::vector<EdgeFileStart> starts;
  int64_t row = 0;
  for (size_t i = 0; i < s.edges.size(); ++i) {
    const EdgeSpec& es = s.edges[i];
    const int st = TypeIndex(s, es.source_type), dt = TypeIndex(s, es.destination_type);
    out->table_first.push_back(row);
    for (size_t fi = 0; fi < es.files.size(); ++fi) {
      starts.push_back({i, fi, row});
      std::unique_ptr<TableSource> tb;
      FANOUT_RETURN_IF_ERROR(OpenTable(es.files[fi], s.delimiter, options.quiet, &tb));
      size_t sc = 0, dc = 0, tc = 0, wc = 0;
      FANOUT_RETURN_IF_ERROR(EdgeColumns(es, timed, tb.get(), &sc, &dc, &tc, &wc));
      Status status;
      while (tb->Next(&status)) {
        FANOUT_RETURN_IF_ERROR(status);
        ResolvedEdges::Row r{0, 0, 0, 1.0f, 0};
        int64_t* ends[2] = {&r.src, &r.dst};
        for (int end = 0; end < 2; ++end) {
          const int type = end ? dt : st;
          const size_t col = end ? dc : sc;
          if (spill->spilled(type)) {
            const std::string_view name = tb->TextView(col);
            FANOUT_RETURN_IF_ERROR(
                PutNameRecord(end_buckets[static_cast<size_t>(type)][bucket_of(name)].get(), name,
                              row * 2 + end));
            *ends[end] = -2;  // the join's
          } else {
            bool found = false;
            FANOUT_RETURN_IF_ERROR(index.Resolve(s.nodes[static_cast<size_t>(type)], type, *tb, col,
                                                 s.drop_dangling, ends[end], &found));
            if (!found) *ends[end] = -1;
          }
        }
        if (timed) FANOUT_RETURN_IF_ERROR(tb->Int(tc, &r.time));
        if (!es.weight.empty()) FANOUT_RETURN_IF_ERROR(EdgeWeight(*tb, wc, &r.weight));
        FANOUT_RETURN_IF_ERROR(out->rows->Put(r));
        ++row;
      }
      FANOUT_RETURN_IF_ERROR(status);
    }
  }
  out->table_first.push_back(row);
  FANOUT_RETURN_IF_ERROR(out->rows->Flush());
  // The join, bucket by bucket: runs of (key, dense id or -1), in key order.
  int64_t missing = INT64_MAX;
  for (int t = 0; t < T; ++t) {
    if (!spill->spilled(t)) continue;
    FANOUT_RETURN_IF_ERROR(make_buckets(t, "run", &runs));
    Files& rt = runs[static_cast<size_t>(t)];
    const int64_t first = index.first[static_cast<size_t>(t)];
    for (int64_t b = 0; b < B; ++b) {
      detail::StringIdMap m;
      std::vector<int64_t> rows;
      int64_t unused = INT64_MAX;
      FANOUT_RETURN_IF_ERROR(load(t, b, &m, &rows, &unused));
      name_buckets[static_cast<size_t>(t)][b].reset();
      auto& ends = end_buckets[static_cast<size_t>(t)][b];
      FANOUT_RETURN_IF_ERROR(ends->Flush());
      detail::ScratchReader r(*ends, 0, -1, kBucketBuffer);
      std::string name;
      int64_t key = 0;
      while (GetNameRecord(&r, &name, &key)) {
        const int64_t k = m.Find(name);
        const int64_t v = k >= 0 ? first + rows[static_cast<size_t>(k)] : -1;
        if (v < 0) missing = std::min(missing, key);
        FANOUT_RETURN_IF_ERROR(rt[b]->Put(key));
        FANOUT_RETURN_IF_ERROR(rt[b]->Put(v));
      }
      FANOUT_RETURN_IF_ERROR(ReaderStatus(r, *ends));
      ends.reset();
      FANOUT_RETURN_IF_ERROR(rt[b]->Flush());
    }
  }
  if (missing != INT64_MAX && !s.drop_dangling)
    return LocateDangling(s, options.quiet, starts, timed, missing);
  // The runs merged back into the rows, a block of rows at a time.
  struct Head {
    int64_t key, value;
    size_t run;
    bool operator>(const Head& o) const { return key > o.key; }
  };
  std::vector<std::unique_ptr<detail::ScratchReader>> readers;
  std::vector<const detail::ScratchFile*> run_files;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (auto& rt : runs)
    for (auto& f : rt) {
      readers.push_back(std::make_unique<detail::ScratchReader>(*f, 0, -1, kBucketBuffer));
      run_files.push_back(f.get());
      Head h{0, 0, readers.size() - 1};
      if (readers.back()->Get(&h.key) && readers.back()->Get(&h.value)) heap.push(h);
      FANOUT_RETURN_IF_ERROR(ReaderStatus(*readers.back(), *f));
    }
  constexpr int64_t kBlock = 32768;
  std::vector<ResolvedEdges::Row> block;
  *dangling = 0;
  for (int64_t r0 = 0; r0 < row; r0 += kBlock) {
    const int64_t n = std::min(kBlock, row - r0);
    block.resize(static_cast<size_t>(n));
    const int64_t at = r0 * static_cast<int64_t>(sizeof(ResolvedEdges::Row));
    FANOUT_RETURN_IF_ERROR(
        out->rows->ReadAt(at, block.data(), block.size() * sizeof(ResolvedEdges::Row)));
    while (!heap.empty() && heap.top().key / 2 < r0 + n) {
      Head h = heap.top();
      heap.pop();
      ResolvedEdges::Row& e = block[static_cast<size_t>(h.key / 2 - r0)];
      (h.key % 2 ? e.dst : e.src) = h.value;
      if (readers[h.run]->Get(&h.key) && readers[h.run]->Get(&h.value)) heap.push(h);
      FANOUT_RETURN_IF_ERROR(ReaderStatus(*readers[h.run], *run_files[h.run]));
    }
    for (const auto& e : block) {
      if (e.src == -2 || e.dst == -2)
        return Status::Internal("string id join: an endpoint was not resolved");
      *dangling += e.src < 0 || e.dst < 0;
    }
    FANOUT_RETURN_IF_ERROR(
        out->rows->WriteAt(at, block.data(), block.size() * sizeof(ResolvedEdges::Row)));
  }
  return Status::OK();
}

Status ParseAndCheck(const std::string& schema_path, Schema* s, bool* hetero) {
  FANOUT_RETURN_IF_ERROR(ParseSchema(schema_path, s));
  const bool many = s->nodes.size() > 1 || s->edges.size() > 1 ||
                    std::any_of(s->edges.begin(), s->edges.end(),
                                [](const EdgeSpec& e) { return !e.reverse.empty(); });
  if (s->heterogeneous == 0 && many)
    return Status::InvalidArgument("schema " + schema_path +
                                   ": \"heterogeneous\": false, but it lists more than one node or "
                                   "edge type");
  *hetero = s->heterogeneous == 1 || many;
  return Status::OK();
}

}  // namespace

Status LoadTables(const std::string& schema_path, const LoadOptions& options, RawDataset* out,
                  std::vector<std::string>* notes) {
  Schema s;
  bool hetero = false;
  FANOUT_RETURN_IF_ERROR(ParseAndCheck(schema_path, &s, &hetero));
  out->name = s.name;
  out->format = "tables";
  const int num_types = static_cast<int>(s.nodes.size());
  // Per type: its feature rows back to back (every row of a type has its width).
  std::vector<std::vector<float>> type_rows(static_cast<size_t>(num_types));
  NodeIndex index;
  NodeSummary sum;
  FANOUT_RETURN_IF_ERROR(ReadNodeTables(s, options, &index, &sum, [&](const NodeRow& r) {
    out->original_ids.push_back(r.original);
    if (r.name != nullptr)
      out->original_names.push_back(*r.name);
    else
      out->original_names.emplace_back();
    out->node_type.push_back(r.type);
    std::vector<float>& rows = type_rows[static_cast<size_t>(r.type)];
    rows.insert(rows.end(), r.features->begin(), r.features->end());
    out->labels.push_back(r.label);
    out->split.push_back(r.split);
    return Status::OK();
  }));
  out->num_nodes = sum.num_nodes;
  const std::vector<int64_t>& type_dims = sum.type_dims;
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
                    out->features.begin() + (index.first[t] + k) * out->feature_dim);
        std::vector<float>().swap(type_rows[t]);
      }
    }
  }
  type_rows.clear();
  if (sum.any_label) {
    for (int64_t l : out->labels) out->num_classes = std::max(out->num_classes, l + 1);
  } else {
    out->labels.clear();
  }
  if (!sum.any_split) out->split.clear();
  if (!sum.any_names) {
    out->original_names.clear();
  }
  // Edges.
  const bool timed = !s.edges[0].time.empty();
  const bool weighted = Weighted(s);
  int64_t dangling = 0;
  for (const EdgeSpec& es : s.edges) {
    const int st_ = TypeIndex(s, es.source_type), dt_ = TypeIndex(s, es.destination_type);
    const int32_t etype = static_cast<int32_t>(out->edge_types.size());
    out->edge_types.push_back({st_, es.type, dt_});
    const size_t first = out->src.size();
    FANOUT_RETURN_IF_ERROR(PlayEdgeTable(s, es, st_, dt_, timed, options, index, &dangling,
                                         [&](int64_t u, int64_t v, int64_t time, float w) {
                                           out->src.push_back(u);
                                           out->dst.push_back(v);
                                           if (timed) out->edge_times.push_back(time);
                                           if (weighted) out->edge_weights.push_back(w);
                                           if (hetero) out->edge_type.push_back(etype);
                                           return true;
                                         }));
    if (!es.reverse.empty()) {  // the reverse edge type, every edge reversed
      const int32_t rtype = static_cast<int32_t>(out->edge_types.size());
      out->edge_types.push_back({dt_, es.reverse, st_});
      const size_t last = out->src.size();
      for (size_t i = first; i < last; ++i) {
        out->src.push_back(out->dst[i]);
        out->dst.push_back(out->src[i]);
        if (timed) out->edge_times.push_back(out->edge_times[i]);
        if (weighted) out->edge_weights.push_back(out->edge_weights[i]);
        out->edge_type.push_back(rtype);
      }
    }
  }
  if (dangling > 0) notes->push_back(DroppedNote(dangling));
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

namespace {

// A streamed table graph's state: per node its original id, label and split
// in memory (17 bytes), its id index (which holds the names where ids are
// strings), and the feature rows in one float32 scratch file per node type
// (each type its own width).
struct TablesStream {
  Schema schema;
  LoadOptions options;
  std::unique_ptr<NameSpill> spill;  // string ids past their memory (null: none may spill)
  ResolvedEdges resolved;            // where some did: every edge resolved, on disk
  int64_t resolved_dangling = 0;
  NodeIndex index;
  std::vector<int64_t> original, labels;
  std::vector<uint8_t> split;
  std::vector<std::unique_ptr<detail::FeatureScratch>> features;  // per node type
  std::vector<int64_t> type_dims;
  int64_t feature_dim = 0;
  mutable std::vector<float> row;  // one type's row, before padding
  int64_t dangling = 0;            // edges the last play dropped

  int32_t TypeOf(int64_t v) const {
    return static_cast<int32_t>(std::upper_bound(index.first.begin(), index.first.end(), v) -
                                index.first.begin() - 1);
  }
  void FeatureRow(int64_t v, float* out) const {
    const int32_t t = TypeOf(v);
    const int64_t w = type_dims[static_cast<size_t>(t)];
    const detail::FeatureScratch* f = features[static_cast<size_t>(t)].get();
    if (w == feature_dim && f != nullptr) return f->Row(v - index.first[t], out);
    std::fill(out, out + feature_dim, 0.0f);
    if (f == nullptr || w == 0) return;
    row.resize(static_cast<size_t>(w));
    f->Row(v - index.first[t], row.data());
    std::copy(row.begin(), row.end(), out);
  }
  Status FeatureError() const {
    for (const auto& f : features)
      if (f != nullptr && !f->error().ok()) return f->error();
    return spill != nullptr ? spill->error() : Status::OK();
  }
  std::string_view Name(int64_t v) const {
    const int32_t t = TypeOf(v);
    if (!schema.nodes[static_cast<size_t>(t)].string_ids) return {};  // int64 ids: no name
    const int64_t k = v - index.first[t];
    if (spill != nullptr && spill->spilled(t)) return spill->names(t).Get(k);
    return index.by_name[static_cast<size_t>(t)].Key(k);
  }
  // Edge table i's rows from the resolved file, reversed where asked, as
  // EdgeAttrs of `type` (dropped rows skipped).
  Status PlayResolved(size_t i, bool reverse, int32_t type, const EdgeAttrFn& fn, bool* go) const {
    const int64_t sz = static_cast<int64_t>(sizeof(ResolvedEdges::Row));
    detail::ScratchReader r(*resolved.rows, resolved.table_first[i] * sz,
                            resolved.table_first[i + 1] * sz);
    ResolvedEdges::Row e;
    EdgeAttr a;
    a.type = type;
    while (r.Get(&e)) {
      if (e.src < 0 || e.dst < 0) continue;
      a.src = reverse ? e.dst : e.src;
      a.dst = reverse ? e.src : e.dst;
      a.time = e.time;
      a.weight = e.weight;
      if (!(*go = fn(a))) return Status::OK();
    }
    return ReaderStatus(r, *resolved.rows);
  }
};

}  // namespace

Status StreamTables(const std::string& schema_path, const LoadOptions& options,
                    const EdgeOptions& edge_options, const std::string& scratch_path,
                    StreamedGraph* out, std::vector<std::string>* notes) {
  FANOUT_RETURN_IF_ERROR(CheckStreamable(edge_options));
  auto s = std::make_shared<TablesStream>();
  bool hetero = false;
  FANOUT_RETURN_IF_ERROR(ParseAndCheck(schema_path, &s->schema, &hetero));
  s->options = options;
  const size_t num_types = s->schema.nodes.size();
  s->features.resize(num_types);
  const int64_t id_budget = options.string_id_memory_bytes > 0 ? options.string_id_memory_bytes
                                                               : options.memory_limit_bytes / 4;
  const bool any_string = std::any_of(s->schema.nodes.begin(), s->schema.nodes.end(),
                                      [](const NodeSpec& ns) { return ns.string_ids; });
  if (any_string && id_budget > 0) {
    s->spill = std::make_unique<NameSpill>(scratch_path + ".ids", id_budget, num_types);
    s->index.spill = s->spill.get();
  }
  NodeSummary sum;
  FANOUT_RETURN_IF_ERROR(ReadNodeTables(s->schema, options, &s->index, &sum, [&](const NodeRow& r) {
    s->original.push_back(r.original);
    s->labels.push_back(r.label);
    s->split.push_back(r.split);
    if (r.features->empty()) return Status::OK();
    auto& f = s->features[static_cast<size_t>(r.type)];
    if (f == nullptr) {  // one file per type: the scratch path, then .t<type> beside it
      f = std::make_unique<detail::FeatureScratch>();
      FANOUT_RETURN_IF_ERROR(
          f->Create(num_types == 1 ? scratch_path : scratch_path + ".t" + std::to_string(r.type),
                    static_cast<int64_t>(r.features->size())));
    }
    return f->Append(r.features->data());
  }));
  if (sum.num_nodes == 0) return Status::InvalidArgument("schema " + schema_path + ": no nodes");
  for (auto& f : s->features)
    if (f != nullptr) FANOUT_RETURN_IF_ERROR(f->Finish());
  if (s->spill != nullptr) {
    FANOUT_RETURN_IF_ERROR(s->spill->Finish());
    if (s->spill->any())
      FANOUT_RETURN_IF_ERROR(ResolveSpilledEdges(s->schema, options, s->index, s->spill.get(),
                                                 !s->schema.edges[0].time.empty(), &s->resolved,
                                                 &s->resolved_dangling, notes));
  }
  s->type_dims = sum.type_dims;
  s->feature_dim = *std::max_element(sum.type_dims.begin(), sum.type_dims.end());
  *out = StreamedGraph();
  out->name = s->schema.name;
  out->format = "tables";
  out->num_nodes = sum.num_nodes;
  out->feature_dim = s->feature_dim;
  out->has_labels = sum.any_label;
  out->has_split = sum.any_split;
  out->has_names = sum.any_names;
  if (sum.any_label)
    for (int64_t l : s->labels) out->num_classes = std::max(out->num_classes, l + 1);
  // The edge types as LoadTables numbers them: each table's, then its reverse.
  std::vector<int32_t> reverse_type;
  if (hetero) {
    for (const NodeSpec& ns : s->schema.nodes) out->node_types.push_back(ns.type);
    for (const EdgeSpec& es : s->schema.edges) {
      const int st = TypeIndex(s->schema, es.source_type),
                dt = TypeIndex(s->schema, es.destination_type);
      out->edge_types.push_back({st, es.type, dt});
      if (!es.reverse.empty()) out->edge_types.push_back({dt, es.reverse, st});
    }
    if (edge_options.make_undirected) reverse_type = AddReverseEdgeTypes(&out->edge_types);
    out->type_feature_dims = sum.type_dims;
  }
  TablesStream* p = s.get();
  out->has_edge_times = !s->schema.edges[0].time.empty();
  out->has_edge_weights = Weighted(s->schema);
  // Each table's edges, then (a "reverse") the table again, reversed; the
  // dropped edges counted on the first reading only.
  EdgeAttrPlay as_read = [p, timed = out->has_edge_times](const EdgeAttrFn& fn) -> Status {
    p->dangling = 0;
    bool go = true;
    int32_t type = 0;
    if (p->resolved.rows != nullptr) {  // string ids on disk: the edges resolved once, there
      p->dangling = p->resolved_dangling;
      for (size_t i = 0; i < p->schema.edges.size(); ++i) {
        FANOUT_RETURN_IF_ERROR(p->PlayResolved(i, false, type++, fn, &go));
        if (!go) return Status::OK();
        if (!p->schema.edges[i].reverse.empty()) {
          FANOUT_RETURN_IF_ERROR(p->PlayResolved(i, true, type++, fn, &go));
          if (!go) return Status::OK();
        }
      }
      return Status::OK();
    }
    for (const EdgeSpec& es : p->schema.edges) {
      const int st = TypeIndex(p->schema, es.source_type),
                dt = TypeIndex(p->schema, es.destination_type);
      for (bool reverse : {false, true}) {
        if (reverse && es.reverse.empty()) break;
        int64_t dropped_again = 0;
        EdgeAttr a;
        a.type = type++;
        FANOUT_RETURN_IF_ERROR(PlayEdgeTable(p->schema, es, st, dt, timed, p->options, p->index,
                                             reverse ? &dropped_again : &p->dangling,
                                             [&](int64_t u, int64_t v, int64_t t, float w) {
                                               a.src = reverse ? v : u;
                                               a.dst = reverse ? u : v;
                                               a.time = t;
                                               a.weight = w;
                                               go = fn(a);
                                               return go;
                                             }));
        if (!go) return Status::OK();
      }
    }
    return Status::OK();
  };
  out->for_each_edge_attr = [as_read, eo = edge_options, reverse_type](const EdgeAttrFn& fn) {
    return PlayAttrWithEdgeOptions(eo, as_read, fn, reverse_type);
  };
  out->for_each_edge = [as_read, eo = edge_options](const EdgeFn& fn) {
    return PlayAttrWithEdgeOptions(eo, as_read,
                                   [&](const EdgeAttr& e) { return fn(e.src, e.dst); });
  };
  if (hetero) out->node_type = [p](int64_t v) { return p->TypeOf(v); };
  out->feature_row = [p](int64_t v, float* row) { p->FeatureRow(v, row); };
  out->label = [p](int64_t v) { return p->labels[v]; };
  out->split = [p](int64_t v) { return p->split[v]; };
  out->original_id = [p](int64_t v) { return p->original[v]; };
  // String ids: node v of type t is its map's key v - first[t] (int64 ids: no name).
  out->name_of = [p](int64_t v) { return p->Name(v); };
  out->node_status = [p]() { return p->FeatureError(); };
  out->late_notes = [p]() {
    return p->dangling > 0 ? std::vector<std::string>{DroppedNote(p->dangling)}
                           : std::vector<std::string>{};
  };
  out->state = s;
  return Status::OK();
}

Status PlanTables(const std::string& schema_path, TablesPlan* out) {
  Schema s;
  bool hetero = false;
  FANOUT_RETURN_IF_ERROR(ParseAndCheck(schema_path, &s, &hetero));
  *out = TablesPlan();
  out->name = s.name;
  out->hetero = hetero;
  out->drop_dangling = s.drop_dangling;
  out->timed = !s.edges[0].time.empty();
  for (size_t t = 0; t < s.nodes.size(); ++t) {
    const NodeSpec& ns = s.nodes[t];
    TablesPlan::NodeTable nt;
    nt.type = ns.type;
    nt.string_ids = ns.string_ids;
    nt.has_split = !(ns.split + ns.train_mask + ns.val_mask + ns.test_mask).empty();
    nt.has_features = !ns.feature_list.empty() || !ns.feature_columns.empty();
    nt.files = ns.files;
    out->string_ids = out->string_ids || nt.string_ids;
    out->has_split = out->has_split || nt.has_split;
    out->has_features = out->has_features || nt.has_features;
    for (const std::string& f : ns.files) {
      out->node_files.push_back(f);
      out->node_file_table.push_back(static_cast<int>(t));
    }
    out->node_tables.push_back(std::move(nt));
  }
  for (size_t i = 0; i < s.edges.size(); ++i) {
    const EdgeSpec& es = s.edges[i];
    TablesPlan::EdgeTable et;
    et.type = es.type;
    et.reverse = es.reverse;
    et.source_type = TypeIndex(s, es.source_type);
    et.destination_type = TypeIndex(s, es.destination_type);
    et.weighted = !es.weight.empty();
    et.files = es.files;
    out->weighted = out->weighted || et.weighted;
    for (const std::string& f : es.files) {
      out->edge_files.push_back(f);
      out->edge_file_table.push_back(static_cast<int>(i));
    }
    out->edge_tables.push_back(std::move(et));
  }
  return Status::OK();
}

namespace {

// File `file_index` of every node (or edge) table's files in schema order,
// and its table.
Status PlannedFile(const std::string& schema_path, int file_index, bool nodes, Schema* s,
                   std::string* file, size_t* table) {
  bool hetero = false;
  FANOUT_RETURN_IF_ERROR(ParseAndCheck(schema_path, s, &hetero));
  int at = 0;
  const size_t tables = nodes ? s->nodes.size() : s->edges.size();
  for (size_t t = 0; t < tables; ++t) {
    const std::vector<std::string>& files = nodes ? s->nodes[t].files : s->edges[t].files;
    if (file_index >= at && file_index < at + static_cast<int>(files.size())) {
      *file = files[static_cast<size_t>(file_index - at)];
      *table = t;
      return Status::OK();
    }
    at += static_cast<int>(files.size());
  }
  return Status::InvalidArgument("schema " + schema_path + " lists " + std::to_string(at) +
                                 (nodes ? " node" : " edge") + " file(s); there is no file " +
                                 std::to_string(file_index) +
                                 " (did the files change since the job started?)");
}

}  // namespace

Status ReadTablesNodeFile(const std::string& schema_path, int file_index, bool quiet,
                          const TableSlice& slice,
                          const std::function<Status(const TableNode&)>& fn) {
  Schema s;
  std::string file;
  size_t t = 0;
  FANOUT_RETURN_IF_ERROR(PlannedFile(schema_path, file_index, true, &s, &file, &t));
  NodeSpec ns = s.nodes[t];
  if (slice.ids_only) {
    NodeSpec ids;
    ids.type = ns.type;
    ids.id = ns.id;
    ids.string_ids = ns.string_ids;
    ns = ids;
  }
  int64_t width = -1;
  NodeSummary sum;
  TableNode node;
  auto id_fn = [&](const TableSource& tb, size_t id_col, NodeRow*) -> Status {
    node = TableNode();
    if (ns.string_ids) {
      node.name = tb.TextView(id_col);
      if (node.name.empty()) return Status::InvalidArgument(tb.Where(id_col) + "an empty id");
      return Status::OK();
    }
    return tb.Int(id_col, &node.id);
  };
  return ReadNodeFile(
      ns, static_cast<int>(t), file, s.delimiter, quiet, &width, &sum, id_fn,
      [&](const NodeRow& r) {
        node.features = r.features;
        node.label = r.label;
        node.split = r.split;
        return fn(node);
      },
      slice.range);
}

Status ReadTablesEdgeFile(const std::string& schema_path, int file_index, bool quiet,
                          const TableSlice& slice,
                          const std::function<Status(const TableEdge&)>& fn) {
  Schema s;
  std::string file;
  size_t i = 0;
  FANOUT_RETURN_IF_ERROR(PlannedFile(schema_path, file_index, false, &s, &file, &i));
  const EdgeSpec& es = s.edges[i];
  const bool src_names = s.nodes[static_cast<size_t>(TypeIndex(s, es.source_type))].string_ids;
  const bool dst_names = s.nodes[static_cast<size_t>(TypeIndex(s, es.destination_type))].string_ids;
  std::unique_ptr<TableSource> tb;
  FANOUT_RETURN_IF_ERROR(OpenTable(file, s.delimiter, quiet, &tb, slice.range));
  size_t sc = 0, dc = 0, tc = 0, wc = 0;
  const bool timed = !es.time.empty();
  FANOUT_RETURN_IF_ERROR(EdgeColumns(es, timed, tb.get(), &sc, &dc, &tc, &wc));
  Status status;
  TableEdge e;
  while (tb->Next(&status)) {
    FANOUT_RETURN_IF_ERROR(status);
    if (src_names)
      e.source_name = tb->TextView(sc);
    else
      FANOUT_RETURN_IF_ERROR(tb->Int(sc, &e.source_id));
    if (dst_names)
      e.destination_name = tb->TextView(dc);
    else
      FANOUT_RETURN_IF_ERROR(tb->Int(dc, &e.destination_id));
    if (timed) FANOUT_RETURN_IF_ERROR(tb->Int(tc, &e.time));
    if (!es.weight.empty()) FANOUT_RETURN_IF_ERROR(EdgeWeight(*tb, wc, &e.weight));
    FANOUT_RETURN_IF_ERROR(fn(e));
  }
  return status;
}

}  // namespace fanout::datasets
