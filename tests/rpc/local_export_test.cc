// The same-host export: sealed memory, the socket's checks, and what a local
// peer can and cannot do with it.
#include "rpc/local_export.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

namespace fanout::rpc {
namespace {

std::string TestPath(const char* name) {
  return "/tmp/fanout-export-test-" + std::to_string(getpid()) + "-" + name + ".sock";
}

struct Arrays {
  std::vector<int64_t> indptr{0, 2, 3, 5}, indices{7, 8, 9, 1, 2};
  std::vector<uint8_t> features = std::vector<uint8_t>(3 * 16);
  std::vector<int64_t> labels{4, -1, 2};
  Arrays() { std::iota(features.begin(), features.end(), uint8_t{1}); }
  std::vector<LocalExport::Source> Sources() const {
    return {{ExportArray::kIndptr, indptr.data(), indptr.size()},
            {ExportArray::kIndices, indices.data(), indices.size()},
            {ExportArray::kFeatures, features.data(), features.size()},
            {ExportArray::kLabels, labels.data(), labels.size()},
            {ExportArray::kEdgeIds, nullptr, 0}};
  }
};

std::unique_ptr<LocalExport> MakeExport(const Arrays& a) {
  std::unique_ptr<LocalExport> e;
  Status st = LocalExport::Create("ds-1", 1, 100, 103, a.Sources(), &e);
  EXPECT_TRUE(st.ok()) << st.message();
  return e;
}

// What a client expects of `l` (as a server's PartitionInfo would say).
ExpectedExport Expect(const ExportLayout& l) {
  ExpectedExport x;
  x.dataset_id = l.dataset_id;
  x.partition = l.partition;
  x.node_begin = l.node_begin;
  x.node_end = l.node_end;
  x.export_id = l.export_id;
  x.bytes = l.bytes;
  x.server_uid = geteuid();
  x.has_server_uid = true;
  return x;
}
ExpectedExport Expect(const LocalExport& e) { return Expect(e.layout()); }

// What a client expects of an export a child made of Arrays (dataset `ds`,
// partition 0, nodes [0, 3)) with id `id` (the child writes it to a pipe).
ExpectedExport ExpectChild(const std::string& ds, uint64_t id) {
  Arrays a;
  std::unique_ptr<LocalExport> same;
  EXPECT_TRUE(LocalExport::Create(ds, 0, 0, 3, a.Sources(), &same).ok());
  ExpectedExport x = Expect(*same);
  x.export_id = id;
  return x;
}

// Sends raw bytes as one message and returns the answer's Status.
Status RawHello(const std::string& path, const std::string& bytes) {
  int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(s);
    return Status::Unavailable("connect");
  }
  if (!bytes.empty()) (void)!send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  char buf[70000];
  timeval tv{5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ssize_t n = recv(s, buf, sizeof(buf), 0);
  close(s);
  if (n <= 0) return Status::Unavailable("no answer");
  std::string text;
  return DecodeAnswer(buf, static_cast<size_t>(n), &text);
}

// SysV shared-memory segments on this host (/proc/sysvipc/shm lines).
int SysvSegments() {
  FILE* f = std::fopen("/proc/sysvipc/shm", "r");
  if (f == nullptr) return -1;
  int lines = 0;
  for (int c; (c = std::fgetc(f)) != EOF;) lines += c == '\n';
  std::fclose(f);
  return lines;
}

TEST(LocalExportTest, ClientMapsWhatTheServerExports) {
  Arrays a;
  auto e = MakeExport(a);
  const std::string path = TestPath("maps");
  ASSERT_TRUE(e->Listen(path, {}).ok());
  std::shared_ptr<LocalMapping> m;
  Status st = FetchLocalExport(path, "", 2000, Expect(*e), &m);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m->layout().dataset_id, "ds-1");
  EXPECT_EQ(m->layout().partition, 1);
  EXPECT_EQ(m->layout().node_begin, 100);
  EXPECT_EQ(m->layout().export_id, e->layout().export_id);
  uint64_t n = 0;
  const auto* f = static_cast<const uint8_t*>(m->Data(ExportArray::kFeatures, &n));
  ASSERT_EQ(n, a.features.size());
  EXPECT_EQ(0, std::memcmp(f, a.features.data(), n));
  const auto* l = static_cast<const int64_t*>(m->Data(ExportArray::kLabels, &n));
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(l[0], 4);
  EXPECT_EQ(m->Data(ExportArray::kEdgeIds, &n), nullptr);
  EXPECT_EQ(n, 0u);
  // The server reads the same memory itself (no second copy).
  const auto* sf = static_cast<const uint8_t*>(e->Data(ExportArray::kFeatures, &n));
  EXPECT_EQ(0, std::memcmp(sf, a.features.data(), n));
  EXPECT_EQ(e->Stats().handed, 1);
}

TEST(LocalExportTest, TheSealsHold) {
  Arrays a;
  auto e = MakeExport(a);
  const std::string path = TestPath("seals");
  ASSERT_TRUE(e->Listen(path, {}).ok());
  std::shared_ptr<LocalMapping> m;
  ASSERT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e), &m).ok());
  // The mapping cannot be made writable.
  void* page = const_cast<char*>(m->base());
  errno = 0;
  EXPECT_NE(mprotect(page, 4096, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(errno, EACCES);
  // Nor can the memory be mapped writable again, written through a
  // descriptor, grown or shrunk: fetch a second descriptor the raw way.
  int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string hello = EncodeHello("");
  ASSERT_GT(send(s, hello.data(), hello.size(), 0), 0);
  char buf[65536];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ASSERT_GT(recvmsg(s, &msg, 0), 0);
  close(s);
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  errno = 0;
  EXPECT_LT(pwrite(fd, "x", 1, 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(fd, 1 << 20), 0);
  EXPECT_NE(ftruncate(fd, 0), 0);
  errno = 0;  // F_SEAL_SEAL: the set of seals is final
  EXPECT_LT(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
  EXPECT_EQ(errno, EPERM);
  close(fd);
}

TEST(LocalExportTest, MappingOutlivesTheServer) {
  Arrays a;
  std::shared_ptr<LocalMapping> m;
  const std::string path = TestPath("outlive");
  uint64_t first_id = 0;
  {
    auto e = MakeExport(a);
    ASSERT_TRUE(e->Listen(path, {}).ok());
    ASSERT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e), &m).ok());
    first_id = e->layout().export_id;
  }  // the server's export is gone, its socket file too
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  uint64_t n = 0;
  const auto* l = static_cast<const int64_t*>(m->Data(ExportArray::kLabels, &n));
  EXPECT_EQ(l[2], 2);
  std::shared_ptr<LocalMapping> again;
  EXPECT_EQ(FetchLocalExport(path, "", 500, Expect(m->layout()), &again).code(),
            Status::Code::kNotFound);
  // A restarted server on the same path is a new export.
  auto e2 = MakeExport(a);
  ASSERT_TRUE(e2->Listen(path, {}).ok());
  ASSERT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e2), &again).ok());
  EXPECT_NE(again->layout().export_id, first_id);
}

