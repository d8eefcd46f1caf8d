// The GPU feature cache on a real device: skipped where there is none.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "cache/gpu_feature_cache.h"

namespace fanout::cache {
namespace {

constexpr int64_t kNodes = 5000, kDim = 37;  // a row width that is not a multiple of the warp size

float Value(int64_t node, int64_t j) {
  return static_cast<float>(node) * 0.001f + static_cast<float>(j) * 1.5f;
}

std::vector<float> HostRows(const std::vector<int64_t>& ids) {
  std::vector<float> r;
  for (int64_t v : ids)
    for (int64_t j = 0; j < kDim; ++j) r.push_back(Value(v, j));
  return r;
}

TEST(GpuFeatureCacheCudaTest, GatherPlusScatteredMissesEqualTheHostRowsBitForBit) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  CacheOptions o;
  o.num_nodes = kNodes;
  o.feature_dim = kDim;
  o.capacity_rows = 1000;
  std::unique_ptr<GpuFeatureCache> c;
  ASSERT_TRUE(GpuFeatureCache::Create(o, 0, &c).ok());
  std::vector<int64_t> hot;
  for (int64_t v = 0; v < kNodes; v += 3)
    hot.push_back(v);  // more than fit: the first 1000 are kept
  std::vector<float> hot_rows = HostRows(hot);
  ASSERT_TRUE(c->Insert(hot, hot_rows.data(), nullptr).ok());
  EXPECT_EQ(c->size(), 1000);
  std::vector<int64_t> ids;
  uint64_t x = 12345;
  for (int i = 0; i < 3000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    ids.push_back(static_cast<int64_t>((x >> 33) % kNodes));
  }
  ids.push_back(ids[0]);  // a repeat
  DeviceBuffer out;
  ASSERT_TRUE(DeviceBuffer::Allocate(ids.size() * kDim * 4, 0, &out).ok());
  std::vector<int64_t> misses{-7};  // misses are appended after what is there
  GpuWorkspace ws;
  ASSERT_TRUE(c->Gather(ids, static_cast<float*>(out.data()), &misses, &ws, nullptr).ok());
  ASSERT_EQ(misses[0], -7);
  misses.erase(misses.begin());
  std::vector<int64_t> miss_ids;
  for (int64_t p : misses) miss_ids.push_back(ids[p]);
  std::vector<float> miss_rows = HostRows(miss_ids);
  ASSERT_TRUE(
      c->ScatterMisses(misses, miss_rows.data(), static_cast<float*>(out.data()), &ws, nullptr)
          .ok());
  ASSERT_TRUE(c->Synchronize(nullptr).ok());
  std::vector<float> got(ids.size() * kDim);
  ASSERT_TRUE(out.CopyToHost(got.data(), got.size() * 4, nullptr).ok());
  std::vector<float> want = HostRows(ids);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
  EXPECT_GT(misses.size(), 0u);
  EXPECT_LT(misses.size(), ids.size());
  EXPECT_EQ(c->stats().hits, static_cast<int64_t>(ids.size() - misses.size()));
}

TEST(GpuFeatureCacheCudaTest, DeviceBuffersMoveAndArgumentsAreChecked) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  DeviceBuffer a;
  ASSERT_TRUE(DeviceBuffer::Allocate(1 << 20, 0, &a).ok());
  void* p = a.data();
  DeviceBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.size(), size_t{1} << 20);
  CacheOptions o;
  o.num_nodes = 10;
  o.feature_dim = 4;
  o.capacity_rows = 5;
  std::unique_ptr<GpuFeatureCache> c;
  EXPECT_TRUE(GpuFeatureCache::Create(o, CudaDeviceCount(), &c).IsInvalidArgument());
  o.policy = Policy::kSieve;
  EXPECT_TRUE(GpuFeatureCache::Create(o, 0, &c).IsInvalidArgument());
  o.policy = Policy::kStatic;
  ASSERT_TRUE(GpuFeatureCache::Create(o, 0, &c).ok());
  std::vector<int64_t> misses;
  GpuWorkspace ws;
  EXPECT_TRUE(
      c->Gather(std::vector<int64_t>{10}, static_cast<float*>(b.data()), &misses, &ws, nullptr)
          .IsInvalidArgument());
  PinnedBuffer h;
  ASSERT_TRUE(PinnedBuffer::Allocate(4096, &h).ok());
  void* hp = h.data();
  PinnedBuffer h2(std::move(h));
  EXPECT_EQ(h2.data(), hp);
  EXPECT_EQ(h.data(), nullptr);
}

