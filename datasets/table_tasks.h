// Tables read one file at a time, for a job that spreads them over many
// machines (the Spark job, python/fanout/spark.py, through the
// fanout-spark-task tool): the schema checked and its files resolved as the
// native tool resolves them, each node or edge file read with the native
// reader (CSV or Parquet, the same errors), ids given back as the file holds
// them (the job joins them itself).
#ifndef FANOUT_DATASETS_TABLE_TASKS_H_
#define FANOUT_DATASETS_TABLE_TASKS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "datasets/table_source.h"

namespace fanout::datasets {

struct TablesPlan {
  std::string name;
  bool hetero = false;  // node and edge types kept (as LoadTables decides)
  struct NodeTable {
    std::string type;
    bool string_ids = false;
    bool has_split = false;     // a split or mask column is named
    bool has_features = false;  // feature columns are named
    std::vector<std::string> files;
  };
  struct EdgeTable {
    std::string type, reverse;  // reverse: the reverse type's name ("" = none)
    int source_type = 0, destination_type = 0;
    bool weighted = false;  // names a weight column
    std::vector<std::string> files;
  };
  std::vector<NodeTable> node_tables;
  std::vector<EdgeTable> edge_tables;
  // Every table's files in schema order (the native tool's reading order):
  // the file indices the readers below take, and each one's table.
  std::vector<std::string> node_files, edge_files;
  std::vector<int> node_file_table, edge_file_table;
  bool drop_dangling = false;
  bool timed = false;  // the edge tables name a time column
  // Any table's: string ids, a split, features, a weight.
  bool string_ids = false, has_split = false, has_features = false, weighted = false;
};

// Parses and checks `schema_path`.
Status PlanTables(const std::string& schema_path, TablesPlan* out);

// One node as its file gives it.
struct TableNode {
  int64_t id = 0;         // int64 ids
  std::string_view name;  // string ids (empty for int64 ids)
  const std::vector<float>* features = nullptr;
  int64_t label = -1;
  uint8_t split = 0;
};
// Which part of a file a task reads: a Parquet file's row groups (`range`;
// null: the whole file, the only choice for CSV), and whether node rows
// carry only their ids (no features, labels or split read).
struct TableSlice {
  const ParquetRange* range = nullptr;
  bool ids_only = false;
};
// Reads node file `file_index` (of the plan's node_files) in row order.
Status ReadTablesNodeFile(const std::string& schema_path, int file_index, bool quiet,
                          const TableSlice& slice,
                          const std::function<Status(const TableNode&)>& fn);
// Reads edge file `file_index` (of the plan's edge_files) in row order:
// fn(edge) with the ids as the file holds them (an endpoint of a type with
// int64 ids: *_id; with string ids: *_name), its time where the schema
// names a time column and its weight where its table names one.
struct TableEdge {
  int64_t source_id = 0, destination_id = 0;
  int64_t time = 0;  // where the schema names a time column
  float weight = 1;  // where it names a weight column (finite, >= 0)
  std::string_view source_name, destination_name;
};
Status ReadTablesEdgeFile(const std::string& schema_path, int file_index, bool quiet,
                          const TableSlice& slice,
                          const std::function<Status(const TableEdge&)>& fn);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_TABLE_TASKS_H_
