// The same-host export's server side: the sealed memory, and the socket
// that hands it to allowed local peers (rpc/local_export.h).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "common/secret.h"
#include "rpc/detail/local_export_internal.h"
#include "rpc/local_export.h"

namespace fanout::rpc {

using detail::Errno;
using detail::kPage;
using detail::kSeals;
using detail::LimitText;

struct LocalExport::Impl {
  LocalExportOptions options;
  int listen_fd = -1;
  int wake_fd = -1;
  std::thread thread;
  std::atomic<int64_t> handed{0}, refused_uid{0}, refused_token{0}, malformed{0}, timed_out{0},
      overloaded{0}, accept_errors{0};
  mutable std::mutex mu;
  std::string last_refusal;  // GUARDED_BY(mu)
  std::string answer;        // the layout record's answer, sent with the descriptor
  int mem_fd = -1;
  int feature_fd = -1;  // the disk tier's feature file (read-only), handed beside mem_fd

  void Refuse(int fd, int code, const std::string& why, std::atomic<int64_t>* counter) {
    // Counted and recorded before the answer leaves (a peer that has it may
    // read the stats at once).
    ++*counter;
    {
      std::lock_guard<std::mutex> lock(mu);
      last_refusal = why;
    }
    std::string a = EncodeAnswer(code, why);
    (void)!send(fd, a.data(), a.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  bool UidAllowed(uid_t uid) const {
    if (options.allowed_uids.empty()) return uid == geteuid();
    for (uid_t u : options.allowed_uids)
      if (u == uid) return true;
    return false;
  }
  // Answers one hello (the connection is closed by the caller after).
  void Answer(int fd);
  void Run();
};

Status LocalExport::Create(const std::string& dataset_id, int32_t partition, int64_t node_begin,
                           int64_t node_end, const std::vector<Source>& arrays,
                           std::unique_ptr<LocalExport>* out) {
  std::unique_ptr<LocalExport> e(new LocalExport());
  e->impl_ = std::make_unique<Impl>();
  ExportLayout& l = e->layout_;
  l.dataset_id = dataset_id;
  l.partition = partition;
  l.node_begin = node_begin;
  l.node_end = node_end;
  std::random_device rd;
  l.export_id = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  uint64_t at = 0;
  for (const Source& s : arrays) {
    ExportedArray a;
    a.kind = s.kind;
    a.offset = at;
    a.count = s.count;
    l.arrays.push_back(a);
    at += (s.count * ExportArrayElementBytes(s.kind) + kPage - 1) / kPage * kPage;
  }
  l.bytes = ExportBytesFor(l.arrays);
  const std::string name = "fanout-" + dataset_id.substr(0, 32) + "-p" + std::to_string(partition);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return Status::NotSupported(Errno("memfd_create (sealed shared memory for the local export)"));
  auto fail = [&](const std::string& what) {
    Status st = Status::ResourceExhausted(Errno(what.c_str()));
    close(fd);
    return st;
  };
  if (ftruncate(fd, static_cast<off_t>(l.bytes)) != 0)
    return fail("sizing the local export's memory");
  void* w = mmap(nullptr, l.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (w == MAP_FAILED) return fail("mapping the local export's memory to fill it");
  // Huge pages where the kernel allows them for shared memory
  // (/sys/kernel/mm/transparent_hugepage/shmem_enabled); a no-op elsewhere.
  (void)madvise(w, l.bytes, MADV_HUGEPAGE);
  for (size_t i = 0; i < arrays.size(); ++i) {
    const uint64_t n = arrays[i].count * ExportArrayElementBytes(arrays[i].kind);
    if (n > 0) std::memcpy(static_cast<char*>(w) + l.arrays[i].offset, arrays[i].data, n);
  }
  // F_SEAL_WRITE needs no shared mapping left that could become writable (a
  // read-only shared mapping of a read-write descriptor may be mprotect()ed
  // writable, and the kernel refuses the seal with EBUSY: seen on 6.18), so
  // the read-only mapping is made after the seals. MAP_POPULATE: its pages are
  // mapped now (they exist already), so serving takes no first-touch faults
  // and the server's RSS counts the arrays it serves from.
  munmap(w, l.bytes);
  if (fcntl(fd, F_ADD_SEALS, kSeals) != 0) return fail("sealing the local export");
  void* r = mmap(nullptr, l.bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (r == MAP_FAILED) return fail("mapping the local export read-only");
  e->fd_ = fd;
  e->impl_->mem_fd = fd;
  e->base_ = static_cast<const char*>(r);
  e->impl_->answer = EncodeAnswer(0, EncodeLayout(l));
  *out = std::move(e);
  return Status::OK();
}

LocalExport::~LocalExport() {
  Stop();
  if (base_ != nullptr) munmap(const_cast<char*>(base_), layout_.bytes);
  if (fd_ >= 0) close(fd_);
  if (impl_ && impl_->feature_fd >= 0) close(impl_->feature_fd);
}

Status LocalExport::SetFeatureFile(int fd, int64_t cache_bytes) {
  if (fd < 0 || cache_bytes < 0)
    return Status::InvalidArgument("a feature file descriptor and a cache size >= 0");
  if (impl_->feature_fd >= 0) close(impl_->feature_fd);
  impl_->feature_fd = fd;
  layout_.feature_file = true;
  layout_.feature_cache_bytes = cache_bytes;
  impl_->answer = EncodeAnswer(0, EncodeLayout(layout_));
  return Status::OK();
}

const void* ExportedMemory::Data(ExportArray kind, uint64_t* count) const {
  const ExportedArray* a = layout_.Find(kind);
  *count = a ? a->count : 0;
  return a && a->count > 0 ? base_ + a->offset : nullptr;
}

Status LocalExport::Listen(const std::string& path, const LocalExportOptions& options) {
  if (impl_->listen_fd >= 0)
    return Status::InvalidArgument("the local export listens already on " + path_);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    return Status::InvalidArgument("local socket path '" + path + "' is empty or longer than " +
                                   std::to_string(sizeof(addr.sun_path) - 1) +
                                   " bytes (a Unix socket's limit)");
  FANOUT_RETURN_IF_ERROR(CheckSocketFolder(path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Status::InvalidArgument("local socket path " + path +
                                     " exists and is not a socket; not replacing it");
    // Non-blocking: a live listener accepts at once (or its backlog is full:
    // EAGAIN, also live); a stale file refuses (ECONNREFUSED).
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bool live = false;
    if (probe >= 0) {
      live = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 ||
             errno == EAGAIN || errno == EINPROGRESS;
      close(probe);
    }
    if (live) return Status::InvalidArgument("another server answers on local socket " + path);
    unlink(path.c_str());  // a stale socket from a server that is gone
  }
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(Errno("local socket"));
  // The file is made with its final owner-only mode by bind itself (umask),
  // so nothing can reach it, or be swapped in, before a chmod: the umask
  // only ever takes bits away, so another thread creating a file meanwhile
  // gets at most a stricter mode.
  const mode_t old_mask = umask(077);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  const int bind_errno = errno;
  umask(old_mask);
  if (!bound || listen(fd, 512) != 0) {
    if (!bound) errno = bind_errno;
    Status s = Status::Unavailable(Errno(("local socket " + path).c_str()));
    close(fd);
    return s;
  }
  struct stat mine {};
  if (lstat(path.c_str(), &mine) != 0 || !S_ISSOCK(mine.st_mode)) {
    close(fd);
    return Status::Unavailable("local socket " + path + " vanished right after bind");
  }
  // connect() needs write permission on the socket file: open to every uid
  // only where other uids are allowed (SO_PEERCRED is the check that counts).
  // AT_SYMLINK_NOFOLLOW: a link put in its place is never followed.
  if (!options.allowed_uids.empty() &&
      fchmodat(AT_FDCWD, path.c_str(), 0666, AT_SYMLINK_NOFOLLOW) != 0) {
    Status s = Status::Unavailable(Errno(("making local socket " + path + " 0666").c_str()));
    close(fd);
    unlink(path.c_str());
    return s;
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    Status s = Status::ResourceExhausted(Errno("eventfd for the local socket's thread"));
    close(fd);
    unlink(path.c_str());
    return s;
  }
  impl_->options = options;
  impl_->listen_fd = fd;
  impl_->wake_fd = wake;
  path_ = path;
  inode_ = mine.st_ino;
  device_ = mine.st_dev;
  impl_->thread = std::thread([this] { impl_->Run(); });
  return Status::OK();
}

void LocalExport::Stop() {
  if (!impl_ || impl_->listen_fd < 0) return;
  uint64_t one = 1;
  (void)!write(impl_->wake_fd, &one, sizeof(one));
  if (impl_->thread.joinable()) impl_->thread.join();
  close(impl_->listen_fd);
  close(impl_->wake_fd);
  impl_->listen_fd = impl_->wake_fd = -1;
  // Only our own socket file: another server may have taken the path since.
  struct stat st {};
  if (lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode_ &&
      st.st_dev == device_)
    unlink(path_.c_str());
}

LocalExportStats LocalExport::Stats() const {
  LocalExportStats s;
  s.bytes = static_cast<int64_t>(layout_.bytes);
  s.handed = impl_->handed;
  s.refused_uid = impl_->refused_uid;
  s.refused_token = impl_->refused_token;
  s.malformed = impl_->malformed;
  s.timed_out = impl_->timed_out;
  s.overloaded = impl_->overloaded;
  s.accept_errors = impl_->accept_errors;
  std::lock_guard<std::mutex> lock(impl_->mu);
  s.last_refusal = impl_->last_refusal;
  return s;
}

void LocalExport::Impl::Answer(int fd) {
  char buf[kMaxLocalTokenBytes + 64];
  iovec iov{buf, sizeof(buf)};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  const ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT);
  if (n <= 0) return;  // gone, or nothing yet (spurious): dropped
  if (m.msg_flags & MSG_TRUNC) {
    Refuse(fd, static_cast<int>(Status::Code::kInvalidArgument),
           "hello is larger than any valid one", &malformed);
    return;
  }
  std::string token;
  Status st = DecodeHello(buf, static_cast<size_t>(n), &token);
  if (!st.ok()) {
    Refuse(fd, static_cast<int>(st.code()), st.message(), &malformed);
    return;
  }
  if (options.authorize) {
    Status ok = options.authorize(token);
    if (!ok.ok()) {
      Refuse(fd, static_cast<int>(ok.code()), ok.message(), &refused_token);
      return;
    }
  } else if (!options.token.empty() && !SameSecret(token, options.token)) {
    Refuse(fd, static_cast<int>(Status::Code::kUnauthenticated),
           token.empty() ? "this server requires its auth token on the local socket"
                         : "wrong auth token on the local socket",
           &refused_token);
    return;
  }
  iovec out{const_cast<char*>(answer.data()), answer.size()};
  const int handed_fds[2] = {mem_fd, feature_fd};
  const size_t nfds = feature_fd >= 0 ? 2 : 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)] = {};
  msghdr r{};
  r.msg_iov = &out;
  r.msg_iovlen = 1;
  r.msg_control = control;
  r.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
  cmsghdr* c = CMSG_FIRSTHDR(&r);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
  std::memcpy(CMSG_DATA(c), handed_fds, sizeof(int) * nfds);
  // Counted before the answer leaves, so that whoever has the descriptor
  // sees it counted (Stats() read right after a fetch).
  ++handed;
  if (sendmsg(fd, &r, MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(answer.size())) {
    --handed;
    ++timed_out;  // a peer that does not read (its buffer full) or is gone
  }
}

void LocalExport::Impl::Run() {
  using Clock = std::chrono::steady_clock;
  struct Conn {
    int fd;
    Clock::time_point deadline;
  };
  std::vector<Conn> conns;
  std::vector<pollfd> fds;
  Clock::time_point accept_pause{};
  for (;;) {
    const auto now = Clock::now();
    const bool accepting = now >= accept_pause;
    fds.clear();
    fds.push_back({wake_fd, POLLIN, 0});
    fds.push_back({accepting ? listen_fd : -1, POLLIN, 0});
    int timeout = accepting ? 1000 : 100;
    for (const Conn& c : conns) {
      fds.push_back({c.fd, POLLIN, 0});
      timeout = std::min<int>(
          timeout,
          std::max<int>(
              0,
              std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count() + 1));
    }
    if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;
    // Handshakes first (their slots free up), then new connections.
    std::vector<Conn> keep;
    const auto t = Clock::now();
    for (size_t i = 0; i < conns.size(); ++i) {
      const short ev = fds[i + 2].revents;
      if (ev & POLLIN) {
        Answer(conns[i].fd);
      } else if (ev & (POLLHUP | POLLERR | POLLNVAL)) {
        // The peer hung up without a hello.
      } else if (t >= conns[i].deadline) {
        Refuse(conns[i].fd, static_cast<int>(Status::Code::kDeadlineExceeded), "no hello in time",
               &timed_out);
      } else {
        keep.push_back(conns[i]);
        continue;
      }
      close(conns[i].fd);
    }
    conns.swap(keep);
    if (!(fds[1].revents & POLLIN)) continue;
    for (;;) {
      int c = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          ++accept_errors;
          std::lock_guard<std::mutex> lock(mu);
          last_refusal = Errno("accepting a local client") + " (" + LimitText() + ")";
          accept_pause =
              Clock::now() + std::chrono::milliseconds(100);  // no busy loop on a full table
        }
        break;
      }
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || !UidAllowed(cred.uid)) {
        // Refused now, holding no handshake slot: the refusal stays queued
        // for the peer after the close.
        Refuse(c, static_cast<int>(Status::Code::kUnauthenticated),
               "uid " + std::to_string(cred.uid) +
                   " may not map this server's partition (--local-uids)",
               &refused_uid);
        // A hello already here is read first: closing with it unread would
        // reset the connection before the peer reads the refusal.
        char drain[kMaxLocalTokenBytes + 64];
        (void)!recv(c, drain, sizeof(drain), MSG_DONTWAIT);
        close(c);
        continue;
      }
      if (static_cast<int>(conns.size()) >= options.max_pending) {
        Refuse(c, static_cast<int>(Status::Code::kResourceExhausted),
               "server busy: " + std::to_string(options.max_pending) + " local handshakes at once",
               &overloaded);
        close(c);
        continue;
      }
      conns.push_back({c, Clock::now() + std::chrono::milliseconds(options.handshake_timeout_ms)});
    }
  }
  for (const Conn& c : conns) close(c.fd);
}

}  // namespace fanout::rpc
