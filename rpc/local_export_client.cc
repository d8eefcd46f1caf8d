// The same-host export's client side: who listens is checked before a byte
// is sent, what comes back is checked before a byte is mapped
// (rpc/local_export.h).
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rpc/detail/local_export_internal.h"
#include "rpc/local_export.h"

namespace fanout::rpc {

using detail::Errno;
using detail::kMaxMessageBytes;
using detail::kSeals;
using detail::LimitText;

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif

LocalMapping::~LocalMapping() {
  if (base_ != nullptr) munmap(const_cast<char*>(base_), bytes_);
  if (feature_fd_ >= 0) close(feature_fd_);
}

void LocalMapping::Populate() const {
  if (base_ == nullptr) return;
  // Faults every page in now; kernels before 5.14 read it ahead instead.
  if (madvise(const_cast<char*>(base_), bytes_, MADV_POPULATE_READ) != 0)
    (void)madvise(const_cast<char*>(base_), bytes_, MADV_WILLNEED);
}

namespace {

// The identity and size the record claims against what the server's
// PartitionInfo said; InvalidArgument naming both where they differ.
Status SameAsExpected(const ExportLayout& l, const ExpectedExport& want) {
  if (l.dataset_id != want.dataset_id || l.partition != want.partition ||
      l.node_begin != want.node_begin || l.node_end != want.node_end ||
      l.export_id != want.export_id)
    return Status::InvalidArgument(
        "it hands out partition " + std::to_string(l.partition) + " of dataset " +
        PrintableText(l.dataset_id, 64) + " (export " + std::to_string(l.export_id) +
        "), not the one this server serves (partition " + std::to_string(want.partition) + " of " +
        want.dataset_id + ", export " + std::to_string(want.export_id) +
        "): another server on the socket path?");
  if (want.bytes > 0 && l.bytes != want.bytes)
    return Status::InvalidArgument("it hands out " + std::to_string(l.bytes) +
                                   " bytes, the server's export has " + std::to_string(want.bytes));
  if (want.bytes == 0 && want.max_bytes > 0 && l.bytes > want.max_bytes)
    return Status::InvalidArgument("it hands out " + std::to_string(l.bytes) +
                                   " bytes, more than this partition's arrays can fill (" +
                                   std::to_string(want.max_bytes) + ")");
  return Status::OK();
}

}  // namespace

Status FetchLocalExport(const std::string& path, const std::string& token, int timeout_ms,
                        const ExpectedExport& expect, std::shared_ptr<LocalMapping>* out) {
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
  // Who listens, before anything is sent: the kernel's word (the listener's
  // credentials when it called listen()), not the peer's.
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
    return Status::Unavailable(where + Errno("reading the listener's uid (SO_PEERCRED)"));
  const uid_t me = geteuid();
  const bool trusted =
      expect.has_server_uid ? peer.uid == expect.server_uid : (peer.uid == me || peer.uid == 0);
  if (!trusted)
    return Status::Unauthenticated(
        where + "held by uid " + std::to_string(peer.uid) + ", not the server's uid " +
        (expect.has_server_uid ? std::to_string(expect.server_uid)
                               : std::to_string(me) + " (this process's) or 0") +
        "; nothing sent to it (another user's process on the socket path?)");
  const std::string hello = EncodeHello(token);
  if (send(s, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) {
    // A server that refuses this uid answers at accept and closes: its
    // refusal may be waiting while the send finds the connection gone.
    const Status why = Status::Unavailable(where + Errno("sending the hello"));
    std::string refusal(kMaxMessageBytes, '\0');
    const ssize_t n = recv(s, refusal.data(), refusal.size(), MSG_DONTWAIT);
    std::string text;
    Status st = n > 0 ? DecodeAnswer(refusal.data(), static_cast<size_t>(n), &text) : why;
    if (st.ok()) st = why;  // a layout without its descriptor is no answer
    return Status::FromCode(static_cast<int>(st.code()), st.message().rfind(where, 0) == 0
                                                             ? st.message()
                                                             : where + st.message());
  }
  std::string buf(kMaxMessageBytes, '\0');
  iovec iov{buf.data(), buf.size()};
  // Room for more descriptors than a valid answer has, so that extra ones
  // are seen (and closed) rather than truncated.
  constexpr size_t kRoom = 16;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kRoom)];
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  if (n < 0 && errno == ECONNRESET) {
    // The reset is reported first, once; a refusal sent before it may wait
    // behind it.
    m.msg_controllen = sizeof(control);
    n = recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) errno = ECONNRESET;
  }
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
  // One descriptor (the memory), or two where the server's features are on
  // disk (the memory, then its feature file): PartitionInfo says which.
  const size_t want = expect.feature_file ? 2 : 1;
  const char* want_text = expect.feature_file ? "two" : "one";
  if (fds.size() > want || ((m.msg_flags & MSG_CTRUNC) && fds.size() >= want))
    return Status::Corruption(where + "the answer carries " +
                              ((m.msg_flags & MSG_CTRUNC) ? "more than " : "") +
                              std::to_string(fds.size()) + " descriptors, not " + want_text);
  if (m.msg_flags & MSG_CTRUNC)
    return Status::ResourceExhausted(
        where + "the server's descriptors did not arrive: " + LimitText() + " is reached");
  if (fds.empty()) return Status::Corruption(where + "the answer carries no descriptor");
  if (fds.size() != want)
    return Status::Corruption(where + "the answer carries " + std::to_string(fds.size()) +
                              " descriptors, not " + want_text);
  ExportLayout layout;
  st = DecodeLayout(text, &layout);
  if (!st.ok()) return Status::Corruption(where + st.message());
  st = SameAsExpected(layout, expect);
  if (!st.ok()) return Status::InvalidArgument(where + st.message());
  if (layout.feature_file != expect.feature_file)
    return Status::InvalidArgument(where + (layout.feature_file
                                                ? "it hands out a feature file the server's "
                                                  "PartitionInfo does not name"
                                                : "it hands out no feature file, the server's "
                                                  "PartitionInfo says its features are on disk"));
  const int fd = fds[0];
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals)
    return Status::Corruption(where +
                              "the memory handed over is not sealed read-only (F_SEAL_WRITE, GROW, "
                              "SHRINK, SEAL); not mapping it");
  struct stat sb {};
  if (fstat(fd, &sb) != 0 || static_cast<uint64_t>(sb.st_size) != layout.bytes)
    return Status::Corruption(where + "the memory's size is not the layout's");
  // Not populated here: the caller checks the contents first, then calls
  // Populate() (a sparse memory's holes cost nothing until read).
  void* p = mmap(nullptr, layout.bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Status::ResourceExhausted(where + Errno("mapping the partition read-only"));
  std::shared_ptr<LocalMapping> map(new LocalMapping());
  map->layout_ = std::move(layout);
  map->base_ = static_cast<const char*>(p);
  map->bytes_ = map->layout_.bytes;
  if (want == 2) {
    map->feature_fd_ = fds[1];
    fds.pop_back();  // kept: the closer leaves it
  }
  *out = std::move(map);
  return Status::OK();
}

}  // namespace fanout::rpc
