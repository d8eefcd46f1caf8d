// The sample-reply codec (rpc/codec.h): what the server encodes the client
// decodes, and a reply a rogue or broken server could send is refused by
// name, never read past its end.
#include "rpc/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "rpc/rpc_client.h"

namespace fanout::rpc {
namespace {

std::vector<char> Encode(const std::vector<int64_t>& offsets, const std::vector<int64_t>& nb,
                         const std::vector<int64_t>* eids) {
  const size_t n = offsets.size() - 1;
  std::vector<char> buf(SampleReplyBytes(n, offsets[n], eids != nullptr), '\x5a');
  EncodeSampleReply(offsets.data(), n, nb.data(), eids ? eids->data() : nullptr, buf.data());
  return buf;
}

TEST(SampleReplyCodecTest, WhatIsEncodedDecodesToTheSameNodesNeighborsAndEdgeIds) {
  const std::vector<int64_t> offsets = {0, 2, 2, 5};  // 3 nodes (odd: the counts are padded)
  const std::vector<int64_t> nb = {10, 11, 7, 8, 9}, eids = {100, 101, 102, 103, 104};
  for (bool with_eids : {false, true}) {
    std::vector<char> buf = Encode(offsets, nb, with_eids ? &eids : nullptr);
    EXPECT_EQ(buf.size(), 16u + 5 * (with_eids ? 16 : 8));
    EXPECT_EQ(buf[12], 0);  // padding is written, not left as it was
    SampleReplyView v;
    ASSERT_TRUE(DecodeSampleReply(buf.data(), buf.size(), 3, with_eids, &v).ok());
    EXPECT_EQ(v.total, 5);
    EXPECT_EQ(std::vector<int32_t>(v.counts, v.counts + 3), (std::vector<int32_t>{2, 0, 3}));
    EXPECT_EQ(std::vector<int64_t>(v.neighbors, v.neighbors + 5), nb);
    if (with_eids)
      EXPECT_EQ(std::vector<int64_t>(v.edge_ids, v.edge_ids + 5), eids);
    else
      EXPECT_EQ(v.edge_ids, nullptr);
  }
  // No nodes, no edges: an empty reply.
  SampleReplyView v;
  EXPECT_TRUE(DecodeSampleReply(nullptr, 0, 0, true, &v).ok());
  EXPECT_EQ(v.total, 0);
}

TEST(SampleReplyCodecTest, LaborRepliesCarryTheirEdgeWeightsLast) {
  const std::vector<int64_t> offsets = {0, 2, 3};
  const std::vector<int64_t> nb = {4, 5, 6}, eids = {40, 50, 60};
  const std::vector<float> w = {0.5f, 0.25f, 1.0f};
  for (bool with_eids : {false, true}) {
    std::vector<char> buf(SampleReplyBytes(2, 3, with_eids, true));
    EXPECT_EQ(buf.size(), 8u + 3 * ((with_eids ? 16 : 8) + 4));
    EncodeSampleReply(offsets.data(), 2, nb.data(), with_eids ? eids.data() : nullptr, buf.data(),
                      w.data());
    SampleReplyView v;
    ASSERT_TRUE(DecodeSampleReply(buf.data(), buf.size(), 2, with_eids, &v, true).ok());
    EXPECT_EQ(std::vector<int64_t>(v.neighbors, v.neighbors + 3), nb);
    ASSERT_NE(v.edge_weights, nullptr);
    EXPECT_EQ(std::vector<float>(v.edge_weights, v.edge_weights + 3), w);
    if (with_eids) EXPECT_EQ(std::vector<int64_t>(v.edge_ids, v.edge_ids + 3), eids);
    // A reply without its weights (a server before LABOR) is refused.
    EXPECT_TRUE(
        DecodeSampleReply(buf.data(), buf.size() - 12, 2, with_eids, &v, true).IsCorruption());
    // ... and so is one with weights where none were asked for.
    EXPECT_TRUE(DecodeSampleReply(buf.data(), buf.size(), 2, with_eids, &v).IsCorruption());
  }
}

TEST(SampleReplyCodecTest, MalformedRepliesAreCorruptionNamingWhatIsWrong) {
  const std::vector<int64_t> offsets = {0, 2, 3}, nb = {1, 2, 3};
  std::vector<char> buf = Encode(offsets, nb, nullptr);
  SampleReplyView v;
  Status st = DecodeSampleReply(buf.data(), 4, 2, false, &v);  // shorter than the counts
  EXPECT_TRUE(st.IsCorruption() && st.message().find("cannot hold the counts") != std::string::npos)
      << st.ToString();
  st = DecodeSampleReply(buf.data(), buf.size() - 8, 2, false, &v);  // a neighbor short
  EXPECT_TRUE(st.IsCorruption() && st.message().find("do not match") != std::string::npos)
      << st.ToString();
  st = DecodeSampleReply(buf.data(), buf.size(), 2, true, &v);  // edge ids missing
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  std::vector<char> neg = buf;
  const int32_t minus = -1;
  std::memcpy(neg.data() + 4, &minus, 4);
  st = DecodeSampleReply(neg.data(), neg.size(), 2, false, &v);
  EXPECT_TRUE(st.IsCorruption() && st.message().find("negative count") != std::string::npos)
      << st.ToString();
  // Counts whose sum overflows what the buffer could hold are refused before any arithmetic wraps.
  std::vector<char> huge = buf;
  const int32_t big = 0x7fffffff;
  std::memcpy(huge.data(), &big, 4);
  std::memcpy(huge.data() + 4, &big, 4);
  EXPECT_TRUE(DecodeSampleReply(huge.data(), huge.size(), 2, true, &v).IsCorruption());
  // A node count larger than the buffer could describe.
  EXPECT_TRUE(DecodeSampleReply(buf.data(), buf.size(), size_t{1} << 62, false, &v).IsCorruption());
}

template <typename T>
std::string Packed(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A ppr_push reply as a lying or broken server could send it: each defect
// refused by name (CheckPprPushReply, which RpcClient::ReceivePprPush runs).
TEST(PprPushReplyCheckTest, EveryMalformedOrOutOfRangeReplyIsRefused) {
  const PprReplyBounds bounds{100, 8, uint64_t{1} << 62};
  PprPushReply good;
  good.done = 2;
  good.pushed = Packed<uint8_t>({1, 0});
  good.degrees = Packed<int64_t>({3, 5});
  good.out_queries = Packed<int32_t>({0, 1});
  good.out_nodes = Packed<int64_t>({7, 9});
  good.out_mass = Packed<uint64_t>({1, 2});
  EXPECT_TRUE(CheckPprPushReply("s", 3, bounds, good).ok());
  using ::testing::HasSubstr;
  auto refused = [&](auto change) {
    PprPushReply r = good;
    change(&r);
    const Status st = CheckPprPushReply("s", 3, bounds, r);
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    return st.message();
  };
  EXPECT_THAT(refused([](PprPushReply* r) { r->done = 0; }), HasSubstr("0 of 3 entries done"));
  EXPECT_THAT(refused([](PprPushReply* r) { r->done = 4; }), HasSubstr("malformed"));
  EXPECT_THAT(refused([](PprPushReply* r) { r->done = -1; }), HasSubstr("malformed"));
  EXPECT_THAT(refused([](PprPushReply* r) { r->degrees.pop_back(); }), HasSubstr("malformed"));
  EXPECT_THAT(refused([](PprPushReply* r) { r->out_queries += "xyzw"; }), HasSubstr("malformed"));
  EXPECT_THAT(refused([](PprPushReply* r) { r->out_mass.resize(4); }), HasSubstr("malformed"));
  EXPECT_THAT(refused([](PprPushReply* r) { r->pushed[1] = 2; }), HasSubstr("pushed flag 2"));
  EXPECT_THAT(refused([](PprPushReply* r) {
                r->degrees = Packed<int64_t>({3, -1});
              }),
              HasSubstr("degree -1"));
  EXPECT_THAT(refused([](PprPushReply* r) {
                r->out_nodes = Packed<int64_t>({7, 100});
              }),
              HasSubstr("node 100"));
  EXPECT_THAT(refused([](PprPushReply* r) {
                r->out_queries = Packed<int32_t>({0, 8});
              }),
              HasSubstr("query 8"));
  EXPECT_THAT(refused([](PprPushReply* r) {
                r->out_mass = Packed<uint64_t>({1, (uint64_t{1} << 62) + 1});
              }),
              HasSubstr("mass"));
  // Nothing sent: nothing done is fine.
  PprPushReply none;
  EXPECT_TRUE(CheckPprPushReply("s", 0, bounds, none).ok());
}

}  // namespace
}  // namespace fanout::rpc
