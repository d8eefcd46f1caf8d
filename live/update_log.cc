#include "live/update_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/crc32c.h"

namespace fanout::live {

namespace {

constexpr char kFileMagic[8] = {'F', 'N', 'U', 'P', 'D', 'L', 'O', 'G'};
constexpr uint32_t kFileVersion = 1;
constexpr uint32_t kRecordMagic = 0x52554e46;  // "FNUR"

void Put32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
void Put64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
uint32_t Get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint32_t RecordCrc(uint32_t len, uint64_t seq, const char* payload) {
  char head[12];
  std::memcpy(head, &len, 4);
  std::memcpy(head + 4, &seq, 8);
  return Crc32c(payload, len, Crc32c(head, sizeof head));
}

Status WriteAll(int fd, const char* data, size_t n, int64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, data, n, offset);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot write the update log", path, errno);
    }
    if (w == 0) return Status::IOError("cannot write the update log " + path + ": wrote nothing");
    data += w;
    n -= static_cast<size_t>(w);
    offset += w;
  }
  return Status::OK();
}

// Reads [offset, offset + n) fully; false at the end of the file first.
Status ReadAt(int fd, char* data, size_t n, int64_t offset, const std::string& path, bool* whole) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, data + got, n - got, offset + static_cast<int64_t>(got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot read the update log", path, errno);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  *whole = got == n;
  return Status::OK();
}

int DefaultSync(int fd) { return ::fdatasync(fd) == 0 ? 0 : errno; }

// A log file's header: its records start after `base_seq`.
std::string FileHeader(uint64_t base_seq) {
  std::string h(kFileMagic, sizeof kFileMagic);
  Put32(&h, kFileVersion);
  Put32(&h, 0);
  Put64(&h, base_seq);
  return h;
}

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

Status Errno(const std::string& what, const std::string& path, int err) {
  return Status::IOError(what + " " + path + ": " + std::strerror(err));
}

Status SyncFolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return Errno("cannot open the folder of", path, errno);
  const int rc = ::fsync(d);
  const int err = errno;
  ::close(d);
  return rc == 0 ? Status::OK() : Errno("cannot sync the folder of", path, err);
}

std::string EncodeLogRecord(uint64_t seq, std::string_view payload) {
  std::string r;
  r.reserve(kRecordHeaderBytes + payload.size());
  const uint32_t len = static_cast<uint32_t>(payload.size());
  Put32(&r, kRecordMagic);
  Put32(&r, len);
  Put64(&r, seq);
  Put32(&r, RecordCrc(len, seq, payload.data()));
  Put32(&r, 0);
  r.append(payload);
  return r;
}

UpdateLog::UpdateLog(std::string path, int fd, UpdateLogOptions options, uint64_t base_seq,
                     uint64_t last_seq, int64_t size)
    : path_(std::move(path)), fd_(fd), options_(std::move(options)) {
  base_seq_ = base_seq;
  next_seq_ = last_seq;
  size_ = size;
  stats_.bytes = size;
  stats_.last_seq = last_seq;
}

UpdateLog::~UpdateLog() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !leader_active_; });
  lock.unlock();
  ::close(fd_);
}

