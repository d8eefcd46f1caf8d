// The framed transport's by-reference writes and streamed reads, at and
// around their thresholds, through a real server and socket.
#include "rpc/framed_transport.h"

#include <gtest/gtest.h>

#include "common/random.h"
#include "tests/server/server_fixture.h"

namespace fanout::rpc {
namespace {

using server::testing::ServerTest;

std::string Text(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  SplitMix64 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng.Next());
  return s;
}

TEST_F(ServerTest, PayloadsOfEverySizeRoundTripOnOneConnection) {
  StartServers(1);
  auto client = Connect(0);
  const size_t k = ResettingFramedTransport::kZeroCopyBytes;
  std::vector<size_t> sizes = {0,     1, 100,   k / 2 - 1, k / 2,   k - 40,
                               k - 1, k, k + 1, 2 * k + 3, 1 << 20, 5 << 20};
  for (int round = 0; round < 2; ++round) {
    for (size_t n : sizes) {
      std::string text = Text(n, n * 31 + round), reply;
      Status st = client->Ping(text, &reply);
      ASSERT_TRUE(st.ok()) << n << ": " << st.ToString();
      ASSERT_EQ(reply.size(), n);
      ASSERT_TRUE(reply == text) << "payload of " << n << " bytes changed in transit";
    }
  }
  // Mixed messages: a large id array out, a small reply back, and the reverse.
  std::vector<int64_t> ids(100000, 3);
  SampleReply sample;
  SampleCall call;
  call.fanout = 2;
  ASSERT_TRUE(client->Sample(ids, call, &sample).ok());
  EXPECT_EQ(sample.Counts().size(), ids.size());
  std::string rows;
  ASSERT_TRUE(client->Features(std::vector<int64_t>{1, 2}, &rows).ok());
  EXPECT_EQ(rows.size(), 2u * 1433 * 4);
}

}  // namespace
}  // namespace fanout::rpc
