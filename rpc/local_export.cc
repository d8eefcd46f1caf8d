#include "rpc/local_export.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "common/secret.h"

namespace fanout::rpc {

namespace {

constexpr uint32_t kLayoutMagic = 0x584c4e46;  // "FNLX"
constexpr uint32_t kHelloMagic = 0x484c4e46;   // "FNLH"
constexpr uint32_t kAnswerMagic = 0x414c4e46;  // "FNLA"
constexpr uint32_t kLocalVersion = 1;
constexpr uint64_t kPage = 4096;
constexpr int kSeals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
// Largest message either side reads: a layout record is well under this.
constexpr size_t kMaxMessageBytes = 64 * 1024;

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Little-endian append/read helpers for the records.
template <typename T>
void Put(std::string* s, T v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(T));
}
struct Reader {
  const char* p;
  size_t left;
  template <typename T>
  bool Get(T* v) {
    if (left < sizeof(T)) return false;
    std::memcpy(v, p, sizeof(T));
    p += sizeof(T);
    left -= sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::string* out) {
    if (left < n) return false;
    out->assign(p, n);
    p += n;
    left -= n;
    return true;
  }
};

bool Known(uint16_t kind) { return kind >= 1 && kind <= 9; }

std::string LimitText() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  return "this process's descriptor limit (RLIMIT_NOFILE " +
         std::to_string(static_cast<long long>(r.rlim_cur)) + ")";
}

}  // namespace

const char* ExportArrayName(ExportArray a) {
  switch (a) {
    case ExportArray::kIndptr:
      return "indptr";
    case ExportArray::kIndices:
      return "indices";
    case ExportArray::kEdgeIds:
      return "edge_ids";
    case ExportArray::kEdgeTimes:
      return "edge_times";
    case ExportArray::kEdgeTypes:
      return "edge_types";
    case ExportArray::kFeatures:
      return "features";
    case ExportArray::kLabels:
      return "labels";
    case ExportArray::kSplit:
      return "split";
    case ExportArray::kOriginalIds:
      return "original_ids";
  }
  return "unknown";
}

size_t ExportArrayElementBytes(ExportArray a) {
  switch (a) {
    case ExportArray::kEdgeTypes:
      return 4;
    case ExportArray::kFeatures:
    case ExportArray::kSplit:
      return 1;
    default:
      return 8;
  }
}

const ExportedArray* ExportLayout::Find(ExportArray kind) const {
  for (const auto& a : arrays)
    if (a.kind == kind) return &a;
  return nullptr;
}

std::string EncodeLayout(const ExportLayout& l) {
  std::string s;
  Put(&s, kLayoutMagic);
  Put(&s, kLocalVersion);
  Put(&s, static_cast<uint32_t>(l.dataset_id.size()));
  s += l.dataset_id;
  Put(&s, l.partition);
  Put(&s, l.node_begin);
  Put(&s, l.node_end);
  Put(&s, l.export_id);
  Put(&s, l.bytes);
  Put(&s, static_cast<uint32_t>(l.arrays.size()));
  for (const auto& a : l.arrays) {
    Put(&s, static_cast<uint16_t>(a.kind));
    Put(&s, uint16_t{0});
    Put(&s, a.offset);
    Put(&s, a.count);
  }
  return s;
}

Status DecodeLayout(const std::string& text, ExportLayout* out) {
  Reader r{text.data(), text.size()};
  uint32_t magic = 0, version = 0, id_bytes = 0, n = 0;
  auto bad = [](const std::string& why) {
    return Status::Corruption("local export layout record: " + why);
  };
  if (!r.Get(&magic) || !r.Get(&version)) return bad("truncated header");
  if (magic != kLayoutMagic) return bad("bad magic");
  if (version != kLocalVersion)
    return bad("version " + std::to_string(version) + ", this client reads version " +
               std::to_string(kLocalVersion));
  ExportLayout l;
  if (!r.Get(&id_bytes) || id_bytes > 1024 || !r.Bytes(id_bytes, &l.dataset_id))
    return bad("truncated dataset id");
  if (!r.Get(&l.partition) || !r.Get(&l.node_begin) || !r.Get(&l.node_end) ||
      !r.Get(&l.export_id) || !r.Get(&l.bytes) || !r.Get(&n))
    return bad("truncated");
  if (l.node_begin < 0 || l.node_end < l.node_begin) return bad("node range is not a range");
  if (n > 64) return bad(std::to_string(n) + " arrays");
  uint64_t seen = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint16_t kind = 0, pad = 0;
    ExportedArray a;
    if (!r.Get(&kind) || !r.Get(&pad) || !r.Get(&a.offset) || !r.Get(&a.count))
      return bad("truncated array list");
    if (!Known(kind)) return bad("unknown array kind " + std::to_string(kind));
    if (seen & (uint64_t{1} << kind)) return bad("array " + std::to_string(kind) + " twice");
    seen |= uint64_t{1} << kind;
    a.kind = static_cast<ExportArray>(kind);
    const uint64_t elem = ExportArrayElementBytes(a.kind);
    if (a.count > l.bytes / elem || a.offset > l.bytes || a.count * elem > l.bytes - a.offset)
      return bad(std::string("array ") + ExportArrayName(a.kind) + " lies outside the memory");
    if (a.offset % elem != 0)
      return bad(std::string("array ") + ExportArrayName(a.kind) + " is misaligned");
    l.arrays.push_back(a);
  }
  if (r.left != 0) return bad(std::to_string(r.left) + " trailing bytes");
  *out = std::move(l);
  return Status::OK();
}