Status UpdateLog::Open(const std::string& path, UpdateLogOptions options, const Replay& replay,
                       LogReplayReport* report, std::unique_ptr<UpdateLog>* out) {
  *report = LogReplayReport();
  if (!options.sync) options.sync = DefaultSync;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT) return Errno("cannot open the update log", path, errno);
  if (fd < 0) {
    // A new log: its header, synced, and its folder entry synced.
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Errno("cannot create the update log", path, errno);
    const std::string h = FileHeader(options.base_seq);
    Status st = WriteAll(fd, h.data(), h.size(), 0, path);
    if (st.ok()) {
      const int err = options.sync(fd);
      if (err != 0) st = Errno("cannot sync the update log", path, err);
    }
    if (st.ok()) st = SyncFolderOf(path);
    if (!st.ok()) {
      ::close(fd);
      ::unlink(path.c_str());
      return st;
    }
    report->created = true;
    report->base_seq = report->last_seq = options.base_seq;
    report->bytes = kLogHeaderBytes;
    const uint64_t base = options.base_seq;
    out->reset(new UpdateLog(path, fd, std::move(options), base, base, kLogHeaderBytes));
    return Status::OK();
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    return Errno("cannot stat the update log", path, err);
  }
  const int64_t size = sb.st_size;
  auto fail = [&](Status st) {
    ::close(fd);
    return st;
  };
  char h[kLogHeaderBytes];
  bool whole = false;
  Status st = ReadAt(fd, h, sizeof h, 0, path, &whole);
  if (!st.ok()) return fail(st);
  if (!whole || std::memcmp(h, kFileMagic, sizeof kFileMagic) != 0)
    return fail(Status::Corruption("update log " + path +
                                   " has no valid header (not an update log, or damaged)"));
  if (Get32(h + 8) != kFileVersion)
    return fail(Status::Corruption("update log " + path + " is of version " +
                                   std::to_string(Get32(h + 8)) + ", this server reads " +
                                   std::to_string(kFileVersion)));
  const uint64_t base = Get64(h + 16);
  report->base_seq = base;
  uint64_t last = base;
  int64_t off = kLogHeaderBytes;
  std::vector<char> payload;
  std::string torn;
  while (off < size) {
    const std::string where = "update log " + path + " at byte " + std::to_string(off) +
                              " (record " + std::to_string(last + 1) + ")";
    char rh[kRecordHeaderBytes];
    st = ReadAt(fd, rh, sizeof rh, off, path, &whole);
    if (!st.ok()) return fail(st);
    if (!whole) {
      torn = "a record header cut short at byte " + std::to_string(off);
      break;
    }
    const uint32_t magic = Get32(rh), len = Get32(rh + 4);
    const uint64_t seq = Get64(rh + 8);
    const uint32_t crc = Get32(rh + 16);
    if (magic != kRecordMagic) {
      // Zeros from here to the end: space a crash left unwritten.
      std::vector<char> rest(static_cast<size_t>(std::min<int64_t>(size - off, 1 << 20)));
      bool all = true;
      for (int64_t o = off; o < size && all; o += static_cast<int64_t>(rest.size())) {
        const size_t n = static_cast<size_t>(std::min<int64_t>(size - o, rest.size()));
        bool w = false;
        st = ReadAt(fd, rest.data(), n, o, path, &w);
        if (!st.ok()) return fail(st);
        all = AllZero(rest.data(), n);
      }
      if (all) {
        torn = "zero bytes from byte " + std::to_string(off);
        break;
      }
      return fail(Status::Corruption(where +
                                     ": not a record (bad magic): the log is damaged; "
                                     "nothing after record " +
                                     std::to_string(last) + " is applied"));
    }
    if (static_cast<int64_t>(len) > options.max_record_bytes)
      return fail(Status::Corruption(where + ": a record of " + std::to_string(len) +
                                     " bytes, over the limit of " +
                                     std::to_string(options.max_record_bytes)));
    const int64_t end = off + kRecordHeaderBytes + len;
    if (end > size) {
      torn = "a record of " + std::to_string(len) + " bytes cut short by the end of the file";
      break;
    }
    payload.resize(len);
    st = ReadAt(fd, payload.data(), len, off + kRecordHeaderBytes, path, &whole);
    if (!st.ok()) return fail(st);
    if (RecordCrc(len, seq, payload.data()) != crc) {
      if (end == size) {
        torn = "a final record (" + std::to_string(seq) + ") whose checksum does not match";
        break;
      }
      return fail(Status::Corruption(where +
                                     ": checksum mismatch with records after it: the "
                                     "log is damaged; nothing after record " +
                                     std::to_string(last) + " is applied"));
    }
    if (seq != last + 1)
      return fail(Status::Corruption(where + ": sequence " + std::to_string(seq) + " where " +
                                     std::to_string(last + 1) + " was expected"));
    if (replay) {
      st = replay(seq, std::string_view(payload.data(), len));
      if (!st.ok()) return fail(st);
    }
    ++report->records;
    last = seq;
    off = end;
  }
  if (!torn.empty()) {
    if (::ftruncate(fd, off) != 0)
      return fail(Errno("cannot cut the torn tail of the update log", path, errno));
    const int err = options.sync(fd);
    if (err != 0) return fail(Errno("cannot sync the update log", path, err));
    report->torn_bytes = size - off;
    report->torn_reason = torn;
  }
  report->last_seq = last;
  report->bytes = off;
  out->reset(new UpdateLog(path, fd, std::move(options), base, last, off));
  return Status::OK();
}

