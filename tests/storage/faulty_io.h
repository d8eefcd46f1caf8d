// FaultyIo: a FileIo over the real one (FileIo::Default()) that injects the
// faults a disk and a kernel give, at chosen calls, for the storage tests
// (leveldb's fault_injection_test, RocksDB's FaultInjectionTestFS):
//   - pread: EIO at the k-th call, or a short read (fewer bytes than asked);
//   - ring setup refused (ENOSYS, EPERM, ENOMEM);
//   - io_uring_submit failing (-errno), or taking only some of the reads;
//   - a completion with -EIO or a short result, a wait that fails, a wait
//     that never sees the completion (a stalled device: -ETIME);
// and counts what it did. Not thread-safe: one test thread drives it.
#ifndef FANOUT_TESTS_STORAGE_FAULTY_IO_H_
#define FANOUT_TESTS_STORAGE_FAULTY_IO_H_

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "storage/file_io.h"

namespace fanout::storage::testing {

struct Faults {
  // pread: the call (1-based, counted over this FaultyIo's life) that fails
  // with pread_errno, and the one that comes back short (short_bytes bytes).
  int64_t pread_fail_at = 0;
  int pread_errno = EIO;
  int64_t pread_short_at = 0;
  int64_t short_bytes = 1000;
  // Rings: NewRing fails with -ring_errno.
  int ring_errno = 0;
  // Submit: the call (1-based) that fails with -submit_errno; the one that
  // takes only one of the queued reads (the rest stay queued).
  int64_t submit_fail_at = 0;
  int submit_errno = EBUSY;
  int64_t submit_partial_at = 0;
  // Completions: the k-th completion's result replaced by -EIO, or by
  // short_bytes (a short read); the k-th wait fails with -wait_errno; from the
  // k-th wait on, every wait times out (a stalled completion).
  int64_t cqe_eio_at = 0;
  int64_t cqe_short_at = 0;
  int64_t wait_fail_at = 0;
  int wait_errno = EINTR + 1000;  // not a real errno: nothing retries it
  int64_t stall_from = 0;
};

struct FaultCounts {
  int64_t preads = 0, rings = 0, submits = 0, waits = 0, completions = 0;
};

class FaultyIo : public FileIo {
 public:
  explicit FaultyIo(Faults f = Faults()) : f_(f) {}
  int64_t Pread(int fd, char* buf, int64_t n, int64_t offset) override {
    const int64_t k = ++c_.preads;
    if (k == f_.pread_fail_at) return -f_.pread_errno;
    const int64_t r = FileIo::Default()->Pread(fd, buf, n, offset);
    if (k == f_.pread_short_at && r > f_.short_bytes) {
      // Short: the bytes past what it says are not the file's.
      std::memset(buf + f_.short_bytes, 0xee, static_cast<size_t>(r - f_.short_bytes));
      return f_.short_bytes;
    }
    return r;
  }
  int NewRing(unsigned depth, std::unique_ptr<ReadRing>* out) override {
    ++c_.rings;
    if (f_.ring_errno != 0) return -f_.ring_errno;
    std::unique_ptr<ReadRing> real;
    const int rc = FileIo::Default()->NewRing(depth, &real);
    if (rc < 0) return rc;
    *out = std::make_unique<Ring>(this, std::move(real));
    return 0;
  }
  const FaultCounts& counts() const { return c_; }

 private:
  class Ring : public ReadRing {
   public:
    Ring(FaultyIo* io, std::unique_ptr<ReadRing> real) : io_(io), real_(std::move(real)) {}
    bool RegisterBuffers(const iovec* iov, unsigned n) override {
      return real_->RegisterBuffers(iov, n);
    }
    bool QueueRead(int fd, char* buf, unsigned n, uint64_t offset, int buf_index,
                   uint64_t user_data) override {
      if (!real_->QueueRead(fd, buf, n, offset, buf_index, user_data)) return false;
      ++queued_;
      buf_of_[user_data] = buf;
      return true;
    }
    int Submit() override {
      const int64_t k = ++io_->c_.submits;
      if (k == io_->f_.submit_fail_at) return -io_->f_.submit_errno;  // nothing handed over
      if (k == io_->f_.submit_partial_at && queued_ > 1) {
        // The kernel took one: the others stay queued. liburing submits all
        // it has queued, so the rest is held back here and handed over at the
        // next call.
        held_ = queued_ - 1;
        queued_ = 0;
        const int rc = real_->Submit();  // all of them go out...
        return rc < 0 ? rc : 1;          // ...but only one is said to
      }
      if (held_ > 0) {
        // What an earlier partial submit held back, reported now.
        const int rc = real_->Submit();
        const int64_t n = held_ + queued_;
        held_ = queued_ = 0;
        return rc < 0 ? rc : static_cast<int>(n);
      }
      queued_ = 0;
      return real_->Submit();
    }
    int Wait(int timeout_ms, uint64_t* user_data, int32_t* res) override {
      const int64_t k = ++io_->c_.waits;
      if (k == io_->f_.wait_fail_at) return -io_->f_.wait_errno;
      if (io_->f_.stall_from > 0 && k >= io_->f_.stall_from) return -ETIME;
      const int rc = real_->Wait(timeout_ms, user_data, res);
      if (rc < 0) return rc;
      const int64_t c = ++io_->c_.completions;
      if (c == io_->f_.cqe_eio_at) *res = -EIO;
      if (c == io_->f_.cqe_short_at && *res > io_->f_.short_bytes) {
        // Short: the bytes past what it says are not the file's.
        std::memset(buf_of_[*user_data] + io_->f_.short_bytes, 0xee,
                    static_cast<size_t>(*res - io_->f_.short_bytes));
        *res = static_cast<int32_t>(io_->f_.short_bytes);
      }
      return 0;
    }

   private:
    FaultyIo* io_;
    std::unique_ptr<ReadRing> real_;
    int64_t queued_ = 0, held_ = 0;
    std::map<uint64_t, char*> buf_of_;  // each read's buffer, by its user data
  };
  Faults f_;
  FaultCounts c_;
};

}  // namespace fanout::storage::testing

#endif  // FANOUT_TESTS_STORAGE_FAULTY_IO_H_
