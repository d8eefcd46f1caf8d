// ReaderPool: the BlockReaders of one DiskFeatures, shared by the threads
// that serve requests (as RocksDB keeps one ring per thread, not per
// client): at most `max_readers` exist, made on first need; a request
// borrows one for its Gather and gives it back. Their rings and aligned
// buffers are counted (bytes(): the server's memory figures), and their
// number does not grow with connections: a peer opening a thousand
// connections makes no more readers than the pool holds (the rest wait for
// one).
//
// Thread safety: every method from any thread.
#ifndef FANOUT_STORAGE_READER_POOL_H_
#define FANOUT_STORAGE_READER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "storage/block_reader.h"
#include "storage/disk_features.h"

namespace fanout::storage {

class ReaderPool {
 public:
  // `disk` must outlive the pool; max_readers >= 1.
  ReaderPool(const DiskFeatures* disk, int max_readers);
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // A reader lent to one thread until the lease ends.
  class Lease {
   public:
    Lease() = default;
    ~Lease() { Return(); }
    Lease(Lease&& o) noexcept
        : pool_(o.pool_), reader_(std::move(o.reader_)), bytes_(o.bytes_), retired_(o.retired_) {
      o.pool_ = nullptr;
    }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    BlockReader* get() const { return reader_.get(); }

   private:
    friend class ReaderPool;
    void Return();
    ReaderPool* pool_ = nullptr;
    std::unique_ptr<BlockReader> reader_;
    int64_t bytes_ = 0;     // its buffer bytes when lent (the pool's count settles at return)
    bool retired_ = false;  // ... and whether its ring had been retired
  };
  // Lends a free reader, makes one while fewer than max_readers exist, else
  // waits for one to come back. The error of making one where it fails.
  Status Borrow(Lease* out);

  int made() const;
  int max_readers() const { return max_; }
  // Bytes the pool's readers hold: buffers (and what retired rings left).
  int64_t bytes() const;
  int64_t retired() const;  // readers whose ring failed (reading with pread)

 private:
  const DiskFeatures* disk_;
  const int max_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<BlockReader>> free_;  // GUARDED_BY(mu_)
  int made_ = 0;                                    // GUARDED_BY(mu_)
  int64_t bytes_ = 0;                               // GUARDED_BY(mu_): as of their return
  int64_t retired_ = 0;                             // GUARDED_BY(mu_)
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_READER_POOL_H_
