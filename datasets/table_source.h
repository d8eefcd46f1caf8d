// One table of fanout-partition's tables format (docs/DATA.md) read row by
// row: a CSV file (datasets/tables.cc) or a Parquet file decoded by pyarrow in
// a child process (datasets/parquet_table.cc). The schema loader asks for
// columns by name before the first row, then reads each row's fields typed.
#ifndef FANOUT_DATASETS_TABLE_SOURCE_H_
#define FANOUT_DATASETS_TABLE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fanout::datasets {

class TableSource {
 public:
  virtual ~TableSource() = default;
  // The index of column `name` (`role` names its use in errors). A CSV
  // answers from its header; a Parquet file checks the names when it starts
  // reading (the first Next), and its error names the column, its role and
  // the columns the file has.
  virtual Status Column(const std::string& name, const std::string& role, size_t* index) = 0;
  // Moves to the next row: false at the end or on an error (then *st says
  // which; OK at the end).
  virtual bool Next(Status* st) = 0;
  // Whether the field is empty (CSV) or null (Parquet).
  virtual bool Empty(size_t col) const = 0;
  // The field as an integer, a finite float, a list of finite floats (a CSV
  // cell "1 2 3", "1;2;3" or "[1, 2, 3]"; a Parquet list column), or text;
  // errors name the file, the line (or row and row group) and the column.
  virtual Status Int(size_t col, int64_t* out) const = 0;
  virtual Status Float(size_t col, float* out) const = 0;
  virtual Status FloatList(size_t col, std::vector<float>* out) const = 0;
  virtual std::string Text(size_t col) const = 0;
  // The same, valid until the next Next or TextView.
  virtual std::string_view TextView(size_t col) const = 0;
  // 1, true, True or yes (a CSV cell); true or non-zero (Parquet).
  virtual bool Truthy(size_t col) const = 0;
  // "file:line: column 'c': " (or "file: row R (row group G): column 'c': ")
  // for an error about a field of the current row.
  virtual std::string Where(size_t col) const = 0;
};

// Whether `path` names a Parquet file (.parquet or .pq).
bool IsParquetPath(const std::string& path);

// A Parquet file read through pyarrow: `python3 -c <datasets/parquet_reader.py>`
// (the interpreter from $FANOUT_PYTHON, else python3 on PATH) decodes it row
// group by row group and streams the asked columns as binary; a missing
// pyarrow, a damaged file, a missing column or a column of another type are
// errors naming the file (and the column).
// `range`: only row groups [first_group, end_group) (end_group -1: to the
// end), whose first row is the file's row `first_row` (0-based; errors name
// rows of the file).
struct ParquetRange {
  int64_t first_group = 0, end_group = -1, first_row = 0;
};
Status OpenParquetTable(const std::string& path, bool quiet, std::unique_ptr<TableSource>* out,
                        const ParquetRange& range = {});

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_TABLE_SOURCE_H_
