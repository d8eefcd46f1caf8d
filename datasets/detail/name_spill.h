// Scratch files for string ids past memory (datasets/tables.cc,
// StreamTables): a node type's names in node order on disk (NameFile), and
// the append-only record files the bucketed join of names to edge endpoints
// writes and reads back (ScratchFile, ScratchReader). Each file is the
// caller's (a fresh name it owns) and is removed with the object.
#ifndef FANOUT_DATASETS_DETAIL_NAME_SPILL_H_
#define FANOUT_DATASETS_DETAIL_NAME_SPILL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fanout::datasets::detail {

// An append-only file with its own buffer; read back at offsets (after
// Flush), patched in place with WriteAt.
class ScratchFile {
 public:
  ScratchFile() = default;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile();

  // Creates `path` (which must not exist), buffering `buffer_bytes` at most.
  Status Create(const std::string& path, size_t buffer_bytes = size_t{1} << 20);
  Status Append(const void* p, size_t n);
  template <typename T>
  Status Put(const T& v) {
    return Append(&v, sizeof v);
  }
  Status Flush();
  int64_t size() const { return size_; }  // bytes appended
  // Reads exactly n bytes at `offset` (what was flushed); IOError otherwise.
  Status ReadAt(int64_t offset, void* out, size_t n) const;
  // Overwrites n flushed bytes at `offset`.
  Status WriteAt(int64_t offset, const void* p, size_t n);
  const std::string& path() const { return path_; }

 private:
  Status WriteAll(const void* p, size_t n);
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
  size_t cap_ = 0;
  std::vector<char> buf_;
};

// Reads a flushed ScratchFile's bytes [begin, end) front to back through a
// 1 MiB buffer.
class ScratchReader {
 public:
  explicit ScratchReader(const ScratchFile& f, int64_t begin = 0, int64_t end = -1,
                         size_t buffer_bytes = size_t{1} << 20);
  // The next n bytes; false at the end (and, where the end cut a record,
  // status() says so) or on a read error (status()).
  bool Read(void* out, size_t n);
  template <typename T>
  bool Get(T* v) {
    return Read(v, sizeof *v);
  }
  const Status& status() const { return status_; }

 private:
  bool Fill();
  const ScratchFile& f_;
  int64_t at_, end_;
  std::vector<char> buf_;
  size_t b0_ = 0, b1_ = 0;
  Status status_;
};

// Names appended in index order; their offsets in memory (8 bytes a name),
// their bytes on disk, read back by index through a window (indices read in
// increasing order read the file once).
class NameFile {
 public:
  Status Create(const std::string& path) { return file_.Create(path); }
  Status Append(std::string_view name);
  Status Finish() { return file_.Flush(); }
  int64_t size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t bytes() const { return offsets_.back(); }
  // Name k (valid until the next call); "" on a read error, which error()
  // then says (callers that cannot return one check it after).
  std::string_view Get(int64_t k) const;
  const Status& error() const { return error_; }

 private:
  ScratchFile file_;
  std::vector<int64_t> offsets_{0};
  mutable std::string window_;
  mutable int64_t w0_ = 0, w1_ = 0;  // the window holds bytes [w0_, w1_)
  mutable Status error_;
};

}  // namespace fanout::datasets::detail

#endif  // FANOUT_DATASETS_DETAIL_NAME_SPILL_H_
