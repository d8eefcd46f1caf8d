// The fair order of a server's work across tenants (server/scheduler.h):
// deterministic shares under synthetic costs, classes, and the threaded
// scheduler's slots, waits and stop.
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/random.h"

namespace fanout::server {
namespace {

// Serves `picks` requests from tenants that always have `backlog[t]`
// requests queued, each of a random cost in [1000, 9000) (actual = estimate
// x [0.5, 1.5)); returns each tenant's share of the cost served.
std::vector<double> Shares(FairQueue* q, const std::vector<int>& backlog, int picks,
                           uint64_t seed) {
  SplitMix64 rng(seed);
  auto cost = [&] { return 1000.0 + static_cast<double>(DrawBelow(rng.Next(), 8000)); };
  std::vector<std::vector<std::pair<int64_t, double>>> queued(backlog.size());
  for (size_t t = 0; t < backlog.size(); ++t)
    for (int i = 0; i < backlog[t]; ++i) {
      const double c = cost();
      queued[t].push_back({q->Enqueue(static_cast<int>(t), c), c});
    }
  std::vector<double> served(backlog.size(), 0);
  for (int i = 0; i < picks; ++i) {
    const int64_t id = q->Pick();
    EXPECT_GE(id, 0);
    int tenant = -1;
    double est = 0;
    for (size_t t = 0; t < queued.size() && tenant < 0; ++t)
      for (size_t j = 0; j < queued[t].size(); ++j)
        if (queued[t][j].first == id) {
          tenant = static_cast<int>(t);
          est = queued[t][j].second;
          queued[t].erase(queued[t].begin() + static_cast<long>(j));
          break;
        }
    const double actual = est * (0.5 + static_cast<double>(DrawBelow(rng.Next(), 1000)) / 1000);
    q->Finish(tenant, est, actual);
    served[tenant] += actual;
    const double c = cost();
    queued[tenant].push_back({q->Enqueue(tenant, c), c});
  }
  double total = 0;
  for (double s : served) total += s;
  for (double& s : served) s /= total;
  return served;
}

TEST(FairQueueTest, SharesFollowWeightsWithinOnePercentOverTenThousandPicks) {
  FairQueue q;
  q.SetTenants({{1, false}, {1, false}, {2, false}, {4, false}});
  const std::vector<double> s = Shares(&q, {5, 5, 5, 5}, 10000, 1);
  const double want[] = {1 / 8.0, 1 / 8.0, 2 / 8.0, 4 / 8.0};
  for (int t = 0; t < 4; ++t) EXPECT_NEAR(s[t], want[t], 0.01 * want[t] + 1e-3) << t;
}

TEST(FairQueueTest, MoreQueuedRequestsDoNotBuyMoreShare) {
  FairQueue q;
  q.SetTenants({{1, false}, {1, false}});
  const std::vector<double> s = Shares(&q, {64, 8}, 10000, 2);  // 8x the requests in flight
  EXPECT_NEAR(s[0], 0.5, 0.005);
  EXPECT_NEAR(s[1], 0.5, 0.005);
}

TEST(FairQueueTest, OnlineGoesFirstButNeverStarvesBatch) {
  FairQueue q(0.8);
  q.SetTenants({{1, true}, {1, false}, {3, false}});
  const std::vector<double> s = Shares(&q, {4, 4, 4}, 10000, 3);
  // Both classes always have work: online takes its cap, batch the rest by weight.
  EXPECT_NEAR(s[0], 0.8, 0.02);
  EXPECT_NEAR(s[1], 0.05, 0.01);
  EXPECT_NEAR(s[2], 0.15, 0.01);
  EXPECT_GT(s[1], 0);  // no starvation
  // An online request that arrives is served next (batch waiting or not).
  FairQueue q2(0.8);
  q2.SetTenants({{1, true}, {1, false}});
  for (int i = 0; i < 10; ++i) q2.Enqueue(1, 100);
  (void)q2.Pick();
  q2.Finish(1, 100, 100);
  const int64_t online = q2.Enqueue(0, 100);
  EXPECT_EQ(q2.Pick(), online);
  // Only online work when asked for it alone.
  EXPECT_GE(q2.Pick(true), -1);
  FairQueue q3;
  q3.SetTenants({{1, false}});
  q3.Enqueue(0, 10);
  EXPECT_EQ(q3.Pick(true), -1);
}

TEST(FairQueueTest, ACancelledRequestGivesItsChargeBack) {
  FairQueue q;
  q.SetTenants({{1, false}, {1, false}});
  const int64_t big = q.Enqueue(0, 1e9);  // would push tenant 0's tags far out
  q.Cancel(big);
  const int64_t a = q.Enqueue(0, 100), b = q.Enqueue(1, 100);
  EXPECT_EQ(q.Pick(), a);  // not behind its cancelled request
  EXPECT_EQ(q.Pick(), b);
}

TEST(FairSchedulerTest, SlotsBoundTheWorkAndStopWakesWaiters) {
  SchedulerOptions o;
  o.slots = 2;
  o.online_slots = 1;
  o.max_wait = std::chrono::milliseconds(5000);
  FairScheduler s(o);
  s.SetTenants({{1, false}, {1, true}});
  std::atomic<int> in{0}, most{0}, done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 12; ++i)
    threads.emplace_back([&, i] {
      FairScheduler::Grant g;
      if (!s.Acquire(i % 3 == 0 ? 1 : 0, 100, &g).ok()) return;
      const int now = ++in;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      --in;
      s.Release(&g, 100);
      ++done;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), 12);
  EXPECT_LE(most.load(), 3);  // 2 slots + 1 for online work
  // A request that cannot get a slot in time is refused, naming why.
  SchedulerOptions tight = o;
  tight.slots = 1;
  tight.online_slots = 0;
  tight.max_wait = std::chrono::milliseconds(50);
  FairScheduler t(tight);
  t.SetTenants({{1, false}});
  FairScheduler::Grant held, late;
  ASSERT_TRUE(t.Acquire(0, 1, &held).ok());
  Status st = t.Acquire(0, 1, &late);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(st.message().find("saturated"), std::string::npos);
  EXPECT_EQ(t.waiting(), 0);
  // Stop wakes whoever waits (long before its max_wait).
  SchedulerOptions patient = tight;
  patient.max_wait = std::chrono::milliseconds(60000);
  FairScheduler u(patient);
  u.SetTenants({{1, false}});
  FairScheduler::Grant first;
  ASSERT_TRUE(u.Acquire(0, 1, &first).ok());
  const auto t0 = std::chrono::steady_clock::now();
  std::thread waiter([&] {
    FairScheduler::Grant g;
    EXPECT_EQ(u.Acquire(0, 1, &g).code(), Status::Code::kAborted);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  u.Stop();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  u.Release(&first, 1);
  FairScheduler::Grant after;
  EXPECT_EQ(u.Acquire(0, 1, &after).code(), Status::Code::kAborted);
}

// A tenant with 16x the connections (threads) of another, at equal weight,
// is held to its share of the grants, counted over a fixed number of them
// (not timed): its requests past its share of the wait are refused at once,
// and the other tenant is never refused for a full queue.
TEST(FairSchedulerTest, AGreedyTenantWithManyConnectionsIsHeldToItsShare) {
  SchedulerOptions o;
  o.slots = 1;
  o.online_slots = 0;
  o.max_waiting = 16;  // the greedy tenant alone would fill it
  o.min_waiting_per_tenant = 2;
  FairScheduler s(o);
  s.SetTenants({{1, false}, {1, false}});
  EXPECT_EQ(s.WaitingCap(0), 8);
  constexpr int kGrants = 3000;
  std::atomic<int> granted{0};
  std::atomic<int64_t> grants[2] = {}, refused[2] = {};
  std::atomic<bool> done{false};
  auto client = [&](int tenant) {
    while (!done.load()) {
      FairScheduler::Grant g;
      Status st = s.Acquire(tenant, 1000, &g);
      if (!st.ok()) {
        ++refused[tenant];
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // a paced client's retry
        continue;
      }
      if (granted.fetch_add(1) < kGrants) ++grants[tenant];
      std::this_thread::sleep_for(std::chrono::microseconds(100));  // the work, holding the slot
      s.Release(&g, 1000);
      if (granted.load() >= kGrants) done = true;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 32; ++i) threads.emplace_back(client, 0);  // greedy: 32 connections
  for (int i = 0; i < 2; ++i) threads.emplace_back(client, 1);   // modest: 2
  for (auto& t : threads) t.join();
  const double share = static_cast<double>(grants[1].load()) / kGrants;
  EXPECT_NEAR(share, 0.5, 0.05) << "greedy " << grants[0] << " modest " << grants[1];
  EXPECT_GT(refused[0].load(), 0);  // past its share of the wait
  EXPECT_EQ(refused[1].load(), 0);  // never crowded out
}

}  // namespace
}  // namespace fanout::server
