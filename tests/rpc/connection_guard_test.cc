// The connection guard's classes of connection: the anonymous pool (a flood
// of sockets that never authenticate costs only the pool) and per-owner
// slots (one tenant with many connections crowds out only itself). Driven
// directly over socket pairs: no server, no timing but the pool's grace.
#include "rpc/connection_guard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <thread>
#include <vector>

namespace fanout::rpc {
namespace {

using ::testing::HasSubstr;

class GuardTest : public ::testing::Test {
 protected:
  // One end of a fresh socket pair for the guard; the other end is kept to
  // see a shutdown.
  int Socket() {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fds_.push_back(sv[0]);
    fds_.push_back(sv[1]);
    peer_[sv[0]] = sv[1];
    return sv[0];
  }
  // True when the guard shut `fd` down (its peer reads end-of-stream).
  bool ShutDown(int fd) {
    char c;
    return recv(peer_[fd], &c, 1, MSG_DONTWAIT) == 0;
  }
  ~GuardTest() override {
    for (int fd : fds_) close(fd);
  }
  std::vector<int> fds_;
  std::map<int, int> peer_;
};

ConnectionLimits Limits(int max_connections, int pool) {
  ConnectionLimits l;
  l.max_connections = max_connections;
  l.unauthenticated_connections = pool;
  return l;
}

TEST_F(GuardTest, AnonymousConnectionsShareASmallPoolAndNeverTakeABoundSlot) {
  ConnectionGuard g(Limits(100, 4));
  const int alice_fd = Socket();
  auto alice = g.Admit(alice_fd);
  std::string why;
  ASSERT_TRUE(alice->Bind("alice", 10, &why)) << why;
  // A flood of idle anonymous sockets: each newcomer replaces the pool's
  // longest-idle one; alice's idle connection is never touched.
  std::vector<std::unique_ptr<ConnectionGuard::Connection>> flood;
  std::vector<int> flood_fds;
  for (int i = 0; i < 50; ++i) {
    flood_fds.push_back(Socket());
    flood.push_back(g.Admit(flood_fds.back()));
    EXPECT_FALSE(flood.back()->refused()) << i;
  }
  ConnectionStats s = g.Stats();
  EXPECT_EQ(s.unauthenticated, 4);
  EXPECT_EQ(s.pool_evicted, 46);
  EXPECT_EQ(s.evicted_idle, 0);
  EXPECT_EQ(s.by_owner.at("alice"), 1);
  EXPECT_FALSE(ShutDown(alice_fd));
  EXPECT_TRUE(ShutDown(flood_fds.front()));
  EXPECT_FALSE(ShutDown(flood_fds.back()));
  EXPECT_EQ(s.open, 5);
}

TEST_F(GuardTest, AFullPoolOfBusyNewcomersRefusesUntilTheGraceThenReplacesTheOldest) {
  ConnectionGuard g(Limits(100, 2));
  std::vector<std::unique_ptr<ConnectionGuard::Connection>> pool;
  std::vector<int> fds;
  for (int i = 0; i < 2; ++i) {
    fds.push_back(Socket());
    pool.push_back(g.Admit(fds.back()));
    ASSERT_TRUE(pool.back()->Begin(1000));  // inside a frame (a slow first request)
  }
  auto refused = g.Admit(Socket());
  ASSERT_TRUE(refused->refused());
  EXPECT_THAT(refused->why_refused(), HasSubstr("pool for connections without credentials"));
  EXPECT_THAT(refused->why_refused(), HasSubstr("2 connections"));
  EXPECT_EQ(g.Stats().pool_refused, 1);
  // Binding one leaves room in the pool.
  std::string why;
  ASSERT_TRUE(pool[0]->Bind("alice", 0, &why));
  auto third = g.Admit(Socket());
  EXPECT_FALSE(third->refused());
  ASSERT_TRUE(third->Begin(1000));
  // A frame begun longer ago than the grace gives way to a newcomer.
  std::this_thread::sleep_for(std::chrono::milliseconds(kPoolGraceMs + 100));
  auto late = g.Admit(Socket());
  EXPECT_FALSE(late->refused());
  EXPECT_TRUE(ShutDown(fds[1]));
  EXPECT_FALSE(ShutDown(fds[0]));  // bound: not the pool's
  EXPECT_EQ(g.Stats().pool_evicted, 1);
}

TEST_F(GuardTest, AnOwnerAtItsCapReplacesItsOwnIdleConnectionOrIsRefusedNamingIt) {
  ConnectionGuard g(Limits(100, 8));
  std::string why;
  std::vector<std::unique_ptr<ConnectionGuard::Connection>> greedy;
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    fds.push_back(Socket());
    greedy.push_back(g.Admit(fds.back()));
    ASSERT_TRUE(greedy.back()->Bind("greedy", 3, &why)) << why;
    ASSERT_TRUE(greedy.back()->Begin(1000));
  }
  auto bob = g.Admit(Socket());
  ASSERT_TRUE(bob->Bind("bob", 3, &why)) << why;
  // Every greedy slot busy: the fourth is refused, naming the tenant and cap.
  auto fourth = g.Admit(Socket());
  EXPECT_FALSE(fourth->Bind("greedy", 3, &why));
  EXPECT_THAT(why, HasSubstr("tenant \"greedy\" holds all 3 of its connection slots"));
  EXPECT_THAT(why, HasSubstr("--max-connections 100"));
  ConnectionStats s = g.Stats();
  EXPECT_EQ(s.owner_refused, 1);
  EXPECT_EQ(s.by_owner.at("greedy"), 3);
  EXPECT_EQ(s.unauthenticated, 1);  // the refused one stays pooled
  // One of them idle again: the newcomer takes its place, not bob's.
  greedy[1]->Idle();
  ASSERT_TRUE(fourth->Bind("greedy", 3, &why)) << why;
  EXPECT_TRUE(ShutDown(fds[1]));
  s = g.Stats();
  EXPECT_EQ(s.owner_evicted, 1);
  EXPECT_EQ(s.by_owner.at("greedy"), 3);
  EXPECT_EQ(s.by_owner.at("bob"), 1);
  EXPECT_EQ(s.unauthenticated, 0);
  // Closing gives the slot back.
  greedy[0]->Close();
  EXPECT_EQ(g.Stats().by_owner.at("greedy"), 2);
  bob.reset();
  EXPECT_EQ(g.Stats().by_owner.count("bob"), 0u);
}

TEST_F(GuardTest, WithoutAPoolEveryConnectionIsOneClassAsBefore) {
  ConnectionGuard g(Limits(2, 0));
  auto a = g.Admit(Socket());
  auto b = g.Admit(Socket());
  ASSERT_TRUE(a->Begin(1000));
  ASSERT_TRUE(b->Begin(1000));
  auto c = g.Admit(Socket());
  ASSERT_TRUE(c->refused());
  EXPECT_THAT(c->why_refused(), HasSubstr("connection limit (--max-connections 2"));
  EXPECT_EQ(g.Stats().refused, 1);
}

}  // namespace
}  // namespace fanout::rpc
