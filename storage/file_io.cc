#include "storage/file_io.h"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fanout::storage {

namespace {

class UringRing : public ReadRing {
 public:
  ~UringRing() override {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  int Init(unsigned depth) {
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    ready_ = rc == 0;
    return rc;
  }
  bool RegisterBuffers(const iovec* iov, unsigned n) override {
    return io_uring_register_buffers(&ring_, iov, n) == 0;
  }
  bool QueueRead(int fd, char* buf, unsigned n, uint64_t offset, int buf_index,
                 uint64_t user_data) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return false;
    if (buf_index >= 0)
      io_uring_prep_read_fixed(sqe, fd, buf, n, offset, buf_index);
    else
      io_uring_prep_read(sqe, fd, buf, n, offset);
    io_uring_sqe_set_data64(sqe, user_data);
    return true;
  }
  int Submit() override {
    int rc;
    do {
      rc = io_uring_submit(&ring_);
    } while (rc == -EINTR);
    return rc;
  }
  int Wait(int timeout_ms, uint64_t* user_data, int32_t* res) override {
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec ts{};
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = static_cast<long long>(timeout_ms % 1000) * 1000000;
    int rc;
    do {
      rc = io_uring_wait_cqe_timeout(&ring_, &cqe, timeout_ms >= 0 ? &ts : nullptr);
    } while (rc == -EINTR);
    if (rc < 0) return rc;
    *user_data = io_uring_cqe_get_data64(cqe);
    *res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    return 0;
  }

 private:
  io_uring ring_{};
  bool ready_ = false;
};

class PosixFileIo : public FileIo {
 public:
  int64_t Pread(int fd, char* buf, int64_t n, int64_t offset) override {
    const ssize_t r = ::pread(fd, buf, static_cast<size_t>(n), offset);
    return r < 0 ? -errno : r;
  }
  int NewRing(unsigned depth, std::unique_ptr<ReadRing>* out) override {
    auto ring = std::make_unique<UringRing>();
    const int rc = ring->Init(depth);
    if (rc < 0) return rc;
    *out = std::move(ring);
    return 0;
  }
};

}  // namespace

Status ReadFully(FileIo* io, int fd, bool direct, const std::string& what, char* buf, int64_t n,
                 int64_t offset, int64_t have) {
  constexpr int64_t kAlign = 4096;
  int64_t done = direct ? have / kAlign * kAlign : have;
  int stalls = 0;  // reads in a row that left `done` where it was
  while (done < n) {
    const int64_t r = io->Pread(fd, buf + done, n - done, offset + done);
    if (r == -EINTR) continue;
    if (r < 0)
      return Status::IOError(what + ": reading " + std::to_string(n - done) + " bytes at byte " +
                             std::to_string(offset + done) + ": " +
                             std::strerror(static_cast<int>(-r)));
    if (r == 0)
      return Status::Corruption(what + ": the file ends at byte " + std::to_string(offset + done) +
                                ", inside the " + std::to_string(n) + " bytes at " +
                                std::to_string(offset) + " (truncated?)");
    const int64_t next = direct ? (done + r) / kAlign * kAlign : done + r;
    if (next == done && done + r < n) {
      if (++stalls >= 3)
        return Status::Corruption(what + ": reads at byte " + std::to_string(offset + done) +
                                  " keep coming back short (" + std::to_string(r) +
                                  " bytes): the file ends inside the block (truncated?)");
      continue;
    }
    stalls = 0;
    done = direct && done + r >= n ? n : next;
  }
  return Status::OK();
}

FileIo* FileIo::Default() {
  static PosixFileIo io;  // stateless: nothing in it changes
  return &io;
}

}  // namespace fanout::storage
