#include "datasets/line_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace fanout::datasets {
namespace {
constexpr size_t kBlock = size_t{4} << 20;
}

Status LineReader::Open(const std::string& path, std::unique_ptr<LineReader>* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IOError(path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode))
    return Status::InvalidArgument(path + ": is a directory, expected a file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::IOError(path + ": " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, f);
  std::unique_ptr<LineReader> r(new LineReader());
  r->path_ = path;
  r->file_size_ = static_cast<int64_t>(st.st_size);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    std::fclose(f);
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) return Status::IOError(path + ": cannot open gzip stream");
    gzbuffer(gz, 1 << 20);
    r->gz_ = gz;
  } else {
    std::rewind(f);
    r->file_ = f;
  }
  // A small plain file needs no 4 MiB block (a long line grows it anyway).
  r->buf_.resize(r->gz_ ? kBlock
                        : std::clamp<size_t>(static_cast<size_t>(st.st_size) + 1, 4096, kBlock));
  *out = std::move(r);
  return Status::OK();
}

LineReader::~LineReader() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
  if (file_) std::fclose(file_);
}

int64_t LineReader::bytes_read() const {
  if (gz_) return static_cast<int64_t>(gzoffset(static_cast<gzFile>(gz_)));
  if (file_) return static_cast<int64_t>(std::ftell(file_));
  return 0;
}

bool LineReader::Refill() {
  if (eof_) return false;
  // Move the partial line to the front; grow if one line fills the buffer.
  size_t keep = end_ - begin_;
  if (keep > 0 && begin_ > 0) std::memmove(buf_.data(), buf_.data() + begin_, keep);
  begin_ = 0;
  end_ = keep;
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
  size_t want = buf_.size() - end_;
  int64_t n;
  if (gz_) {
    int r = gzread(static_cast<gzFile>(gz_), buf_.data() + end_, static_cast<unsigned>(want));
    if (r < 0) {
      int err = 0;
      const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
      status_ = Status::Corruption(path_ + ": gzip error after line " +
                                   std::to_string(line_number_) + ": " + (msg ? msg : "unknown"));
      return false;
    }
    n = r;
  } else {
    n = static_cast<int64_t>(std::fread(buf_.data() + end_, 1, want, file_));
    if (n == 0 && std::ferror(file_)) {
      status_ = Status::IOError(path_ + ": read error after line " + std::to_string(line_number_));
      return false;
    }
  }
  if (n == 0) eof_ = true;
  end_ += static_cast<size_t>(n);
  return n > 0;
}

bool LineReader::Next(std::string_view* line) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (nl != nullptr) {
      size_t len = static_cast<size_t>(nl - start);
      begin_ += len + 1;
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      ++line_number_;
      return true;
    }
    if (!Refill()) {
      if (!status_.ok()) return false;
      if (end_ > begin_) {  // last line without a final newline
        const char* s = buf_.data() + begin_;
        size_t len = end_ - begin_;
        begin_ = end_;
        if (len > 0 && s[len - 1] == '\r') --len;
        *line = std::string_view(s, len);
        ++line_number_;
        return true;
      }
      return false;
    }
  }
}

void SplitFields(std::string_view line, std::string_view delims, bool collapse,
                 std::vector<std::string_view>* fields) {
  fields->clear();
  size_t i = 0, n = line.size();
  if (collapse) {
    while (i < n) {
      while (i < n && delims.find(line[i]) != std::string_view::npos) ++i;
      if (i >= n) break;
      size_t j = i;
      while (j < n && delims.find(line[j]) == std::string_view::npos) ++j;
      fields->push_back(line.substr(i, j - i));
      i = j;
    }
    return;
  }
  for (;;) {
    size_t j = i;
    while (j < n && delims.find(line[j]) == std::string_view::npos) ++j;
    fields->push_back(line.substr(i, j - i));
    if (j >= n) break;
    i = j + 1;
  }
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool ParseFloat(std::string_view s, float* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace fanout::datasets
