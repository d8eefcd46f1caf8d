// The RPC server's connection guard: the connection limit (idle ones make
// room, busy ones refuse with the reason), idle and slow-client timeouts, and
// the in-flight request memory budget.
#include <arpa/inet.h>
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "common/cpu.h"
#include "tests/server/server_fixture.h"

namespace fanout::server {
namespace {

using ::testing::HasSubstr;
using testing::ServerTest;
using Clock = std::chrono::steady_clock;

int ThreadCount() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

int Dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// The first bytes of a frame that promises `size` bytes.
std::string FrameStart(uint32_t size, size_t body_bytes) {
  uint32_t be = htonl(size);
  return std::string(reinterpret_cast<const char*>(&be), 4) + std::string(body_bytes, 'x');
}

// Seconds until the server closes `fd` (reads 0 or a reset); -1 if it is
// still open after `limit_s`.
double SecondsUntilClosed(int fd, double limit_s) {
  auto t0 = Clock::now();
  timeval tv{0, 50000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[256];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return s;
    if (s > limit_s) return -1;
  }
}

template <typename Pred>
bool WaitFor(Pred pred, double seconds) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

class ConnectionLimitsTest : public ServerTest {
 protected:
  void ExpectPing() {
    auto client = Connect(0);
    std::string pong;
    Status st = client->Ping("hello", &pong);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(pong, "hello");
  }
  const PartitionServer& server() { return *servers_[0]; }
  ~ConnectionLimitsTest() override {
    for (int fd : fds_) close(fd);
  }
  std::vector<int> fds_;
};

TEST_F(ConnectionLimitsTest, FiveThousandIdleConnectionsKeepThreadsBoundedAndANormalClientServed) {
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  getrlimit(RLIMIT_NOFILE, &files);
  const int n =
      static_cast<int>(std::min<rlim_t>(5000, files.rlim_cur > 200 ? files.rlim_cur - 200 : 0));
  ASSERT_GE(n, 500) << "the open-file limit allows too few sockets for this test";
  ServerOptions o;
  o.limits.max_connections = 32;
  StartServers(1, o);
  const int threads_before = ThreadCount();
  for (int i = 0; i < n; ++i) {
    int fd = Dial(server().port());
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    fds_.push_back(fd);
    // In bursts the server can keep up with on a loaded machine (a handshake
    // dropped from a full accept queue waits for a retransmission).
    if (i % 500 == 499) {
      ASSERT_TRUE(WaitFor([&] { return server().connection_stats().accepted >= i + 1 - 200; }, 60))
          << server().connection_stats().accepted << " of " << i + 1;
    }
  }
  ASSERT_TRUE(WaitFor([&] { return server().connection_stats().accepted >= n; }, 120))
      << server().connection_stats().accepted;
  // Evicted connections' threads end; at most the limit remain (and a few in passing).
  EXPECT_TRUE(WaitFor([&] { return ThreadCount() <= threads_before + 32 + 4; }, 20))
      << ThreadCount() << " threads, " << threads_before << " before";
  rpc::ConnectionStats s = server().connection_stats();
  EXPECT_LE(s.open, 32);
  EXPECT_LE(s.peak_open, 32);
  EXPECT_GE(s.evicted_idle, n - 32);
  EXPECT_EQ(s.refused, 0);
  ExpectPing();
  // The oldest sockets were closed by the server.
  EXPECT_GE(SecondsUntilClosed(fds_.front(), 5), 0);
}

TEST_F(ConnectionLimitsTest, RefusedWithTheReasonWhenEveryConnectionIsBusy) {
  ServerOptions o;
  o.limits.max_connections = 2;
  StartServers(1, o);
  // Two connections inside a request (a frame begun, not finished).
  for (int i = 0; i < 2; ++i) {
    int fd = Dial(server().port());
    ASSERT_GE(fd, 0);
    SendAll(fd, FrameStart(1000, 10));  // over kMaxControlFrameBytes: it takes budget
    fds_.push_back(fd);
  }
  // Both accepted, and both frames begun on the server (their declared bytes
  // held): until then a connection counts as idle and would make room.
  ASSERT_TRUE(WaitFor(
      [&] {
        const rpc::ConnectionStats s = server().connection_stats();
        return s.accepted == 2 && s.inflight_bytes >= 2 * 1000;
      },
      10 * server::testing::TestTimeScale()))
      << server().connection_stats().inflight_bytes;
  std::unique_ptr<rpc::RpcClient> client;
  ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", server().port(), {}, &client).ok());
  std::string pong;
  Status st = client->Ping("hello", &pong);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("connection limit (--max-connections 2"));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(server().port())));
  EXPECT_EQ(server().connection_stats().refused, 1);
  // A busy connection ends: there is room again (the client reconnects).
  close(fds_.back());
  fds_.pop_back();
  ASSERT_TRUE(WaitFor([&] { return server().connection_stats().open < 2; }, 10));
  st = client->Ping("again", &pong);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(pong, "again");
  EXPECT_THAT(server().StatsJson(), HasSubstr("\"refused\": 1"));
}