Status UpdateLog::Append(std::string_view payload, uint64_t* seq,
                         const std::function<void(uint64_t seq)>& apply) {
  return AppendMany({payload}, seq, [&apply](uint64_t s, size_t) {
    if (apply) apply(s);
  });
}

Status UpdateLog::AppendMany(const std::vector<std::string_view>& payloads, uint64_t* last_seq,
                             const std::function<void(uint64_t seq, size_t i)>& apply) {
  if (payloads.empty()) return Status::InvalidArgument("no records to append");
  for (std::string_view payload : payloads)
    if (static_cast<int64_t>(payload.size()) > options_.max_record_bytes)
      return Status::InvalidArgument("an update batch of " + std::to_string(payload.size()) +
                                     " bytes is over the log's record limit of " +
                                     std::to_string(options_.max_record_bytes));
  std::vector<std::shared_ptr<Pending>> mine(payloads.size());
  for (auto& m : mine) m = std::make_shared<Pending>();
  std::unique_lock<std::mutex> lock(mu_);
  if (!failed_.ok()) return failed_;
  for (size_t i = 0; i < payloads.size(); ++i) {
    mine[i]->seq = ++next_seq_;
    mine[i]->bytes = EncodeLogRecord(mine[i]->seq, payloads[i]);
    if (apply) apply(mine[i]->seq, i);
    queue_.push_back(mine[i]);
  }
  // The records are consecutive in the queue: the last one done means all
  // are (a failed group fails every record queued behind it).
  const std::shared_ptr<Pending>& p = mine.back();
  // Wait until written by a leader, or become the leader.
  while (!p->done) {
    if (!leader_active_) {
      leader_active_ = true;
      std::deque<std::shared_ptr<Pending>> group;
      group.swap(queue_);
      lock.unlock();
      Status st = WriteGroup(group);
      lock.lock();
      for (auto& g : group) {
        g->done = true;
        g->status = st;
      }
      if (st.ok()) {
        ++stats_.syncs;
        stats_.appends += static_cast<int64_t>(group.size());
        stats_.max_group = std::max<int64_t>(stats_.max_group, static_cast<int64_t>(group.size()));
        stats_.last_seq = group.back()->seq;
        stats_.bytes = size_;
      } else if (failed_.ok()) {
        failed_ = st;
        // Records queued behind the failed group can never be written in
        // order: they fail too.
        for (auto& q : queue_) {
          q->done = true;
          q->status = st;
        }
        queue_.clear();
      }
      leader_active_ = false;
      cv_.notify_all();
    } else {
      cv_.wait(lock);
    }
  }
  if (!p->status.ok()) return p->status;
  *last_seq = p->seq;
  return Status::OK();
}

Status UpdateLog::WriteGroup(const std::deque<std::shared_ptr<Pending>>& group) {
  std::string buf;
  size_t n = 0;
  for (const auto& g : group) n += g->bytes.size();
  buf.reserve(n);
  for (const auto& g : group) buf += g->bytes;
  // size_ is the leader's alone while leader_active_.
  FANOUT_RETURN_IF_ERROR(WriteAll(fd_, buf.data(), buf.size(), size_, path_));
  const int err = options_.sync(fd_);
  if (err != 0) return Errno("cannot sync the update log", path_, err);
  size_ += static_cast<int64_t>(buf.size());
  return Status::OK();
}

uint64_t UpdateLog::base_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return base_seq_;
}

