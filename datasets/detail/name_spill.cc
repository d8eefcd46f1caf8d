#include "datasets/detail/name_spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fanout::datasets::detail {

namespace {
constexpr size_t kBuffer = size_t{1} << 20;
}  // namespace

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

Status ScratchFile::Create(const std::string& path, size_t buffer_bytes) {
  fd_ = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) return Status::IOError("cannot create " + path + ": " + std::strerror(errno));
  path_ = path;
  cap_ = std::max<size_t>(buffer_bytes, 4096);
  buf_.reserve(cap_);
  return Status::OK();
}

Status ScratchFile::Append(const void* p, size_t n) {
  if (buf_.size() + n > cap_) FANOUT_RETURN_IF_ERROR(Flush());
  size_ += static_cast<int64_t>(n);
  if (n >= cap_) return WriteAll(p, n);  // past the buffer: written as it is
  const char* c = static_cast<const char*>(p);
  buf_.insert(buf_.end(), c, c + n);
  return Status::OK();
}

Status ScratchFile::Flush() {
  FANOUT_RETURN_IF_ERROR(WriteAll(buf_.data(), buf_.size()));
  buf_.clear();
  return Status::OK();
}

Status ScratchFile::WriteAll(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd_, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return Status::IOError("writing " + path_ + ": " + std::strerror(w < 0 ? errno : ENOSPC));
    c += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status ScratchFile::ReadAt(int64_t offset, void* out, size_t n) const {
  char* c = static_cast<char*>(out);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_, c + got, n - got, static_cast<off_t>(offset) + got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return Status::IOError("reading " + path_ + ": " +
                             (r < 0 ? std::strerror(errno) : "the file is shorter than written"));
    got += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status ScratchFile::WriteAt(int64_t offset, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd_, c + done, n - done, static_cast<off_t>(offset) + done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return Status::IOError("writing " + path_ + ": " + std::strerror(w < 0 ? errno : ENOSPC));
    done += static_cast<size_t>(w);
  }
  return Status::OK();
}

ScratchReader::ScratchReader(const ScratchFile& f, int64_t begin, int64_t end, size_t buffer_bytes)
    : f_(f), at_(begin), end_(end < 0 ? f.size() : end), buf_(std::max<size_t>(buffer_bytes, 64)) {}

bool ScratchReader::Fill() {
  if (b0_ > 0) {
    std::memmove(buf_.data(), buf_.data() + b0_, b1_ - b0_);
    b1_ -= b0_;
    b0_ = 0;
  }
  const size_t want = static_cast<size_t>(
      std::min<int64_t>(static_cast<int64_t>(buf_.size() - b1_), std::max<int64_t>(0, end_ - at_)));
  if (want == 0) return false;
  status_ = f_.ReadAt(at_, buf_.data() + b1_, want);
  if (!status_.ok()) return false;
  at_ += static_cast<int64_t>(want);
  b1_ += want;
  return true;
}

bool ScratchReader::Read(void* out, size_t n) {
  if (!status_.ok()) return false;
  if (n > buf_.size()) buf_.resize(n);
  while (b1_ - b0_ < n) {
    if (!Fill()) {
      if (status_.ok() && b1_ > b0_)
        status_ = Status::Corruption(f_.path() + " ends inside a record");
      return false;
    }
  }
  std::memcpy(out, buf_.data() + b0_, n);
  b0_ += n;
  return true;
}

Status NameFile::Append(std::string_view name) {
  FANOUT_RETURN_IF_ERROR(file_.Append(name.data(), name.size()));
  offsets_.push_back(offsets_.back() + static_cast<int64_t>(name.size()));
  return Status::OK();
}

std::string_view NameFile::Get(int64_t k) const {
  const int64_t a = offsets_[static_cast<size_t>(k)], z = offsets_[static_cast<size_t>(k) + 1];
  if (a < w0_ || z > w1_) {
    const int64_t n = std::min<int64_t>(bytes() - a, std::max<int64_t>(z - a, kBuffer));
    window_.resize(static_cast<size_t>(n));
    Status st = file_.ReadAt(a, window_.data(), static_cast<size_t>(n));
    if (!st.ok()) {
      if (error_.ok()) error_ = st;
      w0_ = w1_ = 0;
      return {};
    }
    w0_ = a;
    w1_ = a + n;
  }
  return std::string_view(window_.data() + (a - w0_), static_cast<size_t>(z - a));
}

}  // namespace fanout::datasets::detail
