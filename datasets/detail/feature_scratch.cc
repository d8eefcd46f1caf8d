#include "datasets/detail/feature_scratch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fanout::datasets::detail {

FeatureScratch::~FeatureScratch() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

Status FeatureScratch::Create(const std::string& path, int64_t dim) {
  fd_ = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0)
    return Status::IOError("cannot create " + path + " for the features: " + std::strerror(errno));
  path_ = path;
  dim_ = dim;
  buf_.reserve(std::max<size_t>(static_cast<size_t>(dim), (1 << 20) / sizeof(float)));
  return Status::OK();
}

Status FeatureScratch::Append(const float* row) {
  buf_.insert(buf_.end(), row, row + dim_);
  ++rows_;
  return buf_.size() + static_cast<size_t>(dim_) > buf_.capacity() ? Flush() : Status::OK();
}

Status FeatureScratch::Flush() {
  const char* p = reinterpret_cast<const char*>(buf_.data());
  size_t left = buf_.size() * sizeof(float);
  while (left > 0) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return Status::IOError("writing " + path_ + ": " + std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    left -= static_cast<size_t>(w);
  }
  buf_.clear();
  return Status::OK();
}

Status FeatureScratch::Finish() {
  FANOUT_RETURN_IF_ERROR(Flush());
  std::vector<float>().swap(buf_);
  window_.resize(std::max<size_t>(static_cast<size_t>(dim_), (1 << 20) / sizeof(float)));
  return Status::OK();
}

void FeatureScratch::Row(int64_t v, float* out) const {
  if (v < w0_ || v >= w0_ + wn_) {
    const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(window_.size()) / dim_);
    wn_ = std::min(rows, rows_ - v);
    w0_ = v;
    const size_t bytes = static_cast<size_t>(wn_ * dim_) * sizeof(float);
    size_t got = 0;
    while (got < bytes) {
      const ssize_t r = ::pread(fd_, reinterpret_cast<char*>(window_.data()) + got, bytes - got,
                                static_cast<off_t>(v * dim_ * sizeof(float) + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        if (read_error_.ok())
          read_error_ = Status::IOError("reading " + path_ + ": " +
                                        (r < 0 ? std::strerror(errno) : "short file"));
        std::fill_n(out, dim_, 0.0f);
        wn_ = 0;
        return;
      }
      got += static_cast<size_t>(r);
    }
  }
  std::copy_n(window_.data() + (v - w0_) * dim_, dim_, out);
}

}  // namespace fanout::datasets::detail