std::string EncodeHello(const std::string& token) {
  std::string s;
  Put(&s, kHelloMagic);
  Put(&s, kLocalVersion);
  Put(&s, static_cast<uint32_t>(token.size()));
  s += token;
  return s;
}

Status DecodeHello(const char* data, size_t bytes, std::string* token) {
  Reader r{data, bytes};
  uint32_t magic = 0, version = 0, n = 0;
  if (!r.Get(&magic) || !r.Get(&version) || !r.Get(&n))
    return Status::InvalidArgument("truncated hello");
  if (magic != kHelloMagic) return Status::InvalidArgument("not a Fanout local-export hello");
  if (version != kLocalVersion)
    return Status::InvalidArgument("hello version " + std::to_string(version) +
                                   ", this server speaks version " + std::to_string(kLocalVersion));
  if (n > kMaxLocalTokenBytes || n != r.left)
    return Status::InvalidArgument("hello token length does not match");
  r.Bytes(n, token);
  return Status::OK();
}

std::string EncodeAnswer(int code, const std::string& text) {
  std::string s;
  Put(&s, kAnswerMagic);
  Put(&s, kLocalVersion);
  Put(&s, static_cast<int32_t>(code));
  Put(&s, static_cast<uint32_t>(text.size()));
  s += text;
  return s;
}

Status DecodeAnswer(const char* data, size_t bytes, std::string* text) {
  Reader r{data, bytes};
  uint32_t magic = 0, version = 0, n = 0;
  int32_t code = 0;
  if (!r.Get(&magic) || !r.Get(&version) || !r.Get(&code) || !r.Get(&n) || magic != kAnswerMagic ||
      n != r.left)
    return Status::Corruption("a malformed answer (not a Fanout server of this version?)");
  if (version != kLocalVersion)
    return Status::Corruption("answer version " + std::to_string(version));
  r.Bytes(n, text);
  if (code != 0) return Status::FromCode(code, *text);
  return Status::OK();
}

// ---------------------------------------------------------------- server side

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
  l.bytes = std::max<uint64_t>(at, kPage);
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
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Status::InvalidArgument("local socket path " + path +
                                     " exists and is not a socket; not replacing it");
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const bool live =
        probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) close(probe);
    if (live) return Status::InvalidArgument("another server answers on local socket " + path);
    unlink(path.c_str());  // a stale socket from a server that is gone
  }
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(Errno("local socket"));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 512) != 0) {
    Status s = Status::Unavailable(Errno(("local socket " + path).c_str()));
    close(fd);
    return s;
  }
  // connect() needs write permission on the socket file: open to every uid
  // only where other uids are allowed (SO_PEERCRED is the check that counts).
  chmod(path.c_str(), options.allowed_uids.empty() ? 0600 : 0666);
  impl_->options = options;
  impl_->listen_fd = fd;
  impl_->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  path_ = path;
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
  if (lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path_.c_str());
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
  if (!options.token.empty() && !SameSecret(token, options.token)) {
    Refuse(fd, static_cast<int>(Status::Code::kUnauthenticated),
           token.empty() ? "this server requires its auth token on the local socket"
                         : "wrong auth token on the local socket",
           &refused_token);
    return;
  }
  iovec out{const_cast<char*>(answer.data()), answer.size()};
  char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr r{};
  r.msg_iov = &out;
  r.msg_iovlen = 1;
  r.msg_control = control;
  r.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&r);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &mem_fd, sizeof(int));
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
    bool refused_uid;  // answered with the refusal once its hello is read (closing
                       // with the hello unread would reset the connection first)
    uid_t uid;
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
      if ((ev & POLLIN) && conns[i].refused_uid) {
        char drain[kMaxLocalTokenBytes + 64];
        (void)!recv(conns[i].fd, drain, sizeof(drain), MSG_DONTWAIT);
        Refuse(conns[i].fd, static_cast<int>(Status::Code::kUnauthenticated),
               "uid " + std::to_string(conns[i].uid) +
                   " may not map this server's partition (--local-uids)",
               &refused_uid);
      } else if (ev & POLLIN) {
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
      const bool allowed =
          getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && UidAllowed(cred.uid);
      if (static_cast<int>(conns.size()) >= options.max_pending) {
        Refuse(c, static_cast<int>(Status::Code::kResourceExhausted),
               "server busy: " + std::to_string(options.max_pending) + " local handshakes at once",
               &overloaded);
        close(c);
        continue;
      }
      conns.push_back({c, Clock::now() + std::chrono::milliseconds(options.handshake_timeout_ms),
                       !allowed, cred.uid});
    }
  }
  for (const Conn& c : conns) close(c.fd);
}