TEST(LocalExportTest, StaleSocketIsReplacedLiveOneAndNonSocketsAreNot) {
  Arrays a;
  const std::string path = TestPath("stale");
  // A socket file nobody answers on (a server killed with -9).
  int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(s);
  auto e = MakeExport(a);
  Status st = e->Listen(path, {});
  ASSERT_TRUE(st.ok()) << st.message();
  auto e2 = MakeExport(a);
  st = e2->Listen(path, {});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("another server answers"), std::string::npos) << st.message();
  const std::string file = TestPath("plain-file");
  FILE* f = std::fopen(file.c_str(), "w");
  std::fclose(f);
  st = e2->Listen(file, {});
  EXPECT_NE(st.message().find("not a socket"), std::string::npos) << st.message();
  EXPECT_EQ(access(file.c_str(), F_OK), 0);  // left alone
  unlink(file.c_str());
}

TEST(LocalExportTest, UidsNotAllowedAndWrongTokensAreRefusedAndCounted) {
  Arrays a;
  auto e = MakeExport(a);
  const std::string path = TestPath("refuse");
  LocalExportOptions o;
  o.allowed_uids = {geteuid() + 12345};
  o.token = "secret-token";
  ASSERT_TRUE(e->Listen(path, o).ok());
  std::shared_ptr<LocalMapping> m;
  Status st = FetchLocalExport(path, "secret-token", 2000, Expect(*e), &m);
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated);
  EXPECT_NE(st.message().find("--local-uids"), std::string::npos) << st.message();
  EXPECT_EQ(e->Stats().refused_uid, 1);
  e->Stop();
  auto e2 = MakeExport(a);
  o.allowed_uids = {};
  ASSERT_TRUE(e2->Listen(path, o).ok());
  st = FetchLocalExport(path, "", 2000, Expect(*e2), &m);
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated);
  EXPECT_NE(st.message().find("requires its auth token"), std::string::npos) << st.message();
  st = FetchLocalExport(path, "wrong-token!", 2000, Expect(*e2), &m);
  EXPECT_NE(st.message().find("wrong auth token"), std::string::npos) << st.message();
  EXPECT_EQ(e2->Stats().refused_token, 2);
  EXPECT_TRUE(FetchLocalExport(path, "secret-token", 2000, Expect(*e2), &m).ok());
}