TEST_F(ConnectionLimitsTest, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  ServerOptions o;
  o.limits.idle_timeout_ms = 300;
  StartServers(1, o);
  int fd = Dial(server().port());
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  double s = SecondsUntilClosed(fd, 10);
  EXPECT_GE(s, 0.25);
  EXPECT_LT(s, 10);
  EXPECT_EQ(server().connection_stats().idle_timeouts, 1);
  // Requests keep a connection open past the timeout, as long as it is never idle that long.
  auto client = Connect(0);
  std::string pong;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(client->Ping("x", &pong).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(server().connection_stats().idle_timeouts, 1);
}

TEST_F(ConnectionLimitsTest, ASlowClientLosesItsConnectionAtTheFrameTimeout) {
  ServerOptions o;
  o.limits.frame_timeout_ms = 400;
  StartServers(1, o);
  // Half a frame, then nothing.
  int stalled = Dial(server().port());
  ASSERT_GE(stalled, 0);
  fds_.push_back(stalled);
  SendAll(stalled, FrameStart(1000, 100));
  double s = SecondsUntilClosed(stalled, 10);
  EXPECT_GE(s, 0.3);
  EXPECT_LT(s, 10);
  // A byte every 50 ms: always progressing, never finishing.
  int drip = Dial(server().port());
  ASSERT_GE(drip, 0);
  fds_.push_back(drip);
  SendAll(drip, FrameStart(1000, 0));
  auto t0 = Clock::now();
  bool closed = false;
  for (int i = 0; i < 200 && !closed; ++i) {
    closed = send(drip, "x", 1, MSG_NOSIGNAL) != 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 9);
  EXPECT_EQ(server().connection_stats().frame_timeouts, 2);
  ExpectPing();
}

// Health checks must not queue behind bulk requests (one late ping used to
// call a busy replica down): control frames bypass the budget, request
// frames that do not fit wait for it.
TEST_F(ConnectionLimitsTest, PingsAreAnsweredWhileTheBudgetIsFullAndRequestsWait) {
  ServerOptions o;
  o.limits.max_inflight_bytes = 2000;
  StartServers(1, o);
  // Holds 1990 of the 2000 bytes: its frame has begun.
  int holder = Dial(server().port());
  ASSERT_GE(holder, 0);
  fds_.push_back(holder);
  SendAll(holder, FrameStart(1990, 10));
  ASSERT_TRUE(WaitFor([&] { return server().connection_stats().inflight_bytes == 1990; }, 10));
  // A ping is answered at once, the budget still full.
  auto client = Connect(0);
  std::string pong;
  Status st = client->Ping("while full", &pong);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(pong, "while full");
  EXPECT_EQ(server().connection_stats().memory_waits, 0);
  EXPECT_EQ(server().connection_stats().inflight_bytes, 1990);
  // A request frame that does not fit waits for the budget.
  int waiter = Dial(server().port());
  ASSERT_GE(waiter, 0);
  fds_.push_back(waiter);
  SendAll(waiter, FrameStart(1000, 10));
  ASSERT_TRUE(WaitFor([&] { return server().connection_stats().memory_waits == 1; }, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(server().connection_stats().inflight_bytes, 1990);
  // The holder leaves: its budget comes back and the waiting frame takes it.
  close(holder);
  fds_.erase(fds_.begin());
  EXPECT_TRUE(WaitFor([&] { return server().connection_stats().inflight_bytes == 1000; }, 10));
  close(waiter);
  fds_.clear();
  EXPECT_TRUE(WaitFor([&] { return server().connection_stats().inflight_bytes == 0; }, 10));
  EXPECT_EQ(server().connection_stats().memory_refused, 0);
}

}  // namespace
}  // namespace fanout::server

namespace fanout::server {
namespace {

// A small frame that declares a huge string (the method name, or a binary
// argument): refused before any allocation. Thrift's stock binary protocol
// allocated and zeroed the declared size first (up to 2 GiB per field: found
// by fuzzing, fuzz/corpus/fuzz_rpc_request/regress-huge-declared-string).
TEST_F(ConnectionLimitsTest, AFieldLongerThanItsFrameIsRefusedWithoutAllocatingIt) {
  StartServers(1);
  const int64_t peak_before =
      PeakResidentSetBytes();  // the allocation would be freed at once: watch the peak
  auto be32 = [](uint32_t v) {
    v = htonl(v);
    return std::string(reinterpret_cast<const char*>(&v), 4);
  };
  // A versioned call whose name claims 2 GiB - 1 bytes.
  const std::string name_bomb = be32(0x80010001) + be32(0x7fffffff) + "lookup";
  // An unversioned message (its first word a name length): refused outright.
  const std::string old_form = be32(0x7ffffff0) + "lookup_features";
  // A well-formed call whose binary argument claims 1.5 GiB.
  const std::string arg_bomb = be32(0x80010001) + be32(15) + "lookup_features" + be32(1) +
                               std::string("\x0b\x00\x01", 3) + be32(0x60000000) + "12345678";
  for (const std::string& body : {name_bomb, old_form, arg_bomb}) {
    int fd = Dial(server().port());
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
    SendAll(fd, be32(static_cast<uint32_t>(body.size())) + body);
    EXPECT_GE(SecondsUntilClosed(fd, 10), 0);
  }
  EXPECT_LT(PeakResidentSetBytes() - peak_before, int64_t{256} << 20);
  ExpectPing();
}

}  // namespace
}  // namespace fanout::server

namespace fanout::server {
namespace {

// A valid request whose feature reply would be over --max-reply-mib is
// refused before anything is gathered (Cora rows are 5.7 KB: 4 Mi ids asked
// for 24 GB), over Thrift and over the data plane alike.
TEST_F(ConnectionLimitsTest, AFeatureReplyOverTheLimitIsRefusedNamingIt) {
  ServerOptions o;
  o.max_reply_bytes = 1 << 20;  // 1 MiB: 182 Cora rows
  StartServers(1, o);
  auto client = Connect(0);
  std::vector<int64_t> few(100, 7), many(1000, 7);
  std::string rows;
  ASSERT_TRUE(client->Features(few, &rows).ok());
  EXPECT_EQ(rows.size(), 100u * 1433 * 4);
  Status st = client->Features(many, &rows);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("--max-reply-mib"));
  EXPECT_THAT(st.message(), HasSubstr("1000 rows"));
  ASSERT_TRUE(client->Features(few, &rows).ok());  // the connection stays usable
  // Sampling: the bound is the most edges the request could draw.
  std::vector<int64_t> hubs(20000, 1358);  // Cora's highest in-degree node, 20,000 times
  rpc::SampleCall call;
  call.fanout = -1;
  rpc::SampleReply reply;
  st = client->Sample(hubs, call, &reply);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("--max-reply-mib"));
  call.fanout = 5;
  EXPECT_TRUE(client->Sample(few, call, &reply).ok());
}

}  // namespace
}  // namespace fanout::server

