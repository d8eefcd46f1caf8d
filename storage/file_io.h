// FileIo: the one door every read of a feature file goes through (as leveldb's
// Env/RandomAccessFile and RocksDB's FileSystem): pread, and an io_uring ring
// for many reads in flight. FileIo::Default() is the POSIX and liburing one;
// tests give FeatureFile a FileIo of their own (tests/storage/faulty_io.h)
// that returns EIO, short reads, failed ring setup or submits, partial
// submits, failed or stalled completions at chosen calls, so that each error
// path of FeatureFile and BlockReader is exercised.
//
// Errors are returned as negative errno values, as the system calls give
// them; the callers turn them into Status naming the file and the block.
//
// Thread safety: Default() is immutable and may be used from any thread. A
// ReadRing belongs to one thread (its BlockReader).
#ifndef FANOUT_STORAGE_FILE_IO_H_
#define FANOUT_STORAGE_FILE_IO_H_

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace fanout::storage {

// One io_uring (or what stands in for it): reads queued, submitted, completed.
class ReadRing {
 public:
  virtual ~ReadRing() = default;
  // Registers the buffers reads go into (fixed buffers); false where the
  // kernel refuses (a low RLIMIT_MEMLOCK): reads then name plain addresses.
  virtual bool RegisterBuffers(const iovec* iov, unsigned n) = 0;
  // Queues a read of n bytes at `offset` into buf (with fixed buffer
  // `buf_index`, or -1); false where the submission queue is full.
  virtual bool QueueRead(int fd, char* buf, unsigned n, uint64_t offset, int buf_index,
                         uint64_t user_data) = 0;
  // Hands the queued reads to the kernel: how many it took (0 .. queued; the
  // rest stay queued for the next call), or -errno.
  virtual int Submit() = 0;
  // Waits up to timeout_ms for one completion: 0 with its user_data and
  // result (bytes read, or -errno of the read), -ETIME when none came in
  // time, or another -errno where the wait itself failed.
  virtual int Wait(int timeout_ms, uint64_t* user_data, int32_t* res) = 0;
};

class FileIo {
 public:
  virtual ~FileIo() = default;
  // pread: bytes read (0 at the end of the file), or -errno (EINTR retried
  // by the callers).
  virtual int64_t Pread(int fd, char* buf, int64_t n, int64_t offset) = 0;
  // A ring for `depth` reads in flight; -errno where none can be made
  // (ENOSYS, EPERM under seccomp, ENOMEM): the callers read one at a time.
  virtual int NewRing(unsigned depth, std::unique_ptr<ReadRing>* out) = 0;

  // POSIX pread and liburing.
  static FileIo* Default();
};

// Reads exactly n bytes at `offset` into buf, the first `have` of which are
// there already (a read that came back short). Short reads are continued;
// under O_DIRECT (`direct`) from the last 4096-aligned byte, so that the next
// read stays aligned (a read at an unaligned offset fails with EINVAL). EINTR
// is retried. IOError naming `what` and the offset on an error; Corruption
// where the file ends before the n bytes (or reads make no progress).
Status ReadFully(FileIo* io, int fd, bool direct, const std::string& what, char* buf, int64_t n,
                 int64_t offset, int64_t have = 0);

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_FILE_IO_H_