// Another uid listed in allowed_uids maps the export (the socket is open to
// it); not listed, it is refused by the socket's mode or by SO_PEERCRED.
TEST(LocalExportTest, AnotherUidMapsOnlyWhereAllowed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another uid";
  const uid_t nobody = 65534;
  for (bool allow : {true, false}) {
    Arrays a;
    auto e = MakeExport(a);
    const std::string path = TestPath(allow ? "uid-allowed" : "uid-not");
    LocalExportOptions o;
    if (allow) o.allowed_uids = {geteuid(), nobody};
    ASSERT_TRUE(e->Listen(path, o).ok());
    const ExpectedExport want = Expect(*e);  // the server's uid: this one's, before setuid
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (setgid(nobody) != 0 || setuid(nobody) != 0) _exit(3);
      std::shared_ptr<LocalMapping> m;
      Status st = FetchLocalExport(path, "", 2000, want, &m);
      if (!st.ok()) std::fprintf(stderr, "child: %s\n", st.message().c_str());
      _exit(st.ok() ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), allow ? 0 : 1) << (allow ? "allowed" : "not allowed");
  }
}

TEST(LocalExportTest, JunkTruncatedAndOversizedHellosAreRefusedNotCrashed) {
  Arrays a;
  auto e = MakeExport(a);
  const std::string path = TestPath("junk");
  ASSERT_TRUE(e->Listen(path, {}).ok());
  std::string good = EncodeHello("");
  for (size_t cut = 1; cut < good.size(); ++cut)
    EXPECT_EQ(RawHello(path, good.substr(0, cut)).code(), Status::Code::kInvalidArgument) << cut;
  EXPECT_EQ(RawHello(path, std::string(100, '\xff')).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(RawHello(path, std::string(60000, 'x')).code(), Status::Code::kInvalidArgument);
  std::string lying = good;
  lying[8] = 100;  // token length says 100 bytes, none follow
  EXPECT_EQ(RawHello(path, lying).code(), Status::Code::kInvalidArgument);
  const auto stats = e->Stats();
  EXPECT_EQ(stats.malformed, static_cast<int64_t>(good.size() - 1 + 3));
  EXPECT_EQ(stats.handed, 0);
  std::shared_ptr<LocalMapping> m;
  EXPECT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e), &m).ok());  // still serving
}

TEST(LocalExportTest, SilentAndFloodingPeersDoNotStopOthers) {
  Arrays a;
  auto e = MakeExport(a);
  const std::string path = TestPath("flood");
  LocalExportOptions o;
  o.handshake_timeout_ms = 300;
  o.max_pending = 64;
  ASSERT_TRUE(e->Listen(path, o).ok());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  // A thousand connections that never say anything and never read.
  std::vector<int> silent;
  for (int i = 0; i < 1000; ++i) {
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    if (s < 0) break;
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(s);
      continue;
    }
    silent.push_back(s);
  }
  // Others are refused (busy) or served at once, and served once the silent
  // ones time out.
  std::shared_ptr<LocalMapping> m;
  Status st;
  for (int i = 0; i < 50; ++i) {
    st = FetchLocalExport(path, "", 2000, Expect(*e), &m);
    if (st.ok()) break;
    EXPECT_TRUE(st.code() == Status::Code::kResourceExhausted ||
                st.code() == Status::Code::kUnavailable)
        << st.message();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(st.ok()) << st.message();
  const auto stats = e->Stats();
  EXPECT_GT(stats.timed_out + stats.overloaded, 0);
  for (int s : silent) close(s);
  // Asked again and again: each ask is one answer, nothing held.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e), &m).ok());
}