Status UpdateLog::DropThrough(uint64_t keep_after) {
  std::lock_guard<std::mutex> one(drop_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  if (!failed_.ok()) return failed_;
  if (keep_after <= base_seq_) return Status::OK();  // nothing at or below it is here
  if (keep_after > stats_.last_seq)
    return Status::InvalidArgument("cannot drop the update log's records through " +
                                   std::to_string(keep_after) + ": the newest durable one is " +
                                   std::to_string(stats_.last_seq));
  const int64_t durable = stats_.bytes;  // whole, synced records end here
  uint64_t seq = base_seq_;
  lock.unlock();
  // Record keep_after + 1's offset: headers read from the start (written
  // records never move; only the tail grows).
  int64_t off = kLogHeaderBytes;
  while (seq < keep_after) {
    char rh[kRecordHeaderBytes];
    bool whole = false;
    FANOUT_RETURN_IF_ERROR(ReadAt(fd_, rh, sizeof rh, off, path_, &whole));
    if (!whole || Get32(rh) != kRecordMagic || Get64(rh + 8) != seq + 1)
      return Status::Corruption("update log " + path_ + " at byte " + std::to_string(off) +
                                ": not record " + std::to_string(seq + 1) +
                                " where the log's own records were");
    off += kRecordHeaderBytes + Get32(rh + 4);
    ++seq;
  }
  const std::string tmp = path_ + ".tmp";
  const int out = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return Errno("cannot create", tmp, errno);
  auto abandon = [&](Status st) {
    ::close(out);
    ::unlink(tmp.c_str());
    return st;
  };
  const std::string h = FileHeader(keep_after);
  Status st = WriteAll(out, h.data(), h.size(), 0, tmp);
  int64_t written = kLogHeaderBytes;
  std::vector<char> buf(1 << 20);
  auto copy = [&](int64_t from, int64_t to) -> Status {
    for (int64_t o = from; o < to;) {
      const size_t n = static_cast<size_t>(std::min<int64_t>(to - o, buf.size()));
      bool whole = false;
      FANOUT_RETURN_IF_ERROR(ReadAt(fd_, buf.data(), n, o, path_, &whole));
      if (!whole) return Status::IOError("update log " + path_ + " ends before its records do");
      FANOUT_RETURN_IF_ERROR(WriteAll(out, buf.data(), n, written, tmp));
      written += static_cast<int64_t>(n);
      o += static_cast<int64_t>(n);
    }
    return Status::OK();
  };
  auto sync = [&]() -> Status {
    const int err = options_.sync(out);
    return err == 0 ? Status::OK() : Errno("cannot sync", tmp, err);
  };
  // The bulk while appends go on, synced.
  if (st.ok()) st = copy(off, durable);
  if (st.ok()) st = sync();
  if (!st.ok()) return abandon(st);
  // Then as the leader (no group is written meanwhile): what was written
  // since, the sync, the rename and the switch to the new file.
  lock.lock();
  cv_.wait(lock, [&] { return !leader_active_; });
  if (!failed_.ok()) {
    lock.unlock();
    return abandon(failed_);
  }
  leader_active_ = true;
  const int64_t end = size_;
  lock.unlock();
  st = copy(durable, end);
  if (st.ok()) st = sync();
  if (st.ok() && ::rename(tmp.c_str(), path_.c_str()) != 0)
    st = Errno("cannot rename " + tmp + " over", path_, errno);
  if (!st.ok()) {
    lock.lock();
    leader_active_ = false;
    cv_.notify_all();
    lock.unlock();
    return abandon(st);
  }
  // Renamed: the path is the new file from here, whatever the folder's sync
  // says (a crash before it is durable leaves the old log, whole).
  const Status folder = SyncFolderOf(path_);
  lock.lock();
  const int old = fd_;
  fd_ = out;
  size_ = written;
  stats_.bytes = written;
  base_seq_ = keep_after;
  leader_active_ = false;
  cv_.notify_all();
  lock.unlock();
  ::close(old);
  return folder;
}

UpdateLogStats UpdateLog::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace fanout::live
