// MemoryBudget: the one request-memory bound a server's Thrift connections
// and data plane share.
#include "rpc/memory_budget.h"

#include <gtest/gtest.h>

#include <thread>

namespace fanout::rpc {
namespace {

TEST(MemoryBudgetTest, TakesWhatFitsAndClampsATakeLargerThanTheWholeBudget) {
  MemoryBudget b(100);
  int64_t t1 = 0, t2 = 0, t3 = 0;
  EXPECT_TRUE(b.TryTake(60, &t1));
  EXPECT_FALSE(b.TryTake(50, &t2));  // 110 > 100
  EXPECT_EQ(b.Stats().waits, 1);
  EXPECT_TRUE(b.TryTake(40, &t2));
  EXPECT_FALSE(b.HasRoom());
  b.Give(t1);
  b.Give(t2);
  EXPECT_TRUE(b.TryTake(1000, &t3));  // clamped: waits for all of it, never "never fits"
  EXPECT_EQ(t3, 100);
  EXPECT_EQ(b.Stats().held, 100);
  b.Give(t3);
  EXPECT_EQ(b.Stats().held, 0);
  EXPECT_EQ(b.Stats().peak, 100);
}

TEST(MemoryBudgetTest, ForceRecordsBytesThatExistOverTheLimit) {
  MemoryBudget b(100);
  b.Force(150);
  EXPECT_EQ(b.Stats().held, 150);
  EXPECT_FALSE(b.HasRoom());
  int64_t t = 0;
  EXPECT_FALSE(b.TryTake(1, &t));
  b.Give(150);
  EXPECT_TRUE(b.HasRoom());
}

TEST(MemoryBudgetTest, AWaitingTakeGetsTheBytesGivenBackOrGivesUpOnItsDeadlineOrAbandon) {
  MemoryBudget b(100);
  int64_t held = 0;
  ASSERT_TRUE(b.TryTake(100, &held));
  std::thread giver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.Give(held);
  });
  int64_t t = 0;
  EXPECT_TRUE(b.Take(70, 0, nullptr, &t));  // no deadline: until it fits
  giver.join();
  EXPECT_EQ(t, 70);
  int64_t u = 0;
  EXPECT_FALSE(b.Take(70, 20, nullptr, &u));  // 140 > 100 for the whole deadline
  std::atomic<bool> abandon{false};
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    abandon = true;
    b.Wake();
  });
  EXPECT_FALSE(b.Take(70, 0, &abandon, &u));  // would wait forever: abandoned
  waker.join();
  b.Give(t);
  EXPECT_EQ(b.Stats().held, 0);
}

TEST(MemoryBudgetTest, AHoldGivesItsBytesBackOnceWhereverItIsMoved) {
  MemoryBudget b(100);
  int64_t t = 0;
  ASSERT_TRUE(b.TryTake(30, &t));
  {
    BudgetHold a(&b, t);
    BudgetHold c = std::move(a);
    BudgetHold d;
    d = std::move(c);
    EXPECT_EQ(d.bytes(), 30);
    EXPECT_EQ(b.Stats().held, 30);
  }
  EXPECT_EQ(b.Stats().held, 0);
}

TEST(MemoryBudgetTest, ZeroIsUnlimited) {
  MemoryBudget b(0);
  int64_t t = 0;
  EXPECT_TRUE(b.TryTake(int64_t{1} << 40, &t));
  EXPECT_TRUE(b.HasRoom());
  b.Give(t);
}

}  // namespace
}  // namespace fanout::rpc
