// LineReader: streaming, allocation-free line iteration over a text file,
// plain or gzip-compressed (detected from the magic bytes, so `x.csv.gz` and a
// gzip file without the suffix both work). Lines come back as string_views
// into an internal block buffer, without the trailing '\n' or "\r\n".
//
// Thread safety: none; one reader per thread.
#ifndef FANOUT_DATASETS_LINE_READER_H_
#define FANOUT_DATASETS_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fanout::datasets {

class LineReader {
 public:
  // Opens `path`; NotFound/IOError name the path.
  static Status Open(const std::string& path, std::unique_ptr<LineReader>* out);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line. Returns false at the end of the file or on a
  // read error (then status() is not OK). The view is valid until the next call.
  bool Next(std::string_view* line);

  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  Status status() const { return status_; }
  // Compressed (on-disk) bytes consumed so far, and the file's size.
  int64_t bytes_read() const;
  int64_t file_size() const { return file_size_; }

  // "file:line: " prefix for error messages.
  std::string Where() const { return path_ + ":" + std::to_string(line_number_) + ": "; }

 private:
  LineReader() = default;
  bool Refill();

  std::string path_;
  void* gz_ = nullptr;    // gzFile when compressed
  FILE* file_ = nullptr;  // when plain
  int64_t file_size_ = 0;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  bool eof_ = false;
  int64_t line_number_ = 0;
  Status status_;
};

// Splits `line` at runs of the delimiters in `delims` (e.g. " \t" or ",").
// With `collapse`, consecutive delimiters count as one (whitespace formats).
void SplitFields(std::string_view line, std::string_view delims, bool collapse,
                 std::vector<std::string_view>* fields);

// Strict number parsing: the whole field must be a number.
bool ParseInt64(std::string_view s, int64_t* out);
bool ParseFloat(std::string_view s, float* out);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_LINE_READER_H_