TEST(LocalExportTest, DescriptorExhaustionIsANamedError) {
  Arrays a;
  auto e = MakeExport(a);
  const std::string path = TestPath("fds");
  ASSERT_TRUE(e->Listen(path, {}).ok());
  // In a child (the limit is per process): fill the table up to a low limit.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit r{64, 64};
    setrlimit(RLIMIT_NOFILE, &r);
    std::vector<int> fds;
    for (;;) {
      int fd = open("/dev/null", O_RDONLY);
      if (fd < 0) break;
      fds.push_back(fd);
    }
    close(fds.back());  // room for the socket, none for the descriptor
    std::shared_ptr<LocalMapping> m;
    Status st = FetchLocalExport(path, "", 2000, Expect(*e), &m);
    const bool named = st.code() == Status::Code::kResourceExhausted &&
                       st.message().find("RLIMIT_NOFILE") != std::string::npos;
    if (!named) std::fprintf(stderr, "child: %s\n", st.message().c_str());
    _exit(named ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::shared_ptr<LocalMapping> m;
  EXPECT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e), &m).ok());
}

TEST(LocalExportTest, AServerAtItsDescriptorLimitCountsItAndRecovers) {
  // The exporting side in a child whose descriptor table is nearly full:
  // accept() fails with EMFILE; the server counts it, names the limit, does
  // not spin, and serves again once descriptors are free.
  const std::string path = TestPath("server-fds");
  int ready[2], go[2], report[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(report), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Arrays a;
    std::unique_ptr<LocalExport> e;
    if (!LocalExport::Create("ds-fds", 0, 0, 3, a.Sources(), &e).ok() || !e->Listen(path, {}).ok())
      _exit(1);
    const uint64_t id = e->layout().export_id;
    (void)!write(report[1], &id, sizeof id);
    rlimit r{};
    getrlimit(RLIMIT_NOFILE, &r);
    std::vector<int> fill;
    for (;;) {
      int fd = open("/dev/null", O_RDONLY);
      if (fd < 0) break;
      fill.push_back(fd);
    }
    (void)!write(ready[1], "r", 1);
    char c;
    (void)!read(go[0], &c, 1);  // the parent tried to connect meanwhile
    const LocalExportStats full = e->Stats();
    for (int fd : fill) close(fd);
    (void)!write(report[1], &full.accept_errors, sizeof full.accept_errors);
    const bool named = full.last_refusal.find("RLIMIT_NOFILE") != std::string::npos;
    (void)!write(report[1], &named, sizeof named);
    (void)!read(go[0], &c, 1);  // the parent connected again
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  uint64_t id = 0;
  ASSERT_EQ(read(report[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  const ExpectedExport want = ExpectChild("ds-fds", id);
  std::shared_ptr<LocalMapping> m;
  Status st = FetchLocalExport(path, "", 500, want, &m);
  EXPECT_FALSE(st.ok());  // the server could not take the connection
  ASSERT_EQ(write(go[1], "g", 1), 1);
  int64_t errors = 0;
  bool named = false;
  ASSERT_EQ(read(report[0], &errors, sizeof errors), static_cast<ssize_t>(sizeof errors));
  ASSERT_EQ(read(report[0], &named, sizeof named), static_cast<ssize_t>(sizeof named));
  EXPECT_GT(errors, 0);
  EXPECT_LT(errors, 100);  // paused between tries, not a busy loop
  EXPECT_TRUE(named);
  // Descriptors free again: served.
  for (int i = 0; i < 20 && !(st = FetchLocalExport(path, "", 2000, want, &m)).ok(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(write(go[1], "g", 1), 1);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int fd : {ready[0], ready[1], go[0], go[1], report[0], report[1]}) close(fd);
}

TEST(LocalExportTest, LayoutDecoderRefusesWhatDoesNotHold) {
  ExportLayout l;
  l.dataset_id = "d";
  l.bytes = 8192;
  l.arrays = {{ExportArray::kIndptr, 0, 10}, {ExportArray::kFeatures, 4096, 4096}};
  ExportLayout out;
  ASSERT_TRUE(DecodeLayout(EncodeLayout(l), &out).ok());
  EXPECT_EQ(out.arrays.size(), 2u);
  const std::string good = EncodeLayout(l);
  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_FALSE(DecodeLayout(good.substr(0, cut), &out).ok()) << cut;
  EXPECT_FALSE(DecodeLayout(good + "x", &out).ok());
  l.arrays[1].count = 4097;  // one past the end
  EXPECT_NE(DecodeLayout(EncodeLayout(l), &out).message().find("outside"), std::string::npos);
  l.arrays[1] = {ExportArray::kIndices, 8, ~uint64_t{0} / 4};  // count x 8 overflows
  EXPECT_FALSE(DecodeLayout(EncodeLayout(l), &out).ok());
  l.arrays[1] = {ExportArray::kIndices, 4, 1};  // misaligned
  EXPECT_FALSE(DecodeLayout(EncodeLayout(l), &out).ok());
  l.arrays[1] = {ExportArray::kIndptr, 0, 1};  // twice
  EXPECT_FALSE(DecodeLayout(EncodeLayout(l), &out).ok());
  l.arrays[1] = {static_cast<ExportArray>(77), 0, 1};
  EXPECT_FALSE(DecodeLayout(EncodeLayout(l), &out).ok());
}

TEST(LocalExportTest, NothingIsLeftBehindAfterKill9) {
  // A child exports and is killed while a client holds a mapping; then the
  // mapping goes too. memfd memory is no file in /dev/shm and no SysV segment.
  const std::string path = TestPath("kill");
  const int segments_before = SysvSegments();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Arrays a;
    std::unique_ptr<LocalExport> e;
    if (!LocalExport::Create("ds-kill", 0, 0, 3, a.Sources(), &e).ok() || !e->Listen(path, {}).ok())
      _exit(1);
    const uint64_t id = e->layout().export_id;
    (void)!write(ready[1], &id, sizeof id);
    for (;;) pause();
  }
  uint64_t id = 0;
  ASSERT_EQ(read(ready[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  std::shared_ptr<LocalMapping> m;
  ASSERT_TRUE(FetchLocalExport(path, "", 2000, ExpectChild("ds-kill", id), &m).ok());
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  uint64_t n = 0;
  EXPECT_EQ(static_cast<const int64_t*>(m->Data(ExportArray::kLabels, &n))[0], 4);
  m.reset();
  // The killed server's socket file stays (nobody removed it) but is stale:
  // the next server on the path takes it over (StaleSocket test). No shared
  // memory object of ours exists anywhere: no /dev/shm file, no SysV segment.
  FILE* p = popen("ls /dev/shm 2>/dev/null | grep -c fanout-ds-kill", "r");
  int count = -1;
  ASSERT_EQ(std::fscanf(p, "%d", &count), 1);
  pclose(p);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(SysvSegments(), segments_before);
  unlink(path.c_str());
  // A client killed while it holds a mapping: nothing of it stays either,
  // and the server goes on handing out its export.
  Arrays a;
  std::unique_ptr<LocalExport> e = MakeExport(a);
  ASSERT_TRUE(e->Listen(path, {}).ok());
  pid_t client = fork();
  ASSERT_GE(client, 0);
  if (client == 0) {
    std::shared_ptr<LocalMapping> mine;
    if (!FetchLocalExport(path, "", 2000, Expect(*e), &mine).ok()) _exit(1);
    (void)!write(ready[1], "m", 1);
    for (;;) pause();
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  kill(client, SIGKILL);
  waitpid(client, nullptr, 0);
  EXPECT_EQ(SysvSegments(), segments_before);
  ASSERT_TRUE(FetchLocalExport(path, "", 2000, Expect(*e), &m).ok());
  EXPECT_EQ(e->Stats().handed, 2);
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace fanout::rpc

namespace fanout::rpc {
namespace {

// A rogue export server: binds `path` and answers each connection with
// `answer` (its bytes, and the descriptors in `fds`), after reading whatever
// the client sends into `heard`. Silent: reads and never answers.
class RogueExport {
 public:
  RogueExport(const std::string& path, std::string answer, std::vector<int> fds, bool silent)
      : path_(path), answer_(std::move(answer)), fds_(std::move(fds)), silent_(silent) {
    unlink(path.c_str());
    listen_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    EXPECT_EQ(bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_, 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RogueExport() {
    shutdown(listen_, SHUT_RDWR);
    thread_.join();
    close(listen_);
    for (int fd : fds_) close(fd);
    unlink(path_.c_str());
  }
  std::string heard() {
    std::lock_guard<std::mutex> l(mu_);
    return heard_;
  }

 private:
  void Serve() {
    for (;;) {
      int c = accept(listen_, nullptr, nullptr);
      if (c < 0) return;
      char buf[8192];
      ssize_t n = recv(c, buf, sizeof(buf), 0);
      if (n > 0) {
        std::lock_guard<std::mutex> l(mu_);
        heard_.append(buf, static_cast<size_t>(n));
      }
      if (silent_) {
        // Holds the connection, says nothing, until the client gives up.
        char more;
        (void)!recv(c, &more, 1, 0);
        close(c);
        continue;
      }
      iovec iov{answer_.data(), answer_.size()};
      std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<size_t>(fds_.size(), 1)));
      msghdr m{};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      if (!fds_.empty()) {
        m.msg_control = control.data();
        m.msg_controllen = CMSG_SPACE(sizeof(int) * fds_.size());
        cmsghdr* h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int) * fds_.size());
        std::memcpy(CMSG_DATA(h), fds_.data(), sizeof(int) * fds_.size());
      }
      (void)!sendmsg(c, &m, MSG_NOSIGNAL);
      (void)!recv(c, buf, sizeof(buf), 0);  // until the client closes
      close(c);
    }
  }
  std::string path_, answer_;
  std::vector<int> fds_;
  bool silent_;
  int listen_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::string heard_;
};

// A memfd of `bytes` (sparse), sealed read-only unless `seal` is false.
int Memfd(uint64_t bytes, bool seal = true) {
  int fd = memfd_create("rogue", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (seal)
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), 0);
  return fd;
}

ExportLayout RogueLayout(uint64_t bytes) {
  ExportLayout l;
  l.dataset_id = "ds-rogue";
  l.partition = 0;
  l.node_begin = 0;
  l.node_end = 3;
  l.export_id = 77;
  l.bytes = bytes;
  l.arrays = {{ExportArray::kIndptr, 0, 4}};
  return l;
}

ExpectedExport RogueExpect(uint64_t bytes) {
  ExpectedExport x = Expect(RogueLayout(bytes));
  return x;
}

int64_t PeakRssKb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  int64_t kb = -1;
  while (f != nullptr && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  if (f) std::fclose(f);
  return kb;
}

struct RogueCase {
  const char* what;
  std::string answer;
  std::vector<int> fds;
  bool silent = false;
  Status::Code code;
  const char* says;
};

TEST(RogueExportTest, EveryHostileAnswerIsAClearErrorInBoundedTime) {
  const uint64_t page = 4096;
  std::vector<RogueCase> cases;
  cases.push_back({"unsealed memory",
                   EncodeAnswer(0, EncodeLayout(RogueLayout(page))),
                   {Memfd(page, false)},
                   false,
                   Status::Code::kCorruption,
                   "not sealed"});
  cases.push_back({"memory of another size than the layout's",
                   EncodeAnswer(0, EncodeLayout(RogueLayout(page))),
                   {Memfd(2 * page)},
                   false,
                   Status::Code::kCorruption,
                   "size is not the layout's"});
  // A sealed sparse memfd of 1 GiB claimed as the export: refused by size
  // before any mapping (PartitionInfo said one page).
  ExportLayout huge = RogueLayout(uint64_t{1} << 30);
  huge.arrays = {{ExportArray::kIndptr, 0, 4},
                 {ExportArray::kFeatures, (uint64_t{1} << 30) - page, page}};
  cases.push_back({"a huge sparse memory",
                   EncodeAnswer(0, EncodeLayout(huge)),
                   {Memfd(uint64_t{1} << 30)},
                   false,
                   Status::Code::kInvalidArgument,
                   "bytes, the server's export has"});
  ExportLayout past = RogueLayout(page);
  past.arrays = {{ExportArray::kIndptr, page, 4}};
  cases.push_back({"an array past the end",
                   EncodeAnswer(0, EncodeLayout(past)),
                   {Memfd(page)},
                   false,
                   Status::Code::kCorruption,
                   "outside the memory"});
  ExportLayout overlap = RogueLayout(page);
  overlap.arrays = {{ExportArray::kIndptr, 0, 4}, {ExportArray::kIndices, 16, 4}};
  cases.push_back({"overlapping arrays",
                   EncodeAnswer(0, EncodeLayout(overlap)),
                   {Memfd(page)},
                   false,
                   Status::Code::kCorruption,
                   "overlap"});
  ExportLayout other = RogueLayout(page);
  other.export_id = 78;
  cases.push_back({"another export",
                   EncodeAnswer(0, EncodeLayout(other)),
                   {Memfd(page)},
                   false,
                   Status::Code::kInvalidArgument,
                   "not the one this server serves"});
  cases.push_back({"garbage",
                   std::string(300, '\x5a'),
                   {},
                   false,
                   Status::Code::kCorruption,
                   "malformed answer"});
  cases.push_back({"silence", "", {}, true, Status::Code::kDeadlineExceeded, "no answer within"});
  cases.push_back({"a refusal with terminal escapes and a forged log line",
                   EncodeAnswer(static_cast<int>(Status::Code::kUnauthenticated),
                                "\x1b[2J\nfanout: all is well" + std::string(5000, 'x')),
                   {},
                   false,
                   Status::Code::kUnauthenticated,
                   "\\x1b[2J\\x0afanout"});
  cases.push_back({"a refusal saying NotFound",
                   EncodeAnswer(static_cast<int>(Status::Code::kNotFound), "nothing here"),
                   {},
                   false,
                   Status::Code::kUnavailable,
                   "nothing here"});
  std::vector<int> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(Memfd(page));
  cases.push_back({"eight descriptors", EncodeAnswer(0, EncodeLayout(RogueLayout(page))), eight,
                   false, Status::Code::kCorruption, "8 descriptors, not one"});
  cases.push_back({"no descriptor",
                   EncodeAnswer(0, EncodeLayout(RogueLayout(page))),
                   {},
                   false,
                   Status::Code::kCorruption,
                   "no descriptor"});
  const int64_t rss_before = PeakRssKb();
  for (RogueCase& c : cases) {
    const std::string path = TestPath("rogue");
    RogueExport rogue(path, c.answer, c.fds, c.silent);
    std::shared_ptr<LocalMapping> m;
    const auto start = std::chrono::steady_clock::now();
    Status st = FetchLocalExport(path, "tok", 300, RogueExpect(page), &m);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(st.code(), c.code) << c.what << ": " << st.ToString();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << c.what << ": " << st.message();
    EXPECT_EQ(m, nullptr) << c.what;
    EXPECT_LT(secs, 5.0) << c.what;
    // Printable, capped: no control byte of the peer's reaches a log line.
    for (char ch : st.message()) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << c.what;
    EXPECT_LT(st.message().size(), 1024u) << c.what;
    c.fds.clear();  // closed by the rogue
  }
  // Nothing was populated for any of them (the 1 GiB claim included).
  EXPECT_LT(PeakRssKb() - rss_before, 64 * 1024);
}

// A listener of another uid on the socket path (a local user who took the
// folder) gets nothing: the uid is checked before the hello (and its token).
TEST(RogueExportTest, AListenerOfAnotherUidGetsNoToken) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a listener as another uid";
  const uid_t nobody = 65534;
  const std::string path = TestPath("other-uid");  // in /tmp: sticky, anyone may bind there
  unlink(path.c_str());
  int ready[2], heard[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(heard), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setgid(nobody) != 0 || setuid(nobody) != 0) _exit(3);
    int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(l, 4) != 0)
      _exit(4);
    chmod(path.c_str(), 0777);
    (void)!write(ready[1], "r", 1);
    int c = accept(l, nullptr, nullptr);
    char buf[8192];
    timeval tv{2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    const ssize_t n = recv(c, buf, sizeof(buf), 0);
    const int64_t got = n > 0 ? n : 0;
    (void)!write(heard[1], &got, sizeof got);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ExpectedExport want = RogueExpect(4096);
  want.server_uid = geteuid();  // the real server's uid, as its PartitionInfo says
  std::shared_ptr<LocalMapping> m;
  Status st = FetchLocalExport(path, "the-secret-token", 2000, want, &m);
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated) << st.ToString();
  EXPECT_NE(st.message().find("held by uid 65534"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not the server's uid 0"), std::string::npos) << st.message();
  int64_t got = -1;
  ASSERT_EQ(read(heard[0], &got, sizeof got), static_cast<ssize_t>(sizeof got));
  EXPECT_EQ(got, 0) << "the listener of another uid read bytes from the client";
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  unlink(path.c_str());
  for (int fd : {ready[0], ready[1], heard[0], heard[1]}) close(fd);
}

TEST(LocalSocketDirTest, ADefaultFolderIsThisUidsAloneAndOthersAreRefused) {
  const std::string base = "/tmp/fanout-dir-test-" + std::to_string(getpid());
  // Made fresh: 0700, ours.
  const std::string fresh = base + "-fresh";
  rmdir(fresh.c_str());
  ASSERT_TRUE(PrepareLocalSocketDir(fresh, false).ok());
  struct stat st {};
  ASSERT_EQ(lstat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  // With other uids allowed: search only (0711).
  const std::string searchable = base + "-open";
  rmdir(searchable.c_str());
  ASSERT_TRUE(PrepareLocalSocketDir(searchable, true).ok());
  ASSERT_EQ(lstat(searchable.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u);
  // Ours but too open (an older server's 0755): narrowed.
  const std::string wide = base + "-wide";
  rmdir(wide.c_str());
  ASSERT_EQ(mkdir(wide.c_str(), 0700), 0);
  ASSERT_EQ(chmod(wide.c_str(), 0777), 0);
  ASSERT_TRUE(PrepareLocalSocketDir(wide, false).ok());
  ASSERT_EQ(lstat(wide.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // A symbolic link in its place: refused.
  const std::string link = base + "-link";
  unlink(link.c_str());
  ASSERT_EQ(symlink(fresh.c_str(), link.c_str()), 0);
  Status s = PrepareLocalSocketDir(link, false);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  unlink(link.c_str());
  // A socket path in a folder another uid may write: refused.
  s = CheckSocketFolder(wide + "-not-a-folder/x.sock");
  EXPECT_FALSE(s.ok());
  if (geteuid() == 0) {
    const uid_t nobody = 65534;
    // Another uid made the folder first, open to all (0777): refused, saying whose it is.
    const std::string taken = base + "-taken";
    rmdir(taken.c_str());
    ASSERT_EQ(mkdir(taken.c_str(), 0777), 0);
    ASSERT_EQ(chmod(taken.c_str(), 0777), 0);
    ASSERT_EQ(chown(taken.c_str(), nobody, nobody), 0);
    s = PrepareLocalSocketDir(taken, false);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.message().find("belongs to uid 65534"), std::string::npos) << s.message();
    s = CheckSocketFolder(taken + "/x.sock");
    EXPECT_NE(s.message().find("belongs to uid 65534"), std::string::npos) << s.message();
    // And a server's Listen there is refused too.
    Arrays a;
    auto e = MakeExport(a);
    s = e->Listen(taken + "/x.sock", {});
    EXPECT_FALSE(s.ok());
    rmdir(taken.c_str());
    // In the folder the server made, no other uid can place anything.
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (setgid(nobody) != 0 || setuid(nobody) != 0) _exit(3);
      const std::string f = fresh + "/planted.sock";
      int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strcpy(addr.sun_path, f.c_str());
      const bool bound = bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      const bool made = open(f.c_str(), O_CREAT | O_WRONLY, 0600) >= 0;
      _exit(bound || made ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "another uid placed a file";
  }
  rmdir(fresh.c_str());
  rmdir(searchable.c_str());
  rmdir(wide.c_str());
}

}  // namespace
}  // namespace fanout::rpc