namespace fanout::server {
namespace {

// A tenants server: anonymous sockets share a small pool (here 8 of 64), so
// a flood of them replaces only each other, and a tenant's idle connection
// stays open and served; /stats counts each owner's connections.
TEST_F(ConnectionLimitsTest, AnAnonymousFloodCostsThePoolNotATenantsConnection) {
  datasets::testing::TempDir tmp_dir;
  const std::string token = "token-of-the-tenant-alice-01";
  ServerOptions o;
  o.limits.max_connections = 64;
  o.admin_token = "admin-token-for-the-stats-page";
  o.tenants_file = tmp_dir.Write("pool-tenants.conf", "tenant alice token=" + token +
                                                          "\ntenant bob token=" + token + "-bob\n");
  StartServers(1, o);
  rpc::RpcOptions ro;
  ro.auth_token = token;
  auto alice = Connect(0, ro);
  std::string pong;
  ASSERT_TRUE(alice->Ping("before", &pong).ok());
  ASSERT_TRUE(WaitFor([&] { return server().connection_stats().by_owner.count("alice") == 1; }, 10))
      << server().StatsJson();
  for (int i = 0; i < 200; ++i) {
    int fd = Dial(server().port());
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
  }
  ASSERT_TRUE(WaitFor([&] { return server().connection_stats().accepted >= 201; }, 60));
  const rpc::ConnectionStats s = server().connection_stats();
  EXPECT_LE(s.unauthenticated, 8);
  EXPECT_GE(s.pool_evicted, 192);
  EXPECT_EQ(s.evicted_idle, 0);  // no bound connection made room for the flood
  EXPECT_EQ(s.by_owner.at("alice"), 1);
  // Alice's same connection still serves (a reconnect would count as accepted).
  const int64_t accepted = s.accepted;
  ASSERT_TRUE(alice->Ping("after", &pong).ok());
  EXPECT_EQ(pong, "after");
  EXPECT_EQ(server().connection_stats().accepted, accepted);
  const std::string stats = server().StatsJson();
  EXPECT_THAT(stats, HasSubstr("\"unauthenticated_pool\": 8"));
  EXPECT_THAT(stats, HasSubstr("\"alice\": 1"));
}

// A tenant at its connection slots (its weight's share of --max-connections,
// here 8 of 16 for two equal tenants and default) replaces its own idle
// connections, never another tenant's.
TEST_F(ConnectionLimitsTest, ATenantWithManyConnectionsReplacesOnlyItsOwn) {
  datasets::testing::TempDir tmp_dir;
  const std::string greedy = "token-of-the-greedy-one-01", calm = "token-of-the-calm-one-001";
  ServerOptions o;
  o.limits.max_connections = 16;
  o.tenants_file = tmp_dir.Write(
      "slots-tenants.conf", "tenant greedy token=" + greedy + "\ntenant calm token=" + calm + "\n");
  StartServers(1, o);
  rpc::RpcOptions ro;
  ro.auth_token = calm;
  auto c = Connect(0, ro);
  std::string pong;
  ASSERT_TRUE(c->Ping("calm", &pong).ok());
  ro.auth_token = greedy;
  std::vector<std::unique_ptr<rpc::RpcClient>> many;
  for (int i = 0; i < 20; ++i) {
    many.push_back(Connect(0, ro));
    ASSERT_TRUE(many.back()->Ping("greedy", &pong).ok());
  }
  const rpc::ConnectionStats s = server().connection_stats();
  EXPECT_EQ(s.by_owner.at("calm"), 1);
  EXPECT_EQ(s.by_owner.at("greedy"), 8);  // 16 x 1/3 = 5, at least 8
  EXPECT_EQ(s.owner_evicted, 12);
  EXPECT_EQ(s.evicted_idle, 0);
  const int64_t accepted = s.accepted;
  ASSERT_TRUE(c->Ping("still", &pong).ok());
  EXPECT_EQ(server().connection_stats().accepted, accepted);
}

}  // namespace
}  // namespace fanout::server
