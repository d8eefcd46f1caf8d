// The UCX log limit (rpc/ucx/log_limit.h): the first line of each call site
// in a window is printed, the rest counted and summarised once the window is
// over.
#include "rpc/ucx/log_limit.h"

#include <gtest/gtest.h>

#include <string>

namespace fanout::rpc::ucx {
namespace {

TEST(LogLimiterTest, TheFirstLinePerSiteAndWindowIsPrintedTheRestCounted) {
  LogLimiter l(std::chrono::seconds(10));
  const auto t0 = LogLimiter::Clock::now();
  std::string summary;
  int printed = 0;
  for (int i = 0; i < 2000; ++i)
    printed += l.Admit("wireup.c:337", t0 + std::chrono::milliseconds(i), &summary);
  EXPECT_EQ(printed, 1);
  EXPECT_EQ(l.swallowed_total(), 1999);
  // Another site has its own first line.
  EXPECT_TRUE(l.Admit("ucp_ep.c:1500", t0, &summary));
  EXPECT_TRUE(summary.empty());
  // After the window: printed again, with what was swallowed.
  EXPECT_TRUE(l.Admit("wireup.c:337", t0 + std::chrono::seconds(11), &summary));
  EXPECT_NE(summary.find("1999 more UCX log line(s) from wireup.c:337"), std::string::npos)
      << summary;
  EXPECT_FALSE(l.Admit("wireup.c:337", t0 + std::chrono::seconds(12), &summary));
  EXPECT_TRUE(summary.empty());
}

TEST(LogLimiterTest, ManyCallSitesShareOneEntryPastTheTableBound) {
  LogLimiter l(std::chrono::seconds(10));
  const auto t0 = LogLimiter::Clock::now();
  std::string summary;
  for (size_t i = 0; i < LogLimiter::kMaxSites; ++i)
    EXPECT_TRUE(l.Admit("f.c:" + std::to_string(i), t0, &summary));
  // Past the bound: one shared entry, so at most one more line per window.
  int printed = 0;
  for (int i = 0; i < 1000; ++i) printed += l.Admit("g.c:" + std::to_string(i), t0, &summary);
  EXPECT_EQ(printed, 1);
}

}  // namespace
}  // namespace fanout::rpc::ucx