// Several threads share one cache, each with its own workspace, stream and
// output (the loader's workers do): every output is exact.
// Stream-ordered batch buffers (the loader's GPU batches): filled and read
// back on a worker's own stream, moved, freed into the pool and taken again;
// without a device every factory says so (this part runs everywhere).
TEST(GpuFeatureCacheCudaTest, PooledBuffersOnAWorkersStreamRoundTripAndMove) {
  if (CudaDeviceCount() == 0) {
    Stream s;
    EXPECT_TRUE(Stream::Create(0, &s).code() == Status::Code::kUnavailable);
    DeviceBuffer b;
    EXPECT_TRUE(DeviceBuffer::AllocateAsync(64, 0, nullptr, &b).code() ==
                Status::Code::kUnavailable);
    EXPECT_FALSE(s.valid());
    GTEST_SKIP() << "no CUDA device";
  }
  Stream s;
  ASSERT_TRUE(Stream::Create(0, &s).ok());
  ASSERT_TRUE(s.valid());
  std::vector<float> host(1 << 18), back(1 << 18, -1.0f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  for (int round = 0; round < 3; ++round) {  // later rounds take the pool's freed memory
    DeviceBuffer a;
    ASSERT_TRUE(DeviceBuffer::AllocateAsync(host.size() * 4, 0, s.get(), &a).ok());
    ASSERT_TRUE(a.CopyFromHost(host.data(), host.size() * 4, s.get()).ok());
    DeviceBuffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    ASSERT_TRUE(b.CopyToHost(back.data(), back.size() * 4, s.get()).ok());
    EXPECT_EQ(back, host) << "round " << round;
  }
  Stream moved(std::move(s));
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(s.valid());
}

TEST(GpuFeatureCacheCudaTest, ConcurrentGathersWithOwnWorkspacesAreExact) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  CacheOptions o;
  o.num_nodes = kNodes;
  o.feature_dim = kDim;
  o.capacity_rows = 2500;
  std::unique_ptr<GpuFeatureCache> c;
  ASSERT_TRUE(GpuFeatureCache::Create(o, 0, &c).ok());
  std::vector<int64_t> hot;
  for (int64_t v = 0; v < kNodes; v += 2) hot.push_back(v);
  std::vector<float> hot_rows = HostRows(hot);
  ASSERT_TRUE(c->Insert(hot, hot_rows.data(), nullptr).ok());
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<int> bad(kThreads, 0), failed(kThreads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      cudaStream_t stream;
      cudaStreamCreate(&stream);
      GpuWorkspace ws;
      DeviceBuffer out;
      uint64_t x = 99 + t;
      for (int r = 0; r < kRounds; ++r) {
        std::vector<int64_t> ids(1000 + 37 * t);
        for (auto& v : ids) {
          x = x * 6364136223846793005ULL + 1442695040888963407ULL;
          v = static_cast<int64_t>((x >> 33) % kNodes);
        }
        if (!GpuWorkspace::Grow(&out, ids.size() * kDim * 4, 0).ok()) ++failed[t];
        std::vector<int64_t> misses;
        std::vector<int64_t> miss_ids;
        Status st = c->Gather(ids, static_cast<float*>(out.data()), &misses, &ws, stream);
        for (int64_t p : misses) miss_ids.push_back(ids[p]);
        std::vector<float> miss_rows = HostRows(miss_ids);
        if (st.ok())
          st = c->ScatterMisses(misses, miss_rows.data(), static_cast<float*>(out.data()), &ws,
                                stream);
        if (st.ok()) st = c->Synchronize(stream);
        std::vector<float> got(ids.size() * kDim);
        if (st.ok()) st = out.CopyToHost(got.data(), got.size() * 4, stream);
        if (!st.ok()) {
          ++failed[t];
          continue;
        }
        std::vector<float> want = HostRows(ids);
        if (std::memcmp(got.data(), want.data(), got.size() * 4) != 0) ++bad[t];
      }
      cudaStreamDestroy(stream);
    });
  }
  for (auto& th : ts) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failed[t], 0) << "thread " << t;
    EXPECT_EQ(bad[t], 0) << "thread " << t;
  }
  EXPECT_EQ(c->stats().lookups, [] {
    int64_t n = 0;
    for (int t = 0; t < kThreads; ++t) n += kRounds * (1000 + 37 * t);
    return n;
  }());
}

}  // namespace
}  // namespace fanout::cache