// ---------------------------------------------------------------- client side

LocalMapping::~LocalMapping() {
  if (base_ != nullptr) munmap(const_cast<char*>(base_), bytes_);
}

Status FetchLocalExport(const std::string& path, const std::string& token, int timeout_ms,
                        std::shared_ptr<LocalMapping>* out) {
  const std::string where = "local socket " + path + ": ";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    return Status::InvalidArgument(where + "path is empty or too long for a Unix socket");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return Status::ResourceExhausted(where + Errno("socket") + " (" + LimitText() + ")");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{s};
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno == ENOENT)
      return Status::NotFound(where + "no such socket (the server is on another host?)");
    return Status::Unavailable(where + Errno("connect"));
  }
  const std::string hello = EncodeHello(token);
  if (send(s, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size()))
    return Status::Unavailable(where + Errno("sending the hello"));
  std::string buf(kMaxMessageBytes, '\0');
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return Status::DeadlineExceeded(where + "no answer within " + std::to_string(timeout_ms) +
                                      " ms");
    if (errno == ECONNRESET)
      return Status::Unavailable(where +
                                 "the server closed the connection before answering (busy?)");
    return Status::Unavailable(where + Errno("receiving the answer"));
  }
  if (n == 0)
    return Status::Unavailable(where + "the server closed the connection without an answer");
  // Every descriptor that came, whatever else is wrong, is closed unless kept.
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.push_back(fd);
    }
  }
  struct FdsCloser {
    std::vector<int>* fds;
    ~FdsCloser() {
      for (int fd : *fds) close(fd);
    }
  } fds_closer{&fds};
  if (m.msg_flags & MSG_TRUNC)
    return Status::Corruption(where + "answer larger than any valid one");
  std::string text;
  Status st = DecodeAnswer(buf.data(), static_cast<size_t>(n), &text);
  if (!st.ok()) return Status::FromCode(static_cast<int>(st.code()), where + st.message());
  if (m.msg_flags & MSG_CTRUNC)
    return Status::ResourceExhausted(
        where + "the server's descriptor did not arrive: " + LimitText() + " is reached");
  if (fds.size() != 1)
    return Status::Corruption(where + "expected one descriptor with the layout, got " +
                              std::to_string(fds.size()));
  ExportLayout layout;
  st = DecodeLayout(text, &layout);
  if (!st.ok()) return Status::Corruption(where + st.message());
  const int fd = fds[0];
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals)
    return Status::Corruption(where +
                              "the memory handed over is not sealed read-only (F_SEAL_WRITE, GROW, "
                              "SHRINK, SEAL); not mapping it");
  struct stat sb {};
  if (fstat(fd, &sb) != 0 || static_cast<uint64_t>(sb.st_size) != layout.bytes)
    return Status::Corruption(where + "the memory's size is not the layout's");
  // Populated as the server's own mapping: no first-touch fault per 4 KiB
  // page in the first batches (the pages are shared: RSS counts them, PSS
  // splits them among the processes that map them).
  void* p = mmap(nullptr, layout.bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED)
    return Status::ResourceExhausted(where + Errno("mapping the partition read-only"));
  std::shared_ptr<LocalMapping> map(new LocalMapping());
  map->layout_ = std::move(layout);
  map->base_ = static_cast<const char*>(p);
  map->bytes_ = map->layout_.bytes;
  *out = std::move(map);
  return Status::OK();
}

std::string DefaultLocalSocketPath(const std::string& dataset_id, int partition, int rpc_port) {
  std::string dir;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg != '\0')
    dir = std::string(xdg) + "/fanout";
  else if (geteuid() == 0)
    dir = "/run/fanout";
  else
    dir = "/tmp/fanout-" + std::to_string(geteuid());
  mkdir(dir.c_str(), 0755);  // others may reach a socket here only where --local-uids lets them
  std::string id = dataset_id.substr(0, 32);
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return dir + "/" + id + "-p" + std::to_string(partition) + "-" + std::to_string(rpc_port) +
         ".sock";
}

}  // namespace fanout::rpc
