#include "storage/reader_pool.h"

#include <algorithm>

namespace fanout::storage {

ReaderPool::ReaderPool(const DiskFeatures* disk, int max_readers)
    : disk_(disk), max_(std::max(1, max_readers)) {}

ReaderPool::Lease& ReaderPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Return();
    pool_ = o.pool_;
    reader_ = std::move(o.reader_);
    bytes_ = o.bytes_;
    retired_ = o.retired_;
    o.pool_ = nullptr;
  }
  return *this;
}

void ReaderPool::Lease::Return() {
  if (pool_ == nullptr || !reader_) return;
  ReaderPool* p = pool_;
  pool_ = nullptr;
  {
    std::lock_guard<std::mutex> lock(p->mu_);
    p->bytes_ += reader_->buffer_bytes() - bytes_;
    if (reader_->retired() && !retired_) ++p->retired_;
    p->free_.push_back(std::move(reader_));
  }
  p->cv_.notify_one();
}

Status ReaderPool::Borrow(Lease* out) {
  std::unique_ptr<BlockReader> r;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || made_ < max_; });
    if (!free_.empty()) {
      r = std::move(free_.back());
      free_.pop_back();
    } else {
      ++made_;  // a place taken while it is made (outside the lock)
    }
  }
  if (!r) {
    Status st = disk_->NewReader(&r);
    std::lock_guard<std::mutex> lock(mu_);
    if (!st.ok()) {
      --made_;
      cv_.notify_one();
      return st;
    }
    bytes_ += r->buffer_bytes();
  }
  Lease l;
  l.pool_ = this;
  l.bytes_ = r->buffer_bytes();
  l.retired_ = r->retired();
  l.reader_ = std::move(r);
  *out = std::move(l);
  return Status::OK();
}

int ReaderPool::made() const {
  std::lock_guard<std::mutex> lock(mu_);
  return made_;
}

int64_t ReaderPool::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

int64_t ReaderPool::retired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return retired_;
}

}  // namespace fanout::storage
