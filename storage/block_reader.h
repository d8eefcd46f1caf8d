// BlockReader: one thread's reads of feature-file blocks, many in flight at
// once: io_uring (liburing) with a queue depth it is made with, O_DIRECT
// into aligned buffers registered with the ring (fixed buffers: no page
// pinning per read). Where the kernel or a sandbox refuses io_uring
// (io_uring_setup fails with ENOSYS or EPERM under some seccomp profiles),
// the same calls run as plain pread, one at a time: mode() says which.
//
// Every block is checked against the file's checksum table before the
// caller sees it (FeatureFile::VerifyBlock): a damaged block ends the call
// with Corruption naming the file and the block, never served. A read error
// (EIO) or a file that ends inside a block ends the call with IOError or
// Corruption naming both; short reads are finished in place (aligned under
// O_DIRECT).
//
// Reads go through a FileIo (storage/file_io.h). A failure of the ring
// itself (a submit that fails or takes nothing, a wait that fails, a read not
// completed within completion_timeout_ms, a completion naming no read)
// retires the ring: the call returns IOError saying so, and the reader reads
// one block at a time with pread from then on (retired()). No Read returns
// while a read of its own may still land in a buffer: the reads still out are
// waited for (up to the timeout) before the ring goes; where they cannot be,
// their buffers are never reused or freed (counted in leaked_bytes(), at most
// queue_depth x block bytes per retired reader).
//
// Thread safety: none; one BlockReader per thread at a time (a server keeps
// a pool of them, server/reader_pool.h; a client one per session). The
// FeatureFile may be shared.
#ifndef FANOUT_STORAGE_BLOCK_READER_H_
#define FANOUT_STORAGE_BLOCK_READER_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "common/status.h"
#include "storage/feature_file.h"
#include "storage/file_io.h"
#include "storage/io_gate.h"

namespace fanout::storage {

struct BlockReaderStats {
  int64_t reads = 0;          // blocks read
  int64_t bytes = 0;          // bytes read
  int64_t submits = 0;        // io_uring_submit calls (batches)
  int64_t max_in_flight = 0;  // most reads outstanding at once
};

class BlockReader {
 public:
  // queue_depth: reads in flight at once (1 .. 4096); max_block_bytes: the
  // largest block it will read (buffers are that size).
  // io: the door its reads go through (null: FileIo::Default(); a
  // FeatureFile's io() for its readers); not owned.
  static Status Create(int queue_depth, int64_t max_block_bytes, std::unique_ptr<BlockReader>* out,
                       FileIo* io = nullptr);
  // Forces the pread mode (tests; FANOUT_NO_IO_URING=1 in the environment
  // does the same for a process).
  static Status CreatePread(int queue_depth, int64_t max_block_bytes,
                            std::unique_ptr<BlockReader>* out, FileIo* io = nullptr);
  ~BlockReader();
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  // Reads blocks[0 .. n) of `file` (any order, no duplicates needed) and
  // calls done(i, data) for each once its checksum holds, in completion
  // order; `data` (geometry().block_bytes) is valid during the call only.
  // Returns the first error; blocks completed before it were delivered.
  // `options`: the reads' class and gate (storage/io_gate.h; none: not
  // ordered against other readers).
  Status Read(const FeatureFile& file, const int64_t* blocks, int64_t n,
              const std::function<void(int64_t i, const char* data)>& done,
              const ReadOptions& options = {});

  const char* mode() const { return ring_ != nullptr ? "io_uring" : "pread"; }
  int queue_depth() const { return depth_; }
  const BlockReaderStats& stats() const { return stats_; }
  // A read the ring has not completed in this long retires it (default 30 s).
  void set_completion_timeout_ms(int ms) { timeout_ms_ = ms; }
  bool retired() const { return retired_; }
  // Memory this reader holds: its buffers (and what a retired ring left).
  int64_t buffer_bytes() const { return static_cast<int64_t>(buffers_.size()) + leaked_bytes_; }
  int64_t leaked_bytes() const { return leaked_bytes_; }

 private:
  BlockReader() = default;
  // One read at a time; batch_gate: the process's IoGate where this thread
  // reads for batch work (each read takes its turn), else null; online_gate:
  // the gate this thread's online reads report their latencies to, else null.
  Status ReadPread(const FeatureFile& file, const int64_t* blocks, int64_t n,
                   const std::function<void(int64_t, const char*)>& done, IoGate* batch_gate,
                   IoGate* online_gate);
  // Ends the ring after a failure of its own (`why`), the reads still out
  // (`in_flight`, `unsubmitted` of them never handed over) waited for first;
  // returns `why`.
  Status Retire(Status why, int64_t in_flight, int64_t unsubmitted);
  FileIo* io_ = nullptr;
  int depth_ = 1;
  int64_t block_bytes_ = 0;
  int timeout_ms_ = 30000;
  AlignedBuffer buffers_;  // depth_ x block_bytes_ (declared before the ring: freed after it)
  std::unique_ptr<ReadRing> ring_;  // null: pread mode
  bool fixed_ = false;              // buffers registered with the ring
  bool retired_ = false;            // the ring failed: pread from then on
  int64_t leaked_bytes_ = 0;        // buffers a failed ring may still write into: never freed
  BlockReaderStats stats_;
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_BLOCK_READER_H_
