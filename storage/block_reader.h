// BlockReader: one thread's reads of feature-file blocks, many in flight at
// once: io_uring (liburing) with a queue depth it is made with, O_DIRECT
// into aligned buffers registered with the ring (fixed buffers: no page
// pinning per read). Where the kernel or a sandbox refuses io_uring
// (io_uring_setup fails with ENOSYS or EPERM under some seccomp profiles),
// the same calls run as plain pread, one at a time: mode() says which.
//
// Every block is checked against the file's checksum table before the
// caller sees it (FeatureFile::VerifyBlock): a damaged block ends the call
// with Corruption naming the file and the block, never served.
//
// Thread safety: none; one BlockReader per thread (a server's connection or
// progress thread, a client's session). The FeatureFile may be shared.
#ifndef FANOUT_STORAGE_BLOCK_READER_H_
#define FANOUT_STORAGE_BLOCK_READER_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "common/status.h"
#include "storage/feature_file.h"

namespace fanout::storage {

class IoGate;

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
  static Status Create(int queue_depth, int64_t max_block_bytes, std::unique_ptr<BlockReader>* out);
  // Forces the pread mode (tests; FANOUT_NO_IO_URING=1 in the environment
  // does the same for a process).
  static Status CreatePread(int queue_depth, int64_t max_block_bytes,
                            std::unique_ptr<BlockReader>* out);
  ~BlockReader();
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  // Reads blocks[0 .. n) of `file` (any order, no duplicates needed) and
  // calls done(i, data) for each once its checksum holds, in completion
  // order; `data` (geometry().block_bytes) is valid during the call only.
  // Returns the first error; blocks completed before it were delivered.
  Status Read(const FeatureFile& file, const int64_t* blocks, int64_t n,
              const std::function<void(int64_t i, const char* data)>& done);

  const char* mode() const { return ring_ != nullptr ? "io_uring" : "pread"; }
  int queue_depth() const { return depth_; }
  const BlockReaderStats& stats() const { return stats_; }

 private:
  BlockReader() = default;
  // One read at a time; batch_gate: the process's IoGate where this thread
  // reads for batch work (each read takes its turn), else null.
  Status ReadPread(const FeatureFile& file, const int64_t* blocks, int64_t n,
                   const std::function<void(int64_t, const char*)>& done, IoGate* batch_gate);
  int depth_ = 1;
  int64_t block_bytes_ = 0;
  AlignedBuffer buffers_;  // depth_ x block_bytes_ (declared before the ring: freed after it)
  struct Ring;
  std::unique_ptr<Ring> ring_;  // null: pread mode
  bool lost_reads_ = false;     // the ring failed with reads out: its buffers are never freed
  BlockReaderStats stats_;
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_BLOCK_READER_H_
