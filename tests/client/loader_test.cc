// NodeLoader and the GraphSAGE example: sharding, reproducibility through the
// servers, accuracy, errors.
#include "client/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <thread>
#include <tuple>

#include "client/cluster.h"
#include "client/examples/graphsage.h"
#include "client/walks.h"
#include "common/random.h"
#include "datasets/formats.h"
#include "datasets/partitioner.h"
#include "rpc/data_plane.h"
#include "sampler/temporal.h"
#include "tests/datasets/test_util.h"
#include "tests/server/child_server.h"
#include "tests/server/server_fixture.h"

namespace fanout::client {
namespace {

using server::testing::ServerTest;
using ::testing::HasSubstr;

void ExpectSameTensor(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (a.defined()) {
    EXPECT_TRUE(torch::equal(a, b)) << what;
  }
}

// How a test's client reaches its servers: over RPC (the servers export
// nothing; UCX and Thrift as "auto" picks them), or from the servers' exports
// mapped here (same host), sampling here or (kLocalRpcSampling) over RPC.
enum class ClientPath { kRpc, kLocal, kLocalRpcSampling };
const char* PathName(ClientPath p) {
  return p == ClientPath::kRpc ? "rpc" : p == ClientPath::kLocal ? "local" : "local+rpc-sampling";
}
// (partitions, path) combinations the equality tests run through.
std::vector<std::pair<int, ClientPath>> PartsAndPaths() {
  return {{2, ClientPath::kRpc},
          {3, ClientPath::kRpc},
          {2, ClientPath::kLocal},
          {3, ClientPath::kLocal},
          {2, ClientPath::kLocalRpcSampling}};
}

class LoaderTest : public ServerTest {
 protected:
  std::shared_ptr<Cluster> ConnectCluster(ClientPath path = ClientPath::kRpc) {
    ClusterSpec spec;
    if (path == ClientPath::kLocalRpcSampling) {
      spec.has_local_sampling = true;
      spec.local_sampling = false;
    }
    for (const auto& s : servers_)
      spec.replicas.push_back({"127.0.0.1:" + std::to_string(s->port())});
    std::shared_ptr<Cluster> c;
    Status st = Cluster::Connect(spec, {}, &c);
    EXPECT_TRUE(st.ok()) << st.ToString();
    for (size_t p = 0; c && p < servers_.size(); ++p)
      EXPECT_EQ(c->local(static_cast<int>(p)) != nullptr, path != ClientPath::kRpc)
          << PathName(path);
    return c;
  }
  // A cluster over the fixture's servers through Thrift only (data plane
  // "tcp": no UCX, no co-located exports read here).
  std::shared_ptr<Cluster> ConnectThriftOnly() {
    ClusterSpec spec;
    for (const auto& srv : servers_)
      spec.replicas.push_back({"127.0.0.1:" + std::to_string(srv->port())});
    spec.has_data_plane = true;
    spec.data_plane = rpc::DataPlaneMode::kTcp;
    std::shared_ptr<Cluster> c;
    Status st = Cluster::Connect(spec, {}, &c);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return c;
  }
  // A second replica of each partition the fixture serves, and the cluster
  // spec listing both replicas of each (the fixture's first).
  void StartBackups(std::vector<std::unique_ptr<server::PartitionServer>>* backups,
                    ClusterSpec* spec) {
    for (size_t p = 0; p < servers_.size(); ++p) {
      server::ServerOptions o;
      o.dataset_dir = dir_;
      o.partition = static_cast<int>(p);
      o.local_socket = "off";  // failover is about the RPC paths
      backups->push_back(std::make_unique<server::PartitionServer>(o));
      ASSERT_TRUE(backups->back()->Start().ok());
      spec->replicas.push_back({"127.0.0.1:" + std::to_string(servers_[p]->port()),
                                "127.0.0.1:" + std::to_string(backups->back()->port())});
    }
  }
  std::shared_ptr<LocalSource> Local() {
    std::shared_ptr<LocalSource> l;
    EXPECT_TRUE(LocalSource::Open(dir_, &l).ok());
    return l;
  }
};

TEST_F(LoaderTest, RanksSplitEveryEpochWithoutOverlapOrGaps) {
  StartServers(2);
  auto cluster = ConnectCluster();
  std::vector<int64_t> train = Local()->SplitNodes(1);
  ASSERT_EQ(train.size(), 140u);
  for (int world : {1, 2, 3}) {
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::map<int64_t, int> seen;
      for (int rank = 0; rank < world; ++rank) {
        LoaderOptions o;
        o.batch_size = 16;
        o.fanouts = {3, 2};
        o.world_size = world;
        o.rank = rank;
        o.seed = 9;
        o.features = false;
        NodeLoader loader(cluster, train, o);
        loader.SetEpoch(epoch);
        MiniBatch b;
        int64_t batches = 0;
        while (loader.Next(&b)) {
          auto seeds = b.n_id.narrow(0, 0, b.batch_size);
          for (int64_t i = 0; i < b.batch_size; ++i) seen[seeds[i].item<int64_t>()]++;
          EXPECT_EQ(b.epoch, epoch);
          ++batches;
        }
        EXPECT_EQ(batches, loader.num_batches());
      }
      ASSERT_EQ(seen.size(), train.size()) << "world " << world << " epoch " << epoch;
      // 140 seeds over 3 ranks: padded to 141 by repeating one seed (the epoch's first).
      int repeats = 0;
      for (int64_t s : train) {
        EXPECT_GE(seen[s], 1) << "seed " << s << " world " << world;
        EXPECT_LE(seen[s], 2) << "seed " << s << " world " << world;
        repeats += seen[s] - 1;
      }
      EXPECT_EQ(repeats, (world - 140 % world) % world) << "world " << world;
    }
  }
}

// A DDP job all-reduces once a batch: every rank must yield the same number of
// batches, or the rank with one more waits for ever. Over a grid of shuffle
// seeds, world sizes, batch sizes and seed counts, both drop_last settings.
TEST_F(LoaderTest, EveryRankYieldsTheSameNumberOfBatches) {
  StartServers(1);
  auto local = Local();
  for (int64_t n : {1, 7, 64, 2049, 2047}) {
    std::vector<int64_t> seeds(static_cast<size_t>(n));
    std::iota(seeds.begin(), seeds.end(), int64_t{100});
    for (uint64_t seed = 0; seed < 4; ++seed) {
      for (int world = 1; world <= 8; ++world) {
        for (int64_t batch : {1, 5, 512}) {
          for (bool drop_last : {false, true}) {
            std::string what = "n " + std::to_string(n) + " seed " + std::to_string(seed) +
                               " world " + std::to_string(world) + " batch " +
                               std::to_string(batch) + (drop_last ? " drop_last" : "");
            std::map<int64_t, int> seen;
            int64_t first_count = -1, first_batches = -1;
            for (int rank = 0; rank < world; ++rank) {
              LoaderOptions o;
              o.batch_size = batch;
              o.world_size = world;
              o.rank = rank;
              o.seed = seed;
              o.drop_last = drop_last;
              o.fanouts = {2};
              o.features = false;
              NodeLoader loader(local, seeds, o);
              std::vector<int64_t> mine = loader.EpochSeeds(1);
              for (int64_t s : mine) seen[s]++;
              int64_t count = static_cast<int64_t>(mine.size());
              int64_t batches = loader.num_batches();
              EXPECT_EQ(batches, drop_last ? count / batch : (count + batch - 1) / batch) << what;
              if (rank == 0) {
                first_count = count;
                first_batches = batches;
              }
              EXPECT_EQ(count, first_count) << what << " rank " << rank;
              EXPECT_EQ(batches, first_batches) << what << " rank " << rank;
              // What is yielded agrees with len(), on a sample of the grid (iterating
              // all of it would sample 2049 seeds for thousands of loaders).
              if (seed == 0 && batch != 1 && (world == 1 || world == 3 || world == 8)) {
                loader.SetEpoch(1);
                MiniBatch b;
                int64_t yielded = 0, seeds_yielded = 0;
                while (loader.Next(&b)) {
                  ++yielded;
                  seeds_yielded += b.batch_size;
                }
                EXPECT_EQ(yielded, batches) << what << " rank " << rank;
                EXPECT_EQ(seeds_yielded, drop_last ? batches * batch : count)
                    << what << " rank " << rank;
              }
            }
            int64_t total = first_count * world;
            if (drop_last) {
              EXPECT_EQ(total, n / world * world) << what;
              for (auto& [s, c] : seen) EXPECT_EQ(c, 1) << what << " seed " << s;  // no repeats
            } else {
              EXPECT_EQ(total, (n + world - 1) / world * world) << what;
              EXPECT_EQ(static_cast<int64_t>(seen.size()), n) << what;  // every seed once at least
              for (auto& [s, c] : seen)  // padding wraps around: at most ceil(total / n) each
                EXPECT_LE(c, (total + n - 1) / n) << what << " seed " << s;
            }
          }
        }
      }
    }
  }
}

TEST_F(LoaderTest, EpochsReshuffleAndRankComesFromTheEnvironment) {
  StartServers(1);
  auto local = Local();
  std::vector<int64_t> seeds(100);
  std::iota(seeds.begin(), seeds.end(), 0);
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  LoaderOptions o;
  o.batch_size = 10;
  o.drop_last = true;
  NodeLoader loader(local, seeds, o);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  EXPECT_EQ(loader.rank(), 1);
  EXPECT_EQ(loader.world_size(), 4);
  EXPECT_EQ(loader.num_batches(), 2);  // 25 seeds, batches of 10, last partial one dropped
  EXPECT_NE(loader.EpochSeeds(0), loader.EpochSeeds(1));
  EXPECT_EQ(loader.EpochSeeds(3), loader.EpochSeeds(3));
  MiniBatch b;
  int n = 0;
  while (loader.Next(&b)) ++n;
  EXPECT_EQ(n, 2);
  while (loader.Next(&b)) ++n;  // the next call runs epoch 1
  EXPECT_EQ(n, 4);
  EXPECT_THROW(NodeLoader(local, std::vector<int64_t>{5000}, o), std::invalid_argument);
  o.rank = 3;
  o.world_size = 2;
  EXPECT_THROW(NodeLoader(local, seeds, o), std::invalid_argument);
}

TEST_F(LoaderTest, BatchesCarryFeaturesLabelsAndOriginalIds) {
  StartServers(2);
  auto cluster = ConnectCluster();
  auto local = Local();
  std::unique_ptr<Session> ls;
  ASSERT_TRUE(local->NewSession(&ls).ok());
  LoaderOptions o;
  o.batch_size = 50;
  o.fanouts = {5, 5};
  o.original_ids = true;
  o.edge_ids = true;
  NodeLoader loader(cluster, local->SplitNodes(3), o);
  MiniBatch b;
  ASSERT_TRUE(loader.Next(&b));
  const int64_t n = b.n_id.size(0);
  std::vector<int64_t> ids(b.n_id.data_ptr<int64_t>(), b.n_id.data_ptr<int64_t>() + n);
  std::vector<float> x(n * 1433);
  std::vector<int64_t> y(n), orig(n);
  ASSERT_TRUE(ls->Features(ids, x.data()).ok());
  ASSERT_TRUE(ls->Labels(ids, y.data()).ok());
  ASSERT_TRUE(ls->OriginalIds(ids, orig.data()).ok());
  EXPECT_TRUE(torch::equal(b.x, torch::from_blob(x.data(), {n, 1433}, torch::kFloat)));
  EXPECT_TRUE(torch::equal(b.y, torch::from_blob(y.data(), {n}, torch::kLong)));
  EXPECT_TRUE(torch::equal(b.original_id, torch::from_blob(orig.data(), {n}, torch::kLong)));
  EXPECT_EQ(b.edge_index.size(0), 2);
  EXPECT_EQ(b.edge_index.size(1), b.num_sampled_edges[0] + b.num_sampled_edges[1]);
  EXPECT_EQ(b.hop_edge_index.size(), 2u);
  EXPECT_EQ(b.edge_id.size(0), b.edge_index.size(1));
  EXPECT_LT(b.edge_index.max().item<int64_t>(), n);
  LoaderStats s = loader.stats();
  EXPECT_GT(s.feature_bytes, 0);
  EXPECT_GT(s.sampled_edges, 0);
  EXPECT_EQ(s.local_bytes, 0);  // the fixture's servers export nothing here
}

// The loader's large arrays (x, edge_index) reuse the memory of batches the
// consumer let go of, never of one it still holds; and its stage counters
// add up: every batch's stages are inside its production.
TEST_F(LoaderTest, BatchMemoryIsReusedOnlyOnceLetGoAndStagesAddUp) {
  StartServers(2);
  auto cluster = ConnectCluster();
  auto local = Local();
  std::unique_ptr<Session> ls;
  ASSERT_TRUE(local->NewSession(&ls).ok());
  LoaderOptions o;
  o.batch_size = 100;
  o.fanouts = {10, 10};
  o.num_workers = 2;
  NodeLoader loader(cluster, local->SplitNodes(3), o);
  MiniBatch held;
  ASSERT_TRUE(loader.Next(&held));
  ASSERT_GE(held.x.numel() * 4, static_cast<int64_t>(BufferPool::kMinBytes));  // pooled
  const torch::Tensor copy = held.x.clone();
  int64_t batches = 1;
  for (int i = 0; i < 30;
       ++i) {  // several epochs: later batches come after earlier ones are let go
    MiniBatch b;
    if (!loader.Next(&b)) continue;  // an epoch's end; the next call starts the following one
    ++batches;
    EXPECT_NE(b.x.data_ptr(), held.x.data_ptr());
  }
  // The held batch's rows are its own still (no later batch wrote them).
  EXPECT_TRUE(torch::equal(held.x, copy));
  const int64_t n = held.n_id.size(0);
  std::vector<int64_t> ids(held.n_id.data_ptr<int64_t>(), held.n_id.data_ptr<int64_t>() + n);
  std::vector<float> x(n * 1433);
  ASSERT_TRUE(ls->Features(ids, x.data()).ok());
  EXPECT_TRUE(torch::equal(held.x, torch::from_blob(x.data(), {n, 1433}, torch::kFloat)));
  const LoaderStats s = loader.stats();
  EXPECT_GT(s.buffer_reuses, 0);  // batches let go of gave their memory to later ones
  EXPECT_GT(s.buffer_allocations, 0);
  EXPECT_GE(s.produce.calls, batches);
  double in_stages = 0;
  for (Stage st : {Stage::kRoute, Stage::kSampleTransfer, Stage::kMerge, Stage::kFeatureTransfer,
                   Stage::kFeatureDecode, Stage::kLabels})
    EXPECT_GT(s.stages[static_cast<int>(st)].calls, 0) << StageName(st);
  for (const StageTime& t : s.stages) {
    EXPECT_GE(t.cpu_s, 0);
    in_stages += t.wall_s;
  }
  EXPECT_LE(in_stages, s.produce.wall_s + 1e-6);
  EXPECT_GT(s.stages[static_cast<int>(Stage::kFeatureTransfer)].wall_s, 0);
}

TEST(BufferPoolTest, ReusesLetGoMemoryOfAFittingSizeAndOutlivesNothing) {
  auto pool = BufferPool::Create(2);
  const int64_t big = static_cast<int64_t>(BufferPool::kMinBytes);  // float32 elements: 4 MiB
  Array a = pool->Empty(DType::kFloat32, {big});
  void* first = a.data();
  Array b = pool->Empty(DType::kFloat32, {big});
  EXPECT_NE(b.data(), first);  // a is held
  a = Array();                 // let go
  Array c = pool->Empty(DType::kFloat32, {big / 2, 2});
  EXPECT_EQ(c.data(), first);  // fits, and is not more than twice the size
  c = Array();
  Array d = pool->Empty(DType::kFloat32, {big / 4});  // under half of the idle buffer: new memory
  EXPECT_NE(d.data(), first);
  Array small = pool->Empty(DType::kInt64, {10});  // small arrays are malloc's
  EXPECT_EQ(small.nbytes(), 80);
  EXPECT_THROW(pool->Empty(DType::kFloat32, {-1}), std::invalid_argument);
  BufferPool::Stats st = pool->stats();
  EXPECT_EQ(st.reused, 1);
  EXPECT_EQ(st.allocated, 3);
  EXPECT_EQ(st.idle, 1);
  // At most max_idle buffers stay idle; arrays may outlive their pool's owner.
  b = Array();
  d = Array();
  EXPECT_EQ(pool->stats().idle, 2);
  Array e = pool->Empty(DType::kFloat32, {big});
  pool.reset();
  std::fill_n(e.ptr<float>(), big, 1.0f);  // still this array's memory
  EXPECT_EQ(e.ptr<float>()[big - 1], 1.0f);
}

// Node batches (neighbor and subgraph sampling, features, labels, original
// ids) through 2 and 3 co-located servers equal the in-process ones and the
// Thrift path's, with local sampling on and off. All local: no request per
// batch at all (no Thrift or UCX bytes), and the servers' admin endpoints
// count what the clients did (path "local").
TEST_F(LoaderTest, CoLocatedServersAreReadAndSampledHereAndEqualEveryOtherPath) {
  for (int k : {2, 3}) {
    servers_.clear();
    StartServers(k, {}, /*export_local=*/true);
    std::shared_ptr<Cluster> thrift = ConnectThriftOnly();
    ASSERT_TRUE(thrift);
    for (int p = 0; p < k; ++p) ASSERT_EQ(thrift->local(p), nullptr);  // "tcp" means Thrift only
    auto local = Local();
    for (ClientPath path : {ClientPath::kLocal, ClientPath::kLocalRpcSampling}) {
      for (bool induced : {false, true}) {
        auto cluster = ConnectCluster(path);
        const std::string what =
            "k=" + std::to_string(k) + " " + PathName(path) + (induced ? " induced" : "");
        LoaderOptions o;
        o.batch_size = 97;
        o.fanouts = {6, 4};
        o.seed = 13 + k;
        o.edge_ids = true;
        o.original_ids = true;
        o.subgraph = induced;
        std::vector<int64_t> seeds = local->SplitNodes(1);
        seeds.push_back(seeds[0]);  // a repeated seed
        NodeLoader a_loader(cluster, seeds, o), b_loader(local, seeds, o),
            c_loader(thrift, seeds, o);
        MiniBatch a, b, c;
        int64_t batches = 0;
        while (a_loader.Next(&a)) {
          ASSERT_TRUE(b_loader.Next(&b)) << what;
          ASSERT_TRUE(c_loader.Next(&c)) << what;
          ++batches;
          for (auto [x, y, z, name] :
               {std::tuple{&a.n_id, &b.n_id, &c.n_id, "n_id"},
                {&a.x, &b.x, &c.x, "x"},
                {&a.y, &b.y, &c.y, "y"},
                {&a.edge_index, &b.edge_index, &c.edge_index, "edge_index"},
                {&a.edge_id, &b.edge_id, &c.edge_id, "edge_id"},
                {&a.original_id, &b.original_id, &c.original_id, "original_id"}}) {
            ExpectSameTensor(*x, *y, what + " " + name + " (LocalSource)");
            ExpectSameTensor(*x, *z, what + " " + name + " (Thrift)");
          }
        }
        EXPECT_FALSE(b_loader.Next(&b)) << what;
        EXPECT_GT(batches, 1) << what;
        LoaderStats s = a_loader.stats();
        EXPECT_GT(s.local_bytes, 0) << what;
        EXPECT_GT(s.local_rows, 0) << what;
        if (path == ClientPath::kLocal) {
          EXPECT_EQ(s.thrift_bytes, 0) << what;  // no request per batch
          EXPECT_EQ(s.ucx_bytes, 0) << what;
          EXPECT_GT(s.local_edges, 0) << what;
          if (!induced) {
            EXPECT_EQ(s.local_edges, s.sampled_edges) << what;
          }
        } else {
          EXPECT_EQ(s.local_edges, 0) << what;
          EXPECT_GT(s.thrift_bytes + s.ucx_bytes, 0) << what;  // sampled over RPC
        }
      }
    }
    // The sessions reported their work when they closed: each server counts it.
    for (int p = 0; p < k; ++p) {
      auto j = nlohmann::json::parse(servers_[p]->StatsJson());
      EXPECT_GT(j["totals"]["by_path"]["local"]["requests"].get<int64_t>(), 0) << "partition " << p;
      EXPECT_GT(j["totals"]["by_path"]["local"]["reply_bytes"].get<int64_t>(), 0)
          << "partition " << p;
      EXPECT_GT(j["totals"]["sampled_edges"].get<int64_t>(), 0) << "partition " << p;
      EXPECT_TRUE(j["local"]["enabled"].get<bool>());
      EXPECT_GE(j["local"]["handed"].get<int64_t>(), 4);  // one per cluster connected
    }
  }
}

// LABOR batches and random walks through every path (UCX data plane,
// Thrift, co-located exports sampled here, co-located with sampling over
// RPC), 2 and 3 servers, equal those of the whole dataset in process: the
// same nodes, edges, importance weights, walks and PinSAGE neighborhoods.
TEST_F(LoaderTest, LaborBatchesAndWalksThroughEveryPathEqualLocalOnes) {
  auto local = [&] { return Local(); };
  struct Path {
    int k;
    ClientPath path;
    bool thrift_only;
  };
  for (Path pp : {Path{2, ClientPath::kRpc, false}, Path{3, ClientPath::kRpc, false},
                  Path{2, ClientPath::kRpc, true}, Path{3, ClientPath::kLocal, false},
                  Path{2, ClientPath::kLocalRpcSampling, false}}) {
    servers_.clear();
    StartServers(pp.k, {}, /*export_local=*/pp.path != ClientPath::kRpc);
    std::shared_ptr<Cluster> cluster =
        pp.thrift_only ? ConnectThriftOnly() : ConnectCluster(pp.path);
    ASSERT_TRUE(cluster);
    auto whole = local();
    const std::string what =
        "k=" + std::to_string(pp.k) + " " + PathName(pp.path) + (pp.thrift_only ? " thrift" : "");
    LoaderOptions o;
    o.batch_size = 64;
    o.fanouts = {4, 3};
    o.seed = 21;
    o.edge_ids = true;
    o.labor = true;
    std::vector<int64_t> seeds = whole->SplitNodes(1);
    NodeLoader a_loader(cluster, seeds, o), b_loader(whole, seeds, o);
    MiniBatch a, b;
    int64_t batches = 0;
    while (a_loader.Next(&a)) {
      ASSERT_TRUE(b_loader.Next(&b)) << what;
      ++batches;
      ExpectSameTensor(a.n_id, b.n_id, what + " n_id");
      ExpectSameTensor(a.edge_index, b.edge_index, what + " edge_index");
      ExpectSameTensor(a.edge_id, b.edge_id, what + " edge_id");
      ExpectSameTensor(a.edge_weight, b.edge_weight, what + " edge_weight");
      ExpectSameTensor(a.x, b.x, what + " x");
      ASSERT_TRUE(a.edge_weight.defined());
      EXPECT_EQ(a.edge_weight.size(0), a.edge_index.size(1)) << what;
      EXPECT_GT(a.edge_weight.min().item<float>(), 0.0f) << what;
    }
    EXPECT_GT(batches, 1) << what;
    const LoaderStats st = a_loader.stats();
    if (pp.path == ClientPath::kLocal) {
      EXPECT_EQ(st.local_edges, st.sampled_edges) << what;
    } else if (pp.thrift_only) {
      EXPECT_EQ(st.ucx_bytes, 0) << what;
      EXPECT_GT(st.thrift_bytes, 0) << what;
    } else if (pp.path == ClientPath::kRpc && rpc::DataPlaneBuilt() &&
               cluster->data_plane() == rpc::DataPlaneMode::kUcx) {
      EXPECT_GT(st.ucx_bytes, 0) << what;  // the LABOR replies came by the data plane
    }
    // LABOR in the other loaders: link batches (strict binary negatives) and
    // subgraph batches (LABOR's nodes, every edge among them) equal local ones.
    {
      LinkSeeds links;
      const sampler::CsrArrays& g = whole_.csr;
      for (int64_t v = 0; v < 400; v += 3)
        if (g.indptr[v + 1] > g.indptr[v])
          links.src.push_back(g.indices[g.indptr[v]]), links.dst.push_back(v);
      LoaderOptions lo = o;
      lo.negative.mode = sampler::NegativeMode::kBinary;
      LinkLoader la(cluster, links, lo), lb(whole, links, lo);
      LoaderOptions so = o;
      so.subgraph = true;
      NodeLoader sa(cluster, seeds, so), sb(whole, seeds, so);
      MiniBatch x, y;
      while (la.Next(&x)) {
        ASSERT_TRUE(lb.Next(&y)) << what;
        ExpectSameTensor(x.n_id, y.n_id, what + " labor link n_id");
        ExpectSameTensor(x.edge_index, y.edge_index, what + " labor link edge_index");
        ExpectSameTensor(x.edge_weight, y.edge_weight, what + " labor link edge_weight");
        ExpectSameTensor(x.edge_label_index, y.edge_label_index, what + " labor edge_label_index");
      }
      while (sa.Next(&x)) {
        ASSERT_TRUE(sb.Next(&y)) << what;
        ExpectSameTensor(x.n_id, y.n_id, what + " labor subgraph n_id");
        ExpectSameTensor(x.edge_index, y.edge_index, what + " labor subgraph edge_index");
        EXPECT_FALSE(x.edge_weight.defined()) << what;  // induced edges: no estimator weights
      }
    }
    // PinSAGE hops: the same batches; per target at most fanout neighbors, weights summing to 1.
    {
      LoaderOptions po;
      po.batch_size = 64;
      po.fanouts = {5, 3};
      po.seed = 4;
      po.pinsage = true;
      po.walk.num_walks = 6;
      po.walk.walk_length = 4;
      po.walk.restart_prob = 0.3;
      NodeLoader pa(cluster, seeds, po), pb(whole, seeds, po);
      MiniBatch x, y;
      int64_t n = 0;
      while (pa.Next(&x)) {
        ASSERT_TRUE(pb.Next(&y)) << what;
        ++n;
        ExpectSameTensor(x.n_id, y.n_id, what + " pinsage n_id");
        ExpectSameTensor(x.edge_index, y.edge_index, what + " pinsage edge_index");
        ExpectSameTensor(x.edge_weight, y.edge_weight, what + " pinsage edge_weight");
        at::Tensor col = x.edge_index[1];
        at::Tensor per =
            torch::zeros({x.n_id.size(0)}, torch::kLong).index_add_(0, col, torch::ones_like(col));
        EXPECT_LE(per.max().item<int64_t>(), 5) << what;
        at::Tensor sums = torch::zeros({x.n_id.size(0)}).index_add_(0, col, x.edge_weight);
        at::Tensor has = per > 0;
        EXPECT_TRUE(torch::allclose(sums.index({has}), torch::ones({has.sum().item<int64_t>()}),
                                    1e-5, 1e-5))
            << what;
      }
      EXPECT_GT(n, 1) << what;
    }
    // Walks: first order, weighted-free node2vec with restarts and PinSAGE top-k.
    for (int variant = 0; variant < 2; ++variant) {
      WalkOptions wo;
      wo.walk_length = 6;
      wo.num_walks = 3;
      if (variant == 1) {
        wo.p = 0.5;
        wo.q = 2.0;
        wo.restart_prob = 0.2;
        wo.top_k = 4;
      }
      std::unique_ptr<WalkSampler> dw, lw;
      ASSERT_TRUE(WalkSampler::Create(cluster, wo, &dw).ok());
      ASSERT_TRUE(WalkSampler::Create(whole, wo, &lw).ok());
      std::vector<int64_t> walk_seeds(seeds.begin(), seeds.begin() + 50);
      WalkResult dr, lr;
      Status s = dw->Sample(walk_seeds, 77, &dr);
      ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
      ASSERT_TRUE(lw->Sample(walk_seeds, 77, &lr).ok());
      EXPECT_EQ(dr.walks, lr.walks) << what << " variant " << variant;
      EXPECT_EQ(dr.nodes, lr.nodes) << what;
      EXPECT_EQ(dr.counts, lr.counts) << what;
      EXPECT_EQ(dr.steps, lr.steps) << what;
      EXPECT_GT(dr.steps, 50 * 3 * 3) << what;
    }
    for (auto& srv : servers_) srv->Stop();
  }
}

// A co-located cluster keeps reading and sampling after its servers exit
// (the sealed memory lives while it is mapped); a restarted server is a new
// export, picked up by the next Connect.
TEST_F(LoaderTest, CoLocatedMappingsOutliveTheirServersAndARestartIsANewExport) {
  StartServers(2, {}, /*export_local=*/true);
  auto cluster = ConnectCluster(ClientPath::kLocal);
  auto local = Local();
  const uint64_t first = cluster->local(0)->export_id();
  for (auto& srv : servers_) srv->Stop();
  LoaderOptions o;
  o.batch_size = 64;
  o.fanouts = {5, 5};
  std::vector<int64_t> seeds = local->SplitNodes(3);
  NodeLoader a_loader(cluster, seeds, o), b_loader(local, seeds, o);
  MiniBatch a, b;
  int64_t batches = 0;
  while (a_loader.Next(&a)) {
    ASSERT_TRUE(b_loader.Next(&b));
    ExpectSameTensor(a.n_id, b.n_id, "n_id");
    ExpectSameTensor(a.x, b.x, "x");
    ExpectSameTensor(a.edge_index, b.edge_index, "edge_index");
    ++batches;
  }
  EXPECT_GT(batches, 1);
  servers_.clear();
  StartServers(2, {}, /*export_local=*/true);
  auto again = ConnectCluster(ClientPath::kLocal);
  EXPECT_NE(again->local(0)->export_id(), first);
}

// Cora's stored edges s -> d (row d holds s), every `step`-th.
LinkSeeds CoraEdges(const sampler::CsrArrays& g, int64_t step, bool labels) {
  LinkSeeds l;
  int64_t i = 0;
  for (int64_t d = 0; d < g.num_nodes(); ++d)
    for (int64_t e = g.indptr[d]; e < g.indptr[d + 1]; ++e, ++i)
      if (i % step == 0) {
        l.src.push_back(g.indices[e]);
        l.dst.push_back(d);
        if (labels) l.label.push_back(i % 3);
      }
  return l;
}

bool IsEdge(const sampler::CsrArrays& g, int64_t s, int64_t d) {
  for (int64_t e = g.indptr[d]; e < g.indptr[d + 1]; ++e)
    if (g.indices[e] == s) return true;
  return false;
}

// Link batches through 2 and 3 servers equal those of the dataset in
// process, tensor for tensor, for each negative sampling mode; negatives are
// never edges; seed nodes are the endpoints, ascending; labels follow PyG.
TEST_F(LoaderTest, LinkBatchesThroughServersEqualLocalOnesForEveryMode) {
  for (auto [k, path] : PartsAndPaths()) {
    servers_.clear();
    StartServers(k, {}, path != ClientPath::kRpc);
    auto cluster = ConnectCluster(path);
    auto local = Local();
    for (auto mode : {sampler::NegativeMode::kNone, sampler::NegativeMode::kBinary,
                      sampler::NegativeMode::kTriplet}) {
      const bool labels = mode == sampler::NegativeMode::kBinary && k == 2;
      LinkSeeds seeds = CoraEdges(whole_.csr, 37, labels);
      seeds.src.push_back(seeds.src[0]);  // a repeated seed edge keeps both positions
      seeds.dst.push_back(seeds.dst[0]);
      if (labels) seeds.label.push_back(seeds.label[0]);
      LoaderOptions o;
      o.batch_size = 64;
      o.fanouts = {5, 3};
      o.seed = 5 + k;
      o.edge_ids = true;
      o.shuffle = false;
      o.negative.mode = mode;
      o.negative.amount = mode == sampler::NegativeMode::kTriplet ? 3 : 1.5;
      LinkLoader dist(cluster, seeds, o), loc(local, seeds, o);
      ASSERT_EQ(dist.num_batches(), (static_cast<int64_t>(seeds.src.size()) + 63) / 64);
      MiniBatch a, b;
      int64_t batches = 0, negatives = 0;
      const std::string what =
          "k=" + std::to_string(k) + " " + PathName(path) + " " + sampler::NegativeModeName(mode);
      while (dist.Next(&a)) {
        ASSERT_TRUE(loc.Next(&b)) << what;
        ++batches;
        for (auto [x, y, name] : {std::tuple{&a.n_id, &b.n_id, "n_id"},
                                  {&a.x, &b.x, "x"},
                                  {&a.y, &b.y, "y"},
                                  {&a.edge_index, &b.edge_index, "edge_index"},
                                  {&a.edge_id, &b.edge_id, "edge_id"},
                                  {&a.input_id, &b.input_id, "input_id"},
                                  {&a.edge_label_index, &b.edge_label_index, "edge_label_index"},
                                  {&a.edge_label, &b.edge_label, "edge_label"},
                                  {&a.src_index, &b.src_index, "src_index"},
                                  {&a.dst_pos_index, &b.dst_pos_index, "dst_pos_index"},
                                  {&a.dst_neg_index, &b.dst_neg_index, "dst_neg_index"}})
          ExpectSameTensor(*x, *y, what + " " + name);
        const int64_t p = a.input_id.size(0);
        const int64_t* n_id = a.n_id.data_ptr<int64_t>();
        const int64_t* input = a.input_id.data_ptr<int64_t>();
        // Seed nodes: distinct, ascending.
        for (int64_t i = 1; i < a.batch_size; ++i) ASSERT_LT(n_id[i - 1], n_id[i]) << what;
        auto global = [&](const at::Tensor& t, int64_t i) {
          const int64_t l = t.data_ptr<int64_t>()[i];
          EXPECT_LT(l, a.batch_size) << what;  // endpoints are seed nodes
          return n_id[l];
        };
        if (mode == sampler::NegativeMode::kTriplet) {
          ASSERT_FALSE(a.edge_label_index.defined());
          ASSERT_EQ(a.dst_neg_index.sizes(), (std::vector<int64_t>{p, 3}));
          at::Tensor neg = a.dst_neg_index.contiguous();
          for (int64_t i = 0; i < p; ++i) {
            EXPECT_EQ(global(a.src_index, i), seeds.src[input[i]]) << what;
            EXPECT_EQ(global(a.dst_pos_index, i), seeds.dst[input[i]]) << what;
            for (int64_t j = 0; j < 3; ++j, ++negatives)
              EXPECT_FALSE(IsEdge(whole_.csr, seeds.src[input[i]], global(neg, i * 3 + j))) << what;
          }
          continue;
        }
        const int64_t m =
            mode == sampler::NegativeMode::kBinary ? (3 * p + 1) / 2 : 0;  // ceil(1.5 p)
        ASSERT_EQ(a.edge_label_index.sizes(), (std::vector<int64_t>{2, p + m})) << what;
        at::Tensor eli = a.edge_label_index.contiguous();
        for (int64_t i = 0; i < p + m; ++i) {
          const int64_t s = global(eli, i), d = global(eli, p + m + i);
          if (i < p) {
            EXPECT_EQ(s, seeds.src[input[i]]) << what;
            EXPECT_EQ(d, seeds.dst[input[i]]) << what;
          } else {
            EXPECT_FALSE(IsEdge(whole_.csr, s, d))
                << what << ": negative " << s << " -> " << d << " is an edge";
            ++negatives;
          }
        }
        if (mode == sampler::NegativeMode::kNone) {
          EXPECT_FALSE(a.edge_label.defined());
        } else if (labels) {
          ASSERT_EQ(a.edge_label.scalar_type(), torch::kLong);
          for (int64_t i = 0; i < p + m; ++i)  // labels 0..2 shifted to 1..3; negatives 0
            EXPECT_EQ(a.edge_label[i].item<int64_t>(), i < p ? seeds.label[input[i]] + 1 : 0)
                << what;
        } else {
          ASSERT_EQ(a.edge_label.scalar_type(), torch::kFloat);
          EXPECT_EQ(a.edge_label.sum().item<float>(), static_cast<float>(p)) << what;
        }
      }
      EXPECT_FALSE(loc.Next(&b)) << what;
      EXPECT_EQ(batches, dist.num_batches()) << what;
      if (mode != sampler::NegativeMode::kNone) {
        EXPECT_GT(negatives, 100) << what;
      }
    }
    for (auto& s : servers_) s->Stop();
  }
}

TEST_F(LoaderTest, LinkLoaderRefusesBadSeedsAndOptionsByName) {
  StartServers(2);
  auto local = Local();
  LoaderOptions o;
  o.negative.mode = sampler::NegativeMode::kBinary;
  auto message = [&](LinkSeeds s, LoaderOptions opt) -> std::string {
    try {
      LinkLoader l(local, std::move(s), opt);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message({{1, 2}, {3}, {}}, o), HasSubstr("2 sources but 1 destinations"));
  EXPECT_THAT(message({{1, 2}, {3, 2708}, {}}, o), HasSubstr("2708"));
  EXPECT_THAT(message({{1, 2}, {3, 2708}, {}}, o), HasSubstr("destination"));
  EXPECT_THAT(message({{-1}, {3}, {}}, o), HasSubstr("source"));
  EXPECT_THAT(message({{1, 2}, {3, 4}, {1}}, o), HasSubstr("1 edge labels for 2 seed edges"));
  EXPECT_THAT(message({{1, 2}, {3, 4}, {1, -2}}, o),
              HasSubstr("edge label -2 of seed edge 1 is negative"));
  LoaderOptions t = o;
  t.negative.mode = sampler::NegativeMode::kTriplet;
  EXPECT_THAT(message({{1}, {3}, {1}}, t), HasSubstr("triplet"));
  t.negative.amount = 2.5;
  EXPECT_THAT(message({{1}, {3}, {}}, t), HasSubstr("integer amount"));
  // Non-strict: PyG's negatives; some may be edges, none are checked.
  LoaderOptions loose = o;
  loose.negative.strict = false;
  loose.features = false;
  LinkLoader l(local, CoraEdges(whole_.csr, 50, false), loose);
  MiniBatch b;
  ASSERT_TRUE(l.Next(&b));
  EXPECT_EQ(b.edge_label_index.size(1), 2 * b.input_id.size(0));
}

// A dataset loaded once per test binary (by `load`) and partitioned at random
// in k parts once per k; `raw` gets the loaded graph (edge id = position).
const std::string& RandomlyPartitioned(const std::string& name, int k,
                                       const std::function<void(datasets::RawDataset*)>& load,
                                       datasets::RawDataset* raw) {
  static datasets::testing::TempDir tmp;
  static std::map<std::pair<std::string, int>, std::string> dirs;
  static std::map<std::string, datasets::RawDataset> loaded;
  auto [at, fresh] = loaded.try_emplace(name);
  if (fresh) load(&at->second);
  const datasets::RawDataset& ds = at->second;
  if (raw) *raw = ds;
  auto it = dirs.find({name, k});
  if (it != dirs.end()) return it->second;
  datasets::PartitionOptions po;
  po.num_parts = k;
  po.method = datasets::PartitionMethod::kRandom;
  po.quiet = true;
  std::vector<int32_t> part;
  std::vector<std::string> notes;
  EXPECT_TRUE(datasets::ComputePartition(ds, po, &part, &notes).ok());
  datasets::WriteOptions wo;
  wo.quiet = true;
  wo.method = "random";
  std::string dir = tmp.Sub(name + std::to_string(k));
  Status st = datasets::WritePartitionedDataset(ds, part, k, wo, dir, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return dirs[{name, k}] = dir;
}

// CollegeMsg (SNAP temporal) with its timestamps, in k random parts.
// A batch built for seeds the caller chose (SampleBatch: fanout.pyg's
// sampler, whose batches PyG's loaders pick) is the loader's batch for those
// seeds and request seed, node and link batches alike, through the servers
// and in process; what the loaders refuse it refuses by name.
TEST_F(LoaderTest, SampleBatchForChosenSeedsEqualsTheLoadersBatch) {
  StartServers(2);
  auto cluster = ConnectCluster();
  auto local = Local();
  std::unique_ptr<Session> remote_session, local_session;
  ASSERT_TRUE(cluster->NewSession(&remote_session).ok());
  ASSERT_TRUE(local->NewSession(&local_session).ok());
  const std::pair<Source*, Session*> sources[] = {{cluster.get(), remote_session.get()},
                                                  {local.get(), local_session.get()}};
  LoaderOptions o;
  o.batch_size = 50;
  o.fanouts = {5, 3};
  o.shuffle = false;
  o.seed = 9;
  o.edge_ids = true;
  o.num_workers = 1;
  std::vector<int64_t> seeds(170);
  std::iota(seeds.begin(), seeds.end(), int64_t{300});
  seeds[7] = seeds[3];  // a repeated seed
  NodeLoader nodes(cluster, seeds, o);
  MiniBatch a;
  for (int64_t b = 0; nodes.Next(&a); ++b) {
    BatchSeeds chosen;
    const int64_t end = std::min<int64_t>(170, (b + 1) * 50);
    chosen.nodes.assign(seeds.begin() + b * 50, seeds.begin() + end);
    for (auto [source, session] : sources) {
      MiniBatch c;
      Status st = SampleBatch(*source, session, chosen, NodeKey(o.seed, 0, b), o, &c);
      ASSERT_TRUE(st.ok()) << st.ToString();
      for (auto [x, y, name] : {std::tuple{&a.n_id, &c.n_id, "n_id"},
                                {&a.x, &c.x, "x"},
                                {&a.y, &c.y, "y"},
                                {&a.edge_index, &c.edge_index, "edge_index"},
                                {&a.edge_id, &c.edge_id, "edge_id"}})
        ExpectSameTensor(*x, *y, "node batch " + std::to_string(b) + " " + name);
      EXPECT_EQ(a.num_sampled_nodes, c.num_sampled_nodes);
      EXPECT_TRUE(torch::equal(c.input_id, torch::arange(end - b * 50, torch::kLong)));
    }
    // The loader's input_id: each seed's position, a repeated seed keeping its own.
    EXPECT_TRUE(torch::equal(a.input_id, torch::arange(b * 50, end, torch::kLong)));
  }
  LinkSeeds all = CoraEdges(whole_.csr, 37, false);
  all.src.resize(128);
  all.dst.resize(128);
  for (auto mode : {sampler::NegativeMode::kBinary, sampler::NegativeMode::kTriplet}) {
    o.negative.mode = mode;
    o.negative.amount = 2;
    LinkLoader links(cluster, all, o);
    for (int64_t b = 0; links.Next(&a); ++b) {
      auto batch = std::make_shared<LinkSeeds>();
      const int64_t end = std::min<int64_t>(128, (b + 1) * 50);
      batch->src.assign(all.src.begin() + b * 50, all.src.begin() + end);
      batch->dst.assign(all.dst.begin() + b * 50, all.dst.begin() + end);
      BatchSeeds chosen;
      chosen.links = batch;
      for (auto [source, session] : sources) {
        MiniBatch c;
        Status st = SampleBatch(*source, session, chosen, NodeKey(o.seed, 0, b), o, &c);
        ASSERT_TRUE(st.ok()) << st.ToString();
        const std::string what =
            std::string(sampler::NegativeModeName(mode)) + " batch " + std::to_string(b) + " ";
        for (auto [x, y, name] : {std::tuple{&a.n_id, &c.n_id, "n_id"},
                                  {&a.edge_index, &c.edge_index, "edge_index"},
                                  {&a.edge_label_index, &c.edge_label_index, "edge_label_index"},
                                  {&a.edge_label, &c.edge_label, "edge_label"},
                                  {&a.src_index, &c.src_index, "src_index"},
                                  {&a.dst_neg_index, &c.dst_neg_index, "dst_neg_index"}})
          ExpectSameTensor(*x, *y, what + name);
      }
    }
  }
  // Refusals, by name.
  MiniBatch c;
  BatchSeeds none;
  Status st = SampleBatch(*cluster, remote_session.get(), none, 1, o, &c);
  EXPECT_TRUE(st.IsInvalidArgument() && st.message().find("no seeds") != std::string::npos)
      << st.ToString();
  BatchSeeds outside;
  outside.nodes = {0, cluster->num_nodes()};
  st = SampleBatch(*cluster, remote_session.get(), outside, 1, o, &c);
  EXPECT_TRUE(st.IsInvalidArgument() && st.message().find("seed") != std::string::npos)
      << st.ToString();
  outside.nodes = {0, 1};
  outside.times = {5};
  st = SampleBatch(*cluster, remote_session.get(), outside, 1, o, &c);
  EXPECT_TRUE(st.IsInvalidArgument() &&
              st.message().find("1 input times for 2 seeds") != std::string::npos)
      << st.ToString();
  auto bad = std::make_shared<LinkSeeds>();
  bad->src = {0, 1};
  bad->dst = {2};
  BatchSeeds uneven;
  uneven.links = bad;
  st = SampleBatch(*cluster, remote_session.get(), uneven, 1, o, &c);
  EXPECT_TRUE(st.IsInvalidArgument() &&
              st.message().find("2 sources but 1 destinations") != std::string::npos)
      << st.ToString();
}

const std::string& CollegeMsgDir(int k, datasets::RawDataset* raw = nullptr) {
  return RandomlyPartitioned(
      "collegemsg", k,
      [](datasets::RawDataset* ds) {
        datasets::LoadOptions lo;
        lo.quiet = true;
        lo.edge_times = true;
        std::vector<std::string> notes;
        Status st = datasets::LoadDataset(
            "snap", datasets::testing::DataDir() + "/snap-temporal/CollegeMsg.txt.gz", lo, ds,
            &notes);
        EXPECT_TRUE(st.ok()) << st.ToString();
      },
      raw);
}

// Servers for every partition of `dir`, and a cluster over them.
std::shared_ptr<Cluster> ServeAll(const std::string& dir, int k,
                                  std::vector<std::unique_ptr<server::PartitionServer>>* servers,
                                  ClientPath path = ClientPath::kRpc) {
  ClusterSpec spec;
  if (path == ClientPath::kLocalRpcSampling) {
    spec.has_local_sampling = true;
    spec.local_sampling = false;
  }
  for (int p = 0; p < k; ++p) {
    server::ServerOptions o;
    o.dataset_dir = dir;
    o.partition = p;
    if (path == ClientPath::kRpc) o.local_socket = "off";
    servers->push_back(std::make_unique<server::PartitionServer>(o));
    Status st = servers->back()->Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
    spec.replicas.push_back({"127.0.0.1:" + std::to_string(servers->back()->port())});
  }
  std::shared_ptr<Cluster> c;
  Status st = Cluster::Connect(spec, {}, &c);
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (int p = 0; c && p < k; ++p)
    EXPECT_EQ(c->local(p) != nullptr, path != ClientPath::kRpc)
        << PathName(path) << " partition " << p;
  return c;
}

// Temporal node and link batches through 2 and 3 servers equal those of the
// dataset in process; no sampled edge is later than its seed's time (every
// batch of several epochs: a property test over thousands of seeds); trees
// are disjoint; both strategies.
TEST(TemporalLoaderTest, TemporalBatchesThroughServersEqualLocalOnesAndNeverLookAhead) {
  datasets::RawDataset raw;
  CollegeMsgDir(2, &raw);
  ASSERT_EQ(raw.num_edges(), 59835);
  const int64_t t_min = *std::min_element(raw.edge_times.begin(), raw.edge_times.end());
  const int64_t t_max = *std::max_element(raw.edge_times.begin(), raw.edge_times.end());
  for (auto [k, path] : PartsAndPaths()) {
    const std::string& dir = CollegeMsgDir(k);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(dir, k, &servers, path);
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir, &local).ok());
    // Node seeds: every node, at a time spread over the data's span.
    std::vector<int64_t> seeds, times;
    SplitMix64 rng(k);
    for (int64_t v = 0; v < local->num_nodes(); ++v) {
      seeds.push_back(v);
      times.push_back(t_min + static_cast<int64_t>(
                                  DrawBelow(rng.Next(), static_cast<uint64_t>(t_max - t_min + 1))));
    }
    // Link seeds: stored edges s -> d at their own time (row d holds s: direction in).
    LinkSeeds links;
    std::vector<int64_t> link_times;
    for (int64_t i = 0; i < raw.num_edges(); i += 97) {
      links.src.push_back(
          raw.src[i]);  // LocalSource ids differ from raw ones: map through original ids below
      links.dst.push_back(raw.dst[i]);
      link_times.push_back(raw.edge_times[i]);
    }
    // raw ids -> stored ids.
    std::vector<int64_t> stored(raw.num_nodes, -1);
    {
      std::unique_ptr<Session> s;
      ASSERT_TRUE(local->NewSession(&s).ok());
      std::vector<int64_t> all(local->num_nodes()), orig(local->num_nodes());
      std::iota(all.begin(), all.end(), 0);
      ASSERT_TRUE(s->OriginalIds(all, orig.data()).ok());
      for (int64_t v = 0; v < local->num_nodes(); ++v) {
        const int64_t r =
            std::lower_bound(raw.original_ids.begin(), raw.original_ids.end(), orig[v]) -
            raw.original_ids.begin();
        stored[r] = v;
      }
    }
    for (auto& v : links.src) v = stored[v];
    for (auto& v : links.dst) v = stored[v];
    for (auto strategy : {sampler::TemporalStrategy::kUniform, sampler::TemporalStrategy::kLast}) {
      const std::string what = "k=" + std::to_string(k) + " " + PathName(path) + " " +
                               sampler::TemporalStrategyName(strategy);
      LoaderOptions o;
      o.batch_size = 128;
      o.fanouts = {5, 3};
      o.edge_ids = true;
      o.seed = 3;
      o.temporal_strategy = strategy;
      o.input_time = times;
      NodeLoader dist(cluster, seeds, o), loc(local, seeds, o);
      LoaderOptions lo = o;
      lo.input_time = link_times;
      lo.negative.mode = sampler::NegativeMode::kBinary;
      LinkLoader ldist(cluster, links, lo), lloc(local, links, lo);
      int64_t edges = 0;
      for (auto [d, l] : {std::pair<NodeLoader*, NodeLoader*>{&dist, &loc}, {&ldist, &lloc}}) {
        MiniBatch a, b;
        for (int64_t epoch = 0; epoch < (d == &dist ? 2 : 1); ++epoch) {
          d->SetEpoch(epoch);
          l->SetEpoch(epoch);
          while (d->Next(&a)) {
            ASSERT_TRUE(l->Next(&b)) << what;
            for (auto [x, y, name] :
                 {std::tuple{&a.n_id, &b.n_id, "n_id"},
                  {&a.batch, &b.batch, "batch"},
                  {&a.edge_index, &b.edge_index, "edge_index"},
                  {&a.edge_id, &b.edge_id, "edge_id"},
                  {&a.seed_time, &b.seed_time, "seed_time"},
                  {&a.x, &b.x, "x"},
                  {&a.edge_label_index, &b.edge_label_index, "edge_label_index"}})
              ExpectSameTensor(*x, *y, what + " " + name);
            ASSERT_TRUE(a.batch.defined());
            const int64_t* tree = a.batch.data_ptr<int64_t>();
            const int64_t* seed_time = a.seed_time.data_ptr<int64_t>();
            const int64_t* row = a.edge_index[0].contiguous().data_ptr<int64_t>();
            at::Tensor col_t = a.edge_index[1].contiguous();
            const int64_t* col = col_t.data_ptr<int64_t>();
            at::Tensor row_t = a.edge_index[0].contiguous();
            row = row_t.data_ptr<int64_t>();
            const int64_t* eid = a.edge_id.data_ptr<int64_t>();
            for (int64_t e = 0; e < a.edge_index.size(1); ++e, ++edges) {
              ASSERT_EQ(tree[row[e]], tree[col[e]]) << what;
              ASSERT_LE(raw.edge_times[eid[e]], seed_time[tree[col[e]]])
                  << what << ": edge " << eid[e] << " looks ahead";
            }
          }
          EXPECT_FALSE(l->Next(&b));
        }
      }
      EXPECT_GT(edges, 10000) << what;
    }
    for (auto& s : servers) s->Stop();
  }
}

// Temporal negatives (active, historical) on CollegeMsg's messages: link
// batches through 2 servers (Thrift and co-located) equal local ones, and no
// negative's destination was first seen (among the seed edges) at or after
// its positive's time; historical negatives are earlier links of the source.
TEST(TemporalLoaderTest, TemporalNegativesThroughServersEqualLocalOnesAndNeverLookAhead) {
  datasets::RawDataset raw;
  CollegeMsgDir(2, &raw);
  for (ClientPath path : {ClientPath::kRpc, ClientPath::kLocal}) {
    const std::string& dir = CollegeMsgDir(2);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(dir, 2, &servers, path);
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir, &local).ok());
    // Seed edges: every 5th message, stored ids (original ids are the raw ones').
    std::unique_ptr<Session> s;
    ASSERT_TRUE(local->NewSession(&s).ok());
    std::vector<int64_t> all(local->num_nodes()), orig(local->num_nodes());
    std::iota(all.begin(), all.end(), 0);
    ASSERT_TRUE(s->OriginalIds(all, orig.data()).ok());
    std::map<int64_t, int64_t> stored;
    for (int64_t v = 0; v < local->num_nodes(); ++v) stored[orig[v]] = v;
    LinkSeeds links;
    std::vector<int64_t> times;
    for (int64_t i = 0; i < raw.num_edges(); i += 5) {
      links.src.push_back(stored.at(raw.original_ids[raw.src[i]]));
      links.dst.push_back(stored.at(raw.original_ids[raw.dst[i]]));
      times.push_back(raw.edge_times[i]);
    }
    std::map<int64_t, int64_t> first_dst;
    std::map<std::pair<int64_t, int64_t>, int64_t> first_pair;
    for (size_t i = 0; i < times.size(); ++i) {
      auto a = first_dst.emplace(links.dst[i], times[i]).first;
      a->second = std::min(a->second, times[i]);
      auto b = first_pair.emplace(std::pair{links.src[i], links.dst[i]}, times[i]).first;
      b->second = std::min(b->second, times[i]);
    }
    for (auto temporal :
         {sampler::TemporalNegatives::kActive, sampler::TemporalNegatives::kHistorical}) {
      const std::string what =
          std::string(PathName(path)) + " " + sampler::TemporalNegativesName(temporal);
      LoaderOptions o;
      o.batch_size = 256;
      o.fanouts = {4, 2};
      o.seed = 9;
      o.input_time = times;
      o.negative.mode = sampler::NegativeMode::kTriplet;
      o.negative.amount = 2;
      o.negative.temporal = temporal;
      LinkLoader dist(cluster, links, o), loc(local, links, o);
      MiniBatch a, b;
      int64_t checked = 0, earlier_links = 0;
      while (dist.Next(&a)) {
        ASSERT_TRUE(loc.Next(&b)) << what;
        for (auto [x, y, name] : {std::tuple{&a.n_id, &b.n_id, "n_id"},
                                  {&a.edge_index, &b.edge_index, "edge_index"},
                                  {&a.dst_neg_index, &b.dst_neg_index, "dst_neg_index"},
                                  {&a.seed_time, &b.seed_time, "seed_time"}})
          ExpectSameTensor(*x, *y, what + " " + name);
        const int64_t* nid = a.n_id.data_ptr<int64_t>();
        at::Tensor src = a.src_index.contiguous(),
                   neg = a.dst_neg_index.contiguous().view({src.size(0), -1});
        const int64_t* input = a.input_id.data_ptr<int64_t>();
        for (int64_t i = 0; i < src.size(0); ++i) {
          const int64_t t = times[input[i]], s_id = links.src[input[i]];
          ASSERT_EQ(nid[src[i].item<int64_t>()], s_id) << what;
          for (int64_t j = 0; j < neg.size(1); ++j, ++checked) {
            const int64_t d = nid[neg[i][j].item<int64_t>()];
            auto f = first_dst.find(d);
            // The earliest positives have no active destination yet (a uniform draw then).
            if (f == first_dst.end() || f->second >= t) {
              bool none_before = true;
              for (auto [dd, ft] : first_dst) none_before &= ft >= t;
              ASSERT_TRUE(none_before) << what << ": negative " << d << " looks ahead of " << t;
            }
            auto pr = first_pair.find({s_id, d});
            earlier_links += pr != first_pair.end() && pr->second < t;
          }
        }
      }
      EXPECT_FALSE(loc.Next(&b)) << what;
      EXPECT_GT(checked, 10000) << what;
      if (temporal == sampler::TemporalNegatives::kHistorical)
        EXPECT_GT(earlier_links, checked / 2) << what;
    }
    // Temporal negatives need the seed edges' times.
    LoaderOptions bad;
    bad.negative.mode = sampler::NegativeMode::kBinary;
    bad.negative.temporal = sampler::TemporalNegatives::kActive;
    try {
      LinkLoader l(cluster, links, bad);
      ADD_FAILURE() << "temporal negatives without times";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("edge_label_time"));
    }
    for (auto& sv : servers) sv->Stop();
  }
}

TEST(TemporalLoaderTest, TemporalOptionsAndDatasetsWithoutTimesAreRefusedByName) {
  std::vector<std::unique_ptr<server::PartitionServer>> servers;
  auto cora = ServeAll(server::testing::CoraDir(2), 2, &servers);
  LoaderOptions o;
  o.fanouts = {3};
  o.input_time = {5, 6};
  NodeLoader loader(cora, {1, 2}, o);
  MiniBatch b;
  try {
    loader.Next(&b);
    ADD_FAILURE() << "temporal sampling on Cora (no timestamps) should fail";
  } catch (const LoaderError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--edge-times"));
  }
  auto message = [&](std::vector<int64_t> seeds, LoaderOptions opt) -> std::string {
    try {
      NodeLoader l(cora, std::move(seeds), opt);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message({1, 2, 3}, o), HasSubstr("2 input times for 3 seeds"));
  LoaderOptions r = o;
  r.replace = true;
  EXPECT_THAT(message({1, 2}, r), HasSubstr("without replacement"));
  r = o;
  r.subgraph = true;
  EXPECT_THAT(message({1, 2}, r), HasSubstr("induced"));
  for (auto& s : servers) s->Stop();
}

TEST_F(LoaderTest, ServerErrorsSurfaceWithTheServersAddress) {
  StartServers(2);
  auto cluster = ConnectCluster();
  std::vector<int64_t> seeds(2708);
  std::iota(seeds.begin(), seeds.end(), 0);
  LoaderOptions o;
  o.batch_size = 8;
  o.fanouts = {2};
  o.shuffle = false;
  o.prefetch = 1;
  o.num_workers = 1;
  NodeLoader loader(cluster, seeds, o);
  MiniBatch b;
  ASSERT_TRUE(loader.Next(&b));
  int port = servers_[1]->port();
  servers_[1]->Stop();
  try {
    while (loader.Next(&b)) {
    }
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.1:" + std::to_string(port)));
  }
}

// One NodeLoader epoch through `spec`: its batches into *out, its stats into
// *stats; `fault` (where given) runs once `fault_at` batches are in.
void RunEpoch(const ClusterSpec& spec, const rpc::RpcOptions& ro, const std::vector<int64_t>& seeds,
              const LoaderOptions& o, size_t fault_at, const std::function<void()>& fault,
              std::vector<MiniBatch>* out, LoaderStats* stats) {
  std::shared_ptr<Cluster> c;
  Status st = Cluster::Connect(spec, ro, &c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  NodeLoader loader(c, seeds, o);
  MiniBatch b;
  while (loader.Next(&b)) {
    out->push_back(b);
    if (fault && out->size() == fault_at) fault();
  }
  *stats = loader.stats();
}

// The same batches, tensor for tensor (n_id, edge_index, edge_id, x, y).
void ExpectSameBatches(const std::vector<MiniBatch>& a, const std::vector<MiniBatch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].n_id, b[i].n_id)) << i;
    EXPECT_TRUE(torch::equal(a[i].edge_index, b[i].edge_index)) << i;
    EXPECT_TRUE(torch::equal(a[i].edge_id, b[i].edge_id)) << i;
    EXPECT_TRUE(torch::equal(a[i].x, b[i].x)) << i;
    EXPECT_TRUE(torch::equal(a[i].y, b[i].y)) << i;
  }
}

// Two replicas per partition: a replica that stops mid-epoch changes nothing
// (the same request goes to the other replica: the same batches); a
// partition with every replica gone fails naming each address tried.
TEST_F(LoaderTest, AReplicaThatStopsMidEpochChangesNoBatch) {
  StartServers(2);
  std::vector<std::unique_ptr<server::PartitionServer>> backups;
  ClusterSpec spec;
  StartBackups(&backups, &spec);
  rpc::RpcOptions ro;
  ro.call_timeout_ms = 3000;
  ro.failover_backoff_ms = 10;
  std::vector<int64_t> seeds(2708);
  std::iota(seeds.begin(), seeds.end(), 0);
  LoaderOptions o;
  o.batch_size = 128;
  o.fanouts = {5, 5};
  o.seed = 11;
  o.edge_ids = true;
  o.rank = 0;
  o.world_size = 1;
  std::vector<MiniBatch> calm, disturbed;
  LoaderStats s0, s1;
  RunEpoch(spec, ro, seeds, o, 0, nullptr, &calm, &s0);
  // The loader's two sessions started on different replicas: both served.
  for (int p = 0; p < 2; ++p) {
    EXPECT_GT(nlohmann::json::parse(servers_[p]->StatsJson())["totals"]["requests"].get<int64_t>(),
              0)
        << p;
    EXPECT_GT(nlohmann::json::parse(backups[p]->StatsJson())["totals"]["requests"].get<int64_t>(),
              0)
        << p;
  }
  // Partition 1's first replica stops after 4 batches.
  RunEpoch(
      spec, ro, seeds, o, 4, [&] { servers_[1]->Stop(); }, &disturbed, &s1);
  EXPECT_GE(s1.failovers, 1);
  EXPECT_GE(s1.retries, 1);
  ExpectSameBatches(calm, disturbed);
  // Both replicas of partition 1 gone: an error naming both.
  std::shared_ptr<Cluster> c;
  ASSERT_TRUE(Cluster::Connect(spec, ro, &c).ok());
  NodeLoader loader(c, seeds, o);
  MiniBatch b;
  ASSERT_TRUE(loader.Next(&b));
  backups[1]->Stop();
  try {
    while (loader.Next(&b)) {
    }
    FAIL() << "expected an exception";
  } catch (const LoaderError& e) {
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.1:" + std::to_string(servers_[1]->port())));
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.1:" + std::to_string(backups[1]->port())));
  }
}

// Cora's 2 partitions served by 2 fanout-server processes each (partition p:
// kids[2p], kids[2p+1]), killed by `reaper` at the end, and the cluster spec
// listing them.
void StartReplicatedCora(std::vector<server::testing::Child>* kids, server::testing::Reaper* reaper,
                         ClusterSpec* spec) {
  const std::string& dir = server::testing::CoraDir(2);
  kids->reserve(4);
  for (int i = 0; i < 4; ++i) {
    kids->push_back(server::testing::StartChild(dir, i / 2));
    reaper->c.push_back(&kids->back());
    ASSERT_GT(kids->back().port, 0) << "fanout-server did not start";
  }
  const auto& k = *kids;
  spec->replicas = {{k[0].address(), k[1].address()}, {k[2].address(), k[3].address()}};
}

// Replicas as fanout-server processes (2 partitions x 2): kill -9 of one and,
// in another run, SIGSTOP of another, each mid-epoch: every batch equals the
// undisturbed run's (the stopped one is found by the deadline).
TEST(LoaderFaultTest, AReplicaKilledOrStoppedMidEpochChangesNoBatch) {
  std::vector<server::testing::Child>
      kids;  // partition 0: kids[0], kids[1]; partition 1: kids[2], kids[3]
  server::testing::Reaper reaper;
  ClusterSpec spec;
  ASSERT_NO_FATAL_FAILURE(StartReplicatedCora(&kids, &reaper, &spec));
  rpc::RpcOptions ro;
  ro.call_timeout_ms = 1500;
  ro.failover_backoff_ms = 10;
  std::vector<int64_t> seeds(2708);
  for (int64_t i = 0; i < 2708; ++i) seeds[i] = (i * 7) % 2708;
  LoaderOptions o;
  o.batch_size = 128;
  o.fanouts = {5, 5};
  o.seed = 5;
  o.edge_ids = true;
  // With a fault: failed over, counted on both servers (the failed one and
  // the one that took over).
  auto expect_failed_over = [](const LoaderStats& s) {
    EXPECT_GE(s.failovers, 1);
    EXPECT_GE(s.retries, 1);
    int64_t failures = 0, failovers_to = 0;
    ASSERT_EQ(s.servers.size(), 4u);
    for (const ReplicaHealth& h : s.servers) {
      failures += h.failures;
      failovers_to += h.failovers_to;
    }
    EXPECT_GE(failures, 1);
    EXPECT_GE(failovers_to, 1);
  };
  std::vector<MiniBatch> calm, killed, stopped;
  LoaderStats s;
  RunEpoch(spec, ro, seeds, o, 0, nullptr, &calm, &s);
  RunEpoch(
      spec, ro, seeds, o, 4, [&] { server::testing::KillProcess(&kids[2]); }, &killed, &s);
  expect_failed_over(s);
  ExpectSameBatches(calm, killed);
  RunEpoch(
      spec, ro, seeds, o, 4, [&] { server::testing::StopProcess(kids[1].pid); }, &stopped, &s);
  expect_failed_over(s);
  ExpectSameBatches(calm, stopped);
}

// A replica SIGSTOPped mid-epoch, with a deadline far longer than the test:
// requests waiting on it are given up as soon as its health check fails and
// go to the other replica; no batch changes. (Without that the epoch would
// wait out the 120 s deadline; the test asserts on the counters, not time.)
// Over the data plane (kAuto: UCX to these children) and over Thrift (kTcp):
// a Thrift call waiting on the stopped replica has its socket shut down by the
// health verdict.
class StoppedReplicaTest : public ::testing::TestWithParam<rpc::DataPlaneMode> {};

TEST_P(StoppedReplicaTest, AStoppedReplicaIsGivenUpOnItsHealthVerdictNotItsDeadline) {
  std::vector<server::testing::Child>
      kids;  // partition 0: kids[0], kids[1]; partition 1: kids[2], kids[3]
  server::testing::Reaper reaper;
  ClusterSpec spec;
  ASSERT_NO_FATAL_FAILURE(StartReplicatedCora(&kids, &reaper, &spec));
  rpc::RpcOptions ro;
  ro.call_timeout_ms = 120000;
  ro.health_check_ms = 200;
  ro.failover_backoff_ms = 10;
  ro.data_plane = GetParam();
  std::vector<int64_t> seeds(2708);
  for (int64_t i = 0; i < 2708; ++i) seeds[i] = (i * 11) % 2708;
  LoaderOptions o;
  o.batch_size = 64;
  o.fanouts = {5, 5};
  o.seed = 9;
  o.edge_ids = true;
  o.num_workers = 2;  // sessions start on alternate replicas: one is on each
  std::vector<MiniBatch> calm, stopped;
  LoaderStats s0, s1;
  RunEpoch(spec, ro, seeds, o, 0, nullptr, &calm, &s0);
  RunEpoch(
      spec, ro, seeds, o, 3, [&] { server::testing::StopProcess(kids[1].pid); }, &stopped, &s1);
  ExpectSameBatches(calm, stopped);
  EXPECT_EQ(s0.health_abandons, 0);
  EXPECT_GE(s1.health_abandons, 1);
  EXPECT_GE(s1.failovers, 1);
  if (GetParam() == rpc::DataPlaneMode::kTcp) {
    EXPECT_EQ(s1.ucx_bytes, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, StoppedReplicaTest,
                         ::testing::Values(rpc::DataPlaneMode::kAuto, rpc::DataPlaneMode::kTcp),
                         [](const auto& info) {
                           return info.param == rpc::DataPlaneMode::kTcp ? "Thrift" : "DataPlane";
                         });

// Health checks: a replica that stops answering is marked so, new sessions
// start on the others, and once it is back the sessions whose share it was
// return to it. Per-replica failures and failovers are counted.
TEST_F(LoaderTest, HealthChecksSteerSessionsAwayFromADownReplicaAndBackWhenItReturns) {
  StartServers(2);
  std::vector<std::unique_ptr<server::PartitionServer>> backups;
  ClusterSpec spec;
  StartBackups(&backups, &spec);
  rpc::RpcOptions ro;
  ro.health_check_ms = 50;
  ro.failover_backoff_ms = 10;
  std::shared_ptr<Cluster> c;
  ASSERT_TRUE(Cluster::Connect(spec, ro, &c).ok());
  auto health = [&](int p, int r) {
    for (const ReplicaHealth& h : c->Health())
      if (h.partition == p && h.address == spec.replicas[p][r]) return h;
    ADD_FAILURE() << "no replica " << r << " of partition " << p;
    return ReplicaHealth{};
  };
  auto requests = [](const server::PartitionServer& s) {
    return nlohmann::json::parse(s.StatsJson())["totals"]["requests"].get<int64_t>();
  };
  auto wait_for = [](const std::function<bool()>& pred) {
    for (int i = 0; i < 500 && !pred(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return pred();
  };
  ASSERT_TRUE(wait_for([&] { return health(0, 1).checks >= 2; }));
  EXPECT_TRUE(health(0, 1).healthy);
  // Partition 0's second replica goes down.
  const int port = backups[0]->port();
  backups[0]->Stop();
  ASSERT_TRUE(wait_for([&] { return !health(0, 1).healthy; }));
  EXPECT_GE(health(0, 1).checks_failed, 1);
  EXPECT_FALSE(health(0, 1).last_error.empty());
  // Four sessions, two of which would start there: all start on the first.
  std::vector<std::unique_ptr<Session>> sessions(4);
  std::vector<int64_t> ids = {1, 2, 3};
  std::vector<float> rows(ids.size() * c->feature_dim());
  for (auto& s : sessions) {
    ASSERT_TRUE(c->NewSession(&s).ok());
    ASSERT_TRUE(s->Features(ids, rows.data()).ok());
    EXPECT_EQ(s->stats().failovers, 0);
  }
  // It comes back on the same port: the sessions whose share it was return.
  server::ServerOptions so;
  so.dataset_dir = dir_;
  so.partition = 0;
  so.port = port;
  backups[0] = std::make_unique<server::PartitionServer>(so);
  ASSERT_TRUE(backups[0]->Start().ok());
  ASSERT_TRUE(wait_for([&] { return health(0, 1).healthy; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past each session's next try
  for (auto& s : sessions) ASSERT_TRUE(s->Features(ids, rows.data()).ok());
  EXPECT_GE(requests(*backups[0]), 2);
  // A request that fails there is counted against it, and the move to the other.
  const ReplicaHealth before = health(0, 0);
  backups[0]->Stop();
  for (auto& s : sessions) ASSERT_TRUE(s->Features(ids, rows.data()).ok());
  EXPECT_GE(health(0, 1).failures, 1);
  EXPECT_GE(health(0, 0).failovers_to, before.failovers_to + 1);
}

// A rolling restart of every replica, one at a time, during training (2
// partitions x 2 replicas): the loss trace equals the undisturbed run's.
TEST_F(LoaderTest, ARollingRestartDuringTrainingLeavesTheLossTraceUnchanged) {
  StartServers(2);
  std::vector<std::unique_ptr<server::PartitionServer>> backups;
  ClusterSpec spec;
  StartBackups(&backups, &spec);
  // Every replica as (which list, index): restarted on its own port.
  std::vector<std::unique_ptr<server::PartitionServer>*> all = {&servers_[0], &backups[0],
                                                                &servers_[1], &backups[1]};
  rpc::RpcOptions ro;
  ro.failover_backoff_ms = 10;
  torch::set_num_threads(1);  // bitwise-reproducible reductions
  examples::TrainOptions o;
  o.epochs = 3;
  o.evaluate_every_epoch = false;
  o.seed = 9;
  auto train = [&](bool restart) {
    std::shared_ptr<Cluster> c;
    Status st = Cluster::Connect(spec, ro, &c);
    EXPECT_TRUE(st.ok()) << st.ToString();
    int batches = 0;
    examples::TrainOptions t = o;
    if (restart) {
      t.on_batch = [&](int, const MiniBatch&) {
        ++batches;
        if (batches % 2 != 0 || batches / 2 > static_cast<int>(all.size())) return;
        std::unique_ptr<server::PartitionServer>& s = *all[batches / 2 - 1];
        server::ServerOptions so;
        so.dataset_dir = dir_;
        so.partition = batches / 2 - 1 < 2 ? 0 : 1;  // all[] lists partition 0, 0, 1, 1
        so.port = s->port();
        s->Stop();
        s = std::make_unique<server::PartitionServer>(so);
        Status started = s->Start();
        ASSERT_TRUE(started.ok()) << started.ToString();
      };
    }
    auto r = examples::TrainGraphSage(c, t);
    if (restart) {
      EXPECT_GE(batches, 8);
    }
    return r;
  };
  auto calm = train(false);
  auto rolled = train(true);
  ASSERT_EQ(calm.losses.size(), rolled.losses.size());
  for (size_t i = 0; i < calm.losses.size(); ++i)
    EXPECT_EQ(calm.losses[i], rolled.losses[i]) << "step " << i;
  EXPECT_EQ(calm.test_acc, rolled.test_acc);
}

TEST_F(LoaderTest, TrainingThroughServersMatchesLocalTrainingExactly) {
  StartServers(2);
  torch::set_num_threads(1);  // bitwise-reproducible reductions
  examples::TrainOptions o;
  o.epochs = 4;
  o.evaluate_every_epoch = false;
  o.seed = 3;
  auto through_servers = examples::TrainGraphSage(ConnectCluster(), o);
  auto in_process = examples::TrainGraphSage(Local(), o);
  ASSERT_EQ(through_servers.losses.size(), in_process.losses.size());
  ASSERT_GT(through_servers.losses.size(), 8u);
  for (size_t i = 0; i < in_process.losses.size(); ++i)
    EXPECT_EQ(through_servers.losses[i], in_process.losses[i]) << "step " << i;
  EXPECT_EQ(through_servers.test_acc, in_process.test_acc);
}

// MovieLens (datasets/data/movielens/ml-latest-small) as a heterogeneous
// graph with reverse relations (--undirected), in k random parts; with
// edge_times, its ratings' and tags' timestamps (has_genre edges at time 0).
const std::string& MovieLensDir(int k, datasets::RawDataset* raw = nullptr,
                                bool edge_times = false) {
  return RandomlyPartitioned(
      edge_times ? "movielens-timed" : "movielens", k,
      [edge_times](datasets::RawDataset* ds) {
        datasets::LoadOptions lo;
        lo.quiet = true;
        lo.edge_times = edge_times;
        std::vector<std::string> notes;
        Status st = datasets::LoadDataset(
            "movielens", datasets::testing::DataDir() + "/movielens/ml-latest-small", lo, ds,
            &notes);
        EXPECT_TRUE(st.ok()) << st.ToString();
        datasets::EdgeOptions eo;
        eo.make_undirected = true;
        datasets::ApplyEdgeOptions(eo, ds);
      },
      raw);
}

// Stored id -> raw id of a heterogeneous dataset, through (node type, original id).
std::vector<int64_t> RawIdsOf(Source& source, const datasets::RawDataset& raw) {
  std::map<std::pair<int32_t, int64_t>, int64_t> by_key;
  for (int64_t v = 0; v < raw.num_nodes; ++v) by_key[{raw.node_type[v], raw.original_ids[v]}] = v;
  std::unique_ptr<Session> s;
  EXPECT_TRUE(source.NewSession(&s).ok());
  std::vector<int64_t> all(source.num_nodes()), orig(source.num_nodes()), out(source.num_nodes());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_TRUE(s->OriginalIds(all, orig.data()).ok());
  for (int64_t v = 0; v < source.num_nodes(); ++v)
    out[v] = by_key.at({source.hetero()->NodeTypeOf(v), orig[v]});
  return out;
}

// The per-edge-type fanout lists for MovieLens by relation name (the rest 0).
std::vector<std::vector<int64_t>> MovieLensFanouts(
    const sampler::HeteroSchema& h, const std::map<std::string, std::vector<int64_t>>& by_rel) {
  std::vector<std::vector<int64_t>> f(h.num_edge_types(), std::vector<int64_t>(2, 0));
  for (const auto& [rel, v] : by_rel) {
    int e = -1;
    EXPECT_TRUE(h.FindEdgeType(rel, &e).ok()) << rel;
    f[e] = v;
  }
  return f;
}

// Heterogeneous node batches through 2 and 3 servers equal those of the
// dataset in process, tensor for tensor (types included); every sampled edge
// has the type the store gives it and joins the right node types; each
// frontier node draws exactly min(fanout, its edges of that type) edges of
// each type in each hop (per-type fanouts respected; 0 = none); SplitByType
// gives HeteroData's shape.
TEST(HeteroLoaderTest, HeteroBatchesThroughServersEqualLocalOnesAndRespectPerTypeFanouts) {
  datasets::RawDataset raw;
  MovieLensDir(2, &raw);
  ASSERT_EQ(raw.node_types, (std::vector<std::string>{"user", "movie", "genre"}));
  ASSERT_EQ(raw.num_edges(), 2 * (100836 + 3683 + 22084));
  // Stored-direction ("in") degree of each raw node per edge type.
  std::map<std::pair<int64_t, int32_t>, int64_t> in_degree;
  for (int64_t i = 0; i < raw.num_edges(); ++i) in_degree[{raw.dst[i], raw.edge_type[i]}]++;
  for (auto [k, path] : PartsAndPaths()) {
    const std::string& dir = MovieLensDir(k);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(dir, k, &servers, path);
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir, &local).ok());
    const sampler::HeteroSchema& h = *local->hetero();
    ASSERT_NE(cluster->hetero(), nullptr);
    EXPECT_EQ(cluster->hetero()->type_bounds, h.type_bounds);
    EXPECT_EQ(cluster->hetero()->feature_dims, (std::vector<int64_t>{0, 20, 0}));
    for (int e = 0; e < h.num_edge_types(); ++e)
      EXPECT_EQ(cluster->hetero()->EdgeTypeName(e), h.EdgeTypeName(e));
    const std::vector<int64_t> raw_of = RawIdsOf(*local, raw);
    LoaderOptions o;
    o.batch_size = 64;
    o.edge_ids = true;
    o.seed = 11;
    o.edge_type_fanouts = MovieLensFanouts(h, {{"rates", {5, 3}},
                                               {"tags", {2, 0}},
                                               {"has_genre", {2, 2}},
                                               {"rev_rates", {4, 2}},
                                               {"rev_tags", {0, 1}},
                                               {"rev_has_genre", {3, 1}}});
    std::vector<int64_t> seeds;  // every user, every 7th movie
    for (int64_t v = 0; v < local->num_nodes(); ++v)
      if (h.NodeTypeOf(v) == 0 || (h.NodeTypeOf(v) == 1 && v % 7 == 0)) seeds.push_back(v);
    NodeLoader dist(cluster, seeds, o), loc(local, seeds, o);
    MiniBatch a, b;
    int64_t edges = 0, batches = 0;
    while (dist.Next(&a)) {
      ASSERT_TRUE(loc.Next(&b));
      const std::string what =
          "k=" + std::to_string(k) + " " + PathName(path) + " batch " + std::to_string(batches++);
      for (auto [x, y, name] : {std::tuple{&a.n_id, &b.n_id, "n_id"},
                                {&a.edge_index, &b.edge_index, "edge_index"},
                                {&a.edge_id, &b.edge_id, "edge_id"},
                                {&a.edge_type, &b.edge_type, "edge_type"},
                                {&a.node_type, &b.node_type, "node_type"},
                                {&a.x, &b.x, "x"}})
        ExpectSameTensor(*x, *y, what + " " + name);
      ASSERT_TRUE(a.edge_type.defined() && a.node_type.defined()) << what;
      const int64_t* nid = a.n_id.data_ptr<int64_t>();
      const int64_t* nt = a.node_type.data_ptr<int64_t>();
      const int64_t* et = a.edge_type.data_ptr<int64_t>();
      const int64_t* eid = a.edge_id.data_ptr<int64_t>();
      at::Tensor row_t = a.edge_index[0].contiguous(), col_t = a.edge_index[1].contiguous();
      const int64_t* row = row_t.data_ptr<int64_t>();
      const int64_t* col = col_t.data_ptr<int64_t>();
      for (int64_t i = 0; i < a.n_id.size(0); ++i)
        ASSERT_EQ(nt[i], raw.node_type[raw_of[nid[i]]]) << what;
      // Per hop: the edges drawn by each target, per type.
      int64_t at = 0;
      for (size_t hop = 0; hop < a.num_sampled_edges.size(); ++hop) {
        std::map<std::pair<int64_t, int64_t>, int64_t>
            drawn;  // (target local index, type) -> edges
        std::set<int64_t> targets;
        for (int64_t e = at; e < at + a.num_sampled_edges[hop]; ++e, ++edges) {
          const int64_t r = raw_of[nid[row[e]]], c = raw_of[nid[col[e]]];
          ASSERT_EQ(raw.edge_type[eid[e]], et[e]) << what;
          ASSERT_EQ(raw.src[eid[e]], r) << what;
          ASSERT_EQ(raw.dst[eid[e]], c) << what;
          ASSERT_EQ(nt[row[e]], h.edge_types[et[e]].src) << what;
          ASSERT_EQ(nt[col[e]], h.edge_types[et[e]].dst) << what;
          drawn[{col[e], et[e]}]++;
        }
        // The hop's frontier: the seeds (hop 0) or the nodes new in the hop before.
        int64_t first = 0;
        for (size_t q = 0; q < hop; ++q) first += a.num_sampled_nodes[q];
        const int64_t count = a.num_sampled_nodes[hop];
        for (int64_t i = first; i < first + count; ++i) {
          if (hop == 0 && std::find(nid, nid + i, nid[i]) != nid + i)
            continue;  // a repeated seed draws once
          for (int e = 0; e < h.num_edge_types(); ++e) {
            if (h.edge_types[e].dst != nt[i]) continue;
            const int64_t f = o.edge_type_fanouts[e][hop];
            auto deg = in_degree.find({raw_of[nid[i]], e});
            const int64_t d = deg == in_degree.end() ? 0 : deg->second;
            const int64_t want = f < 0 ? d : std::min(f, d);
            auto got = drawn.find({i, e});
            ASSERT_EQ(got == drawn.end() ? 0 : got->second, want)
                << what << " hop " << hop << " node " << nid[i] << " edge type "
                << h.EdgeTypeName(e);
          }
        }
        at += a.num_sampled_edges[hop];
      }
      // HeteroData's shape.
      HeteroBatch hb = SplitByType(a, h);
      int64_t total_nodes = 0;
      for (int t = 0; t < h.num_node_types(); ++t) {
        total_nodes += hb.n_id[t].size(0);
        EXPECT_TRUE(torch::equal(hb.n_id[t], a.n_id.index_select(0, hb.index[t]))) << what;
        EXPECT_EQ(hb.x[t].defined(), t == 1) << what;
        if (t == 1) {
          EXPECT_EQ(hb.x[t].size(1), 20);
          EXPECT_EQ(hb.x[t].size(0), hb.n_id[t].size(0));
        }
      }
      EXPECT_EQ(total_nodes, a.n_id.size(0));
      EXPECT_EQ(hb.batch_size[0] + hb.batch_size[1], a.batch_size);
      for (int e = 0; e < h.num_edge_types(); ++e) {
        const at::Tensor& ei = hb.edge_index[e];
        if (ei.size(1) == 0) continue;
        at::Tensor src_ids = hb.n_id[h.edge_types[e].src].index_select(0, ei[0]);
        at::Tensor dst_ids = hb.n_id[h.edge_types[e].dst].index_select(0, ei[1]);
        at::Tensor sel = torch::nonzero(a.edge_type == e).view({-1});
        EXPECT_TRUE(
            torch::equal(src_ids, a.n_id.index_select(0, a.edge_index[0].index_select(0, sel))))
            << what;
        EXPECT_TRUE(
            torch::equal(dst_ids, a.n_id.index_select(0, a.edge_index[1].index_select(0, sel))))
            << what;
      }
    }
    EXPECT_FALSE(loc.Next(&b));
    EXPECT_GT(edges, 20000) << "k=" << k;
    for (auto& s : servers) s->Stop();
  }
}

// Heterogeneous link batches (user rates movie) through 2 and 3 servers equal
// local ones for binary and triplet negatives; negatives join a user to a
// movie that user has not rated (strict, per edge type), drawn over the
// users and the movies only.
TEST(HeteroLoaderTest, HeteroLinkBatchesThroughServersEqualLocalOnesWithTypedStrictNegatives) {
  datasets::RawDataset raw;
  MovieLensDir(2, &raw);
  std::set<std::pair<int64_t, int64_t>> rated;  // raw (user, movie)
  for (int64_t i = 0; i < raw.num_edges(); ++i)
    if (raw.edge_type[i] == 0) rated.insert({raw.src[i], raw.dst[i]});
  for (auto [k, path] : PartsAndPaths()) {
    const std::string& dir = MovieLensDir(k);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(dir, k, &servers, path);
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir, &local).ok());
    const sampler::HeteroSchema& h = *local->hetero();
    const std::vector<int64_t> raw_of = RawIdsOf(*local, raw);
    std::vector<int64_t> stored_of(raw.num_nodes);
    for (int64_t v = 0; v < local->num_nodes(); ++v) stored_of[raw_of[v]] = v;
    LinkSeeds links;
    for (int64_t i = 0; i < raw.num_edges(); i += 37)
      if (raw.edge_type[i] == 0)
        links.src.push_back(stored_of[raw.src[i]]), links.dst.push_back(stored_of[raw.dst[i]]);
    for (auto mode : {sampler::NegativeMode::kBinary, sampler::NegativeMode::kTriplet}) {
      const std::string what =
          "k=" + std::to_string(k) + " " + PathName(path) + " " + sampler::NegativeModeName(mode);
      LoaderOptions o;
      o.batch_size = 100;
      o.seed = 5;
      o.edge_ids = true;
      o.edge_type_fanouts =
          MovieLensFanouts(h, {{"rates", {4, 2}}, {"rev_rates", {4, 2}}, {"has_genre", {1, 1}}});
      o.negative.mode = mode;
      o.negative.amount = 2;
      ASSERT_TRUE(h.FindEdgeType("user,rates,movie", &o.link_edge_type).ok());
      LinkLoader dist(cluster, links, o), loc(local, links, o);
      MiniBatch a, b;
      int64_t negatives = 0;
      while (dist.Next(&a)) {
        ASSERT_TRUE(loc.Next(&b)) << what;
        for (auto [x, y, name] : {std::tuple{&a.n_id, &b.n_id, "n_id"},
                                  {&a.edge_index, &b.edge_index, "edge_index"},
                                  {&a.edge_type, &b.edge_type, "edge_type"},
                                  {&a.edge_label_index, &b.edge_label_index, "edge_label_index"},
                                  {&a.edge_label, &b.edge_label, "edge_label"},
                                  {&a.dst_neg_index, &b.dst_neg_index, "dst_neg_index"},
                                  {&a.src_index, &b.src_index, "src_index"}})
          ExpectSameTensor(*x, *y, what + " " + name);
        const int64_t* nid = a.n_id.data_ptr<int64_t>();
        std::vector<std::pair<int64_t, int64_t>> neg;  // stored (src, dst)
        if (mode == sampler::NegativeMode::kBinary) {
          const int64_t p = a.input_id.size(0);
          at::Tensor eli = a.edge_label_index.contiguous();
          for (int64_t j = p; j < eli.size(1); ++j)
            neg.push_back({nid[eli[0][j].item<int64_t>()], nid[eli[1][j].item<int64_t>()]});
        } else {
          at::Tensor s = a.src_index.contiguous(),
                     d = a.dst_neg_index.contiguous().view({s.size(0), -1});
          for (int64_t i = 0; i < s.size(0); ++i)
            for (int64_t j = 0; j < d.size(1); ++j)
              neg.push_back({nid[s[i].item<int64_t>()], nid[d[i][j].item<int64_t>()]});
        }
        for (auto [s, d] : neg) {
          ++negatives;
          ASSERT_EQ(h.NodeTypeOf(s), 0) << what;
          ASSERT_EQ(h.NodeTypeOf(d), 1) << what;
          ASSERT_EQ(rated.count({raw_of[s], raw_of[d]}), 0u)
              << what << ": negative " << s << " -> " << d << " is a rating";
        }
      }
      EXPECT_GT(negatives, 1000) << what;
    }
    for (auto& s : servers) s->Stop();
  }
}

// Heterogeneous temporal node and link batches (per-edge-type fanouts with
// seed times) through 2 and 3 servers on every path equal those of the
// dataset in process, tensor for tensor, for both strategies; no sampled
// edge is later than its tree's seed time; every edge joins its type's node
// types within one tree; a homogeneous temporal request on the typed
// dataset is refused by name.
TEST(HeteroLoaderTest, HeteroTemporalBatchesThroughServersEqualLocalOnesAndNeverLookAhead) {
  datasets::RawDataset raw;
  MovieLensDir(2, &raw, true);
  ASSERT_EQ(raw.edge_times.size(), raw.src.size());
  int64_t t_min = INT64_MAX, t_max = 0;
  for (int64_t i = 0; i < raw.num_edges(); ++i)
    if (raw.edge_type[i] == 0)
      t_min = std::min(t_min, raw.edge_times[i]), t_max = std::max(t_max, raw.edge_times[i]);
  for (auto [k, path] : PartsAndPaths()) {
    const std::string& dir = MovieLensDir(k, nullptr, true);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(dir, k, &servers, path);
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir, &local).ok());
    const sampler::HeteroSchema& h = *local->hetero();
    const std::vector<int64_t> raw_of = RawIdsOf(*local, raw);
    std::vector<int64_t> stored_of(raw.num_nodes);
    for (int64_t v = 0; v < local->num_nodes(); ++v) stored_of[raw_of[v]] = v;
    // Node seeds: every user and every 5th movie, at times over the ratings' span.
    std::vector<int64_t> seeds, times;
    SplitMix64 rng(k);
    for (int64_t v = 0; v < local->num_nodes(); ++v)
      if (h.NodeTypeOf(v) == 0 || (h.NodeTypeOf(v) == 1 && v % 5 == 0)) {
        seeds.push_back(v);
        times.push_back(t_min + static_cast<int64_t>(DrawBelow(
                                    rng.Next(), static_cast<uint64_t>(t_max - t_min + 1))));
      }
    // Link seeds: ratings at their own time.
    LinkSeeds links;
    std::vector<int64_t> link_times;
    for (int64_t i = 0; i < raw.num_edges(); i += 53)
      if (raw.edge_type[i] == 0) {
        links.src.push_back(stored_of[raw.src[i]]);
        links.dst.push_back(stored_of[raw.dst[i]]);
        link_times.push_back(raw.edge_times[i]);
      }
    for (auto strategy : {sampler::TemporalStrategy::kUniform, sampler::TemporalStrategy::kLast}) {
      const std::string what = "k=" + std::to_string(k) + " " + PathName(path) + " " +
                               sampler::TemporalStrategyName(strategy);
      LoaderOptions o;
      o.batch_size = 96;
      o.seed = 7;
      o.edge_ids = true;
      o.temporal_strategy = strategy;
      o.edge_type_fanouts = MovieLensFanouts(h, {{"rates", {4, 2}},
                                                 {"tags", {2, 0}},
                                                 {"has_genre", {2, 1}},
                                                 {"rev_rates", {5, 2}},
                                                 {"rev_tags", {0, 1}},
                                                 {"rev_has_genre", {2, 1}}});
      o.input_time = times;
      NodeLoader dist(cluster, seeds, o), loc(local, seeds, o);
      LoaderOptions lo = o;
      lo.input_time = link_times;
      lo.negative.mode = sampler::NegativeMode::kBinary;
      ASSERT_TRUE(h.FindEdgeType("user,rates,movie", &lo.link_edge_type).ok());
      LinkLoader ldist(cluster, links, lo), lloc(local, links, lo);
      int64_t edges = 0, genre_edges = 0;
      for (auto [d, l] : {std::pair<NodeLoader*, NodeLoader*>{&dist, &loc}, {&ldist, &lloc}}) {
        MiniBatch a, b;
        while (d->Next(&a)) {
          ASSERT_TRUE(l->Next(&b)) << what;
          for (auto [x, y, name] : {std::tuple{&a.n_id, &b.n_id, "n_id"},
                                    {&a.batch, &b.batch, "batch"},
                                    {&a.edge_index, &b.edge_index, "edge_index"},
                                    {&a.edge_id, &b.edge_id, "edge_id"},
                                    {&a.edge_type, &b.edge_type, "edge_type"},
                                    {&a.node_type, &b.node_type, "node_type"},
                                    {&a.seed_time, &b.seed_time, "seed_time"},
                                    {&a.x, &b.x, "x"},
                                    {&a.edge_label_index, &b.edge_label_index, "edge_label_index"}})
            ExpectSameTensor(*x, *y, what + " " + name);
          ASSERT_TRUE(a.batch.defined() && a.edge_type.defined()) << what;
          const int64_t* tree = a.batch.data_ptr<int64_t>();
          const int64_t* seed_time = a.seed_time.data_ptr<int64_t>();
          const int64_t* nt = a.node_type.data_ptr<int64_t>();
          const int64_t* et = a.edge_type.data_ptr<int64_t>();
          const int64_t* eid = a.edge_id.data_ptr<int64_t>();
          at::Tensor row_t = a.edge_index[0].contiguous(), col_t = a.edge_index[1].contiguous();
          const int64_t* row = row_t.data_ptr<int64_t>();
          const int64_t* col = col_t.data_ptr<int64_t>();
          for (int64_t e = 0; e < a.edge_index.size(1); ++e, ++edges) {
            ASSERT_EQ(tree[row[e]], tree[col[e]]) << what;
            ASSERT_LE(raw.edge_times[eid[e]], seed_time[tree[col[e]]])
                << what << ": edge " << eid[e] << " looks ahead";
            ASSERT_EQ(raw.edge_type[eid[e]], et[e]) << what;
            ASSERT_EQ(nt[row[e]], h.edge_types[et[e]].src) << what;
            ASSERT_EQ(nt[col[e]], h.edge_types[et[e]].dst) << what;
            genre_edges += h.edge_types[et[e]].rel == "has_genre";
          }
          // HeteroData's shape: each type's nodes name their trees.
          HeteroBatch hb = SplitByType(a, h);
          for (int t = 0; t < h.num_node_types(); ++t)
            EXPECT_TRUE(torch::equal(hb.batch[t], a.batch.index_select(0, hb.index[t]))) << what;
        }
        EXPECT_FALSE(l->Next(&b)) << what;
      }
      EXPECT_GT(edges, 20000) << what;
      EXPECT_GT(genre_edges, 1000) << what;  // time-0 edges: always eligible
    }
    // A homogeneous temporal request on the typed dataset.
    LoaderOptions plain;
    plain.fanouts = {3};
    plain.input_time = {t_max};
    for (std::shared_ptr<Source> src :
         {std::shared_ptr<Source>(cluster), std::shared_ptr<Source>(local)}) {
      NodeLoader l(src, {seeds[0]}, plain);
      MiniBatch m;
      try {
        l.Next(&m);
        ADD_FAILURE() << "a temporal batch without per-edge-type fanouts on a typed dataset";
      } catch (const LoaderError& e) {
        EXPECT_THAT(e.what(), HasSubstr("per-edge-type fanouts"));
      }
    }
    for (auto& s : servers) s->Stop();
  }
}

// Metapath walks (user -> movie -> user ... on MovieLens, in the stored
// direction: rev_rates from a user's row, rates from a movie's) through 2 and
// 3 servers on every path equal those in process; every step is a stored
// edge of its step's type; node2vec's p/q apply; metapaths whose types do
// not chain, or on a homogeneous dataset, are refused by name.
TEST(HeteroLoaderTest, MetapathWalksFollowTheirTypesAndEqualLocalOnes) {
  datasets::RawDataset raw;
  MovieLensDir(2, &raw);
  std::set<std::tuple<int64_t, int64_t, int32_t>> raw_edges;  // (src, dst, type)
  for (int64_t i = 0; i < raw.num_edges(); ++i)
    raw_edges.insert({raw.src[i], raw.dst[i], raw.edge_type[i]});
  for (auto [k, path] : PartsAndPaths()) {
    const std::string& dir = MovieLensDir(k);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(dir, k, &servers, path);
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir, &local).ok());
    const sampler::HeteroSchema& h = *local->hetero();
    const std::vector<int64_t> raw_of = RawIdsOf(*local, raw);
    int rev_rates = -1, rates = -1;
    ASSERT_TRUE(h.FindEdgeType("rev_rates", &rev_rates).ok());
    ASSERT_TRUE(h.FindEdgeType("rates", &rates).ok());
    std::vector<int64_t> users;
    for (int64_t v = 0; v < local->num_nodes(); ++v)
      if (h.NodeTypeOf(v) == 0) users.push_back(v);
    for (double q : {1.0, 0.5}) {
      const std::string what =
          "k=" + std::to_string(k) + " " + PathName(path) + " q=" + std::to_string(q);
      WalkOptions wo;
      wo.walk_length = 6;
      wo.num_walks = 2;
      wo.q = q;
      wo.metapath = {rev_rates, rates};
      std::unique_ptr<WalkSampler> dw, lw;
      ASSERT_TRUE(WalkSampler::Create(cluster, wo, &dw).ok());
      ASSERT_TRUE(WalkSampler::Create(local, wo, &lw).ok());
      WalkResult a, b;
      ASSERT_TRUE(dw->Sample(users, 17, &a).ok());
      ASSERT_TRUE(lw->Sample(users, 17, &b).ok());
      ASSERT_EQ(a.walks, b.walks) << what;
      EXPECT_EQ(a.steps, b.steps) << what;
      int64_t steps = 0;
      const int64_t cols = wo.walk_length + 1;
      for (size_t w = 0; w < a.walks.size() / cols; ++w)
        for (int64_t t = 1; t < cols; ++t) {
          const int64_t cur = a.walks[w * cols + t - 1], next = a.walks[w * cols + t];
          if (next < 0) break;
          const int32_t e = wo.metapath[(t - 1) % 2];
          // "in": the step along e from cur's row reaches a source of an edge next -> cur.
          ASSERT_EQ(h.NodeTypeOf(next), t % 2 == 1 ? 1 : 0) << what;
          ASSERT_TRUE(raw_edges.count({raw_of[next], raw_of[cur], e})) << what << " step " << t;
          ++steps;
        }
      EXPECT_GT(steps, 5000) << what;
    }
    // Refusals: types that do not chain, a repeat that does not close, a bad index.
    auto refused = [&](std::vector<int32_t> metapath, int64_t length) {
      WalkOptions wo;
      wo.walk_length = length;
      wo.metapath = std::move(metapath);
      std::unique_ptr<WalkSampler> w;
      return WalkSampler::Create(cluster, wo, &w).message();
    };
    EXPECT_THAT(refused({rev_rates, rev_rates}, 4), HasSubstr("starts at node type 'user'"));
    int has_genre = -1;
    ASSERT_TRUE(h.FindEdgeType("has_genre", &has_genre).ok());
    EXPECT_THAT(refused({has_genre}, 2), HasSubstr("repeats"));
    EXPECT_TRUE(refused({has_genre}, 1).empty());  // one step: no repeat to close
    EXPECT_THAT(refused({99}, 2), HasSubstr("edge type 99"));
    for (auto& s : servers) s->Stop();
  }
  std::shared_ptr<LocalSource> cora;
  ASSERT_TRUE(LocalSource::Open(server::testing::CoraDir(2), &cora).ok());
  WalkOptions wo;
  wo.metapath = {0};
  std::unique_ptr<WalkSampler> w;
  EXPECT_THAT(WalkSampler::Create(cora, wo, &w).message(), HasSubstr("heterogeneous"));
}

// PPR neighborhoods on Cora: every score within eps * max(deg, 1) of an exact
// power iteration (the same definition: stored rows, an empty row's mass
// dropped); top-k lists equal through 2 and 3 servers on every path and in
// process, value for value; the loader's batches carry them as edge weights;
// bad options refused by name.
TEST(PprTest, ScoresAreWithinEpsOfExactAndEqualOnEveryPath) {
  std::shared_ptr<LocalSource> local;
  ASSERT_TRUE(LocalSource::Open(server::testing::CoraDir(2), &local).ok());
  const int64_t n = local->num_nodes();
  // Every stored row.
  std::unique_ptr<Session> s;
  ASSERT_TRUE(local->NewSession(&s).ok());
  std::vector<int64_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  sampler::MultiHopOptions every;
  every.fanouts = {-1};
  sampler::SampledSubgraph sub;
  ASSERT_TRUE(s->Sample(all, 0, every, &sub).ok());
  std::vector<std::vector<int64_t>> rows(n);
  for (size_t e = 0; e < sub.col.size(); ++e) rows[sub.col[e]].push_back(sub.n_id[sub.row[e]]);
  PprOptions o;
  o.alpha = 0.15;
  o.eps = 1e-5;
  o.top_k = n;  // every scored node
  const std::vector<int64_t> seeds = {0, 5, 100, 2000, 2707};
  PprResult approx;
  ASSERT_TRUE(PersonalizedPageRank(*s, seeds, o, &approx).ok());
  EXPECT_TRUE(approx.converged);
  EXPECT_GT(approx.pushes, 100);
  for (size_t i = 0; i < seeds.size(); ++i) {
    // Exact: x = alpha e_s + (1 - alpha) x P, iterated to 1e-12.
    const std::vector<double> x = ExactPersonalizedPageRank(rows, seeds[i], o.alpha, 400);
    std::vector<double> got(n, 0);
    for (int64_t k = approx.offsets[i]; k < approx.offsets[i + 1]; ++k)
      got[approx.nodes[k]] = approx.scores[k];
    for (int64_t v = 0; v < n; ++v) {
      if (v == seeds[i]) continue;  // the seed is not in its own list
      const double bound = o.eps * static_cast<double>(std::max<size_t>(rows[v].size(), 1));
      ASSERT_LE(std::fabs(got[v] - x[v]), bound + 1e-6)
          << "seed " << seeds[i] << " node " << v << ": " << got[v] << " vs exact " << x[v];
    }
    // Scores descending, then ids ascending.
    for (int64_t k = approx.offsets[i] + 1; k < approx.offsets[i + 1]; ++k)
      ASSERT_TRUE(
          approx.scores[k - 1] > approx.scores[k] ||
          (approx.scores[k - 1] == approx.scores[k] && approx.nodes[k - 1] < approx.nodes[k]));
  }
  // Through servers: the same lists and scores, and the loader's batches.
  for (auto [k, path] : PartsAndPaths()) {
    const std::string what = "k=" + std::to_string(k) + " " + PathName(path);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    auto cluster = ServeAll(server::testing::CoraDir(k), k, &servers, path);
    std::shared_ptr<LocalSource> whole;
    ASSERT_TRUE(LocalSource::Open(server::testing::CoraDir(k), &whole).ok());
    std::unique_ptr<Session> ds, ls;
    ASSERT_TRUE(cluster->NewSession(&ds).ok());
    ASSERT_TRUE(whole->NewSession(&ls).ok());
    PprOptions d;
    d.top_k = 16;
    PprResult a, b;
    ASSERT_TRUE(PersonalizedPageRank(*ds, seeds, d, &a).ok());
    ASSERT_TRUE(PersonalizedPageRank(*ls, seeds, d, &b).ok());
    EXPECT_EQ(a.offsets, b.offsets) << what;
    EXPECT_EQ(a.nodes, b.nodes) << what;
    EXPECT_EQ(a.scores, b.scores) << what;
    EXPECT_EQ(a.pushes, b.pushes) << what;
    LoaderOptions lo;
    lo.ppr = true;
    lo.fanouts = {8};
    lo.batch_size = 256;
    lo.edge_ids = true;
    std::vector<int64_t> train = whole->SplitNodes(1);
    NodeLoader dist(cluster, train, lo), loc(whole, train, lo);
    MiniBatch x, y;
    int64_t edges = 0;
    while (dist.Next(&x)) {
      ASSERT_TRUE(loc.Next(&y)) << what;
      for (auto [p, q, name] : {std::tuple{&x.n_id, &y.n_id, "n_id"},
                                {&x.edge_index, &y.edge_index, "edge_index"},
                                {&x.edge_weight, &y.edge_weight, "edge_weight"},
                                {&x.x, &y.x, "x"}})
        ExpectSameTensor(*p, *q, what + " " + name);
      ASSERT_TRUE(x.edge_weight.defined());
      EXPECT_TRUE(torch::all(x.edge_weight > 0).item<bool>()) << what;
      EXPECT_TRUE(torch::all(x.edge_id == -1).item<bool>()) << what;
      edges += x.edge_index.size(1);
    }
    EXPECT_FALSE(loc.Next(&y));
    EXPECT_GT(edges, 140 * 4) << what;
    for (auto& sv : servers) sv->Stop();
  }
  // Servers whose reply limit (4,000 bytes: 200 (seed, node) pairs) cuts
  // rounds short: the client sends the rest again, to the same result; and
  // the pushes ran on the servers (their admin counts).
  {
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    ClusterSpec spec;
    for (int p = 0; p < 2; ++p) {
      server::ServerOptions so;
      so.dataset_dir = server::testing::CoraDir(2);
      so.partition = p;
      so.local_socket = "off";
      so.max_reply_bytes = 4000;
      servers.push_back(std::make_unique<server::PartitionServer>(so));
      ASSERT_TRUE(servers.back()->Start().ok());
      spec.replicas.push_back({"127.0.0.1:" + std::to_string(servers.back()->port())});
    }
    std::shared_ptr<Cluster> c;
    ASSERT_TRUE(Cluster::Connect(spec, {}, &c).ok());
    std::unique_ptr<Session> ds;
    ASSERT_TRUE(c->NewSession(&ds).ok());
    PprOptions d;
    d.top_k = 16;
    PprResult a, b;
    ASSERT_TRUE(PersonalizedPageRank(*ds, seeds, d, &a).ok());
    ASSERT_TRUE(PersonalizedPageRank(*s, seeds, d, &b).ok());
    EXPECT_EQ(a.nodes, b.nodes);
    EXPECT_EQ(a.scores, b.scores);
    EXPECT_GT(ds->stats().requests, 2 * a.rounds);  // more requests than rounds x servers
    const std::string stats = servers[0]->StatsJson();
    EXPECT_THAT(stats, HasSubstr("ppr_push"));
    for (auto& sv : servers) sv->Stop();
  }
  // Refusals.
  PprOptions bad;
  bad.alpha = 1.5;
  PprResult r;
  EXPECT_THAT(PersonalizedPageRank(*s, seeds, bad, &r).message(), HasSubstr("alpha"));
  bad = PprOptions();
  bad.eps = 0;
  EXPECT_THAT(PersonalizedPageRank(*s, seeds, bad, &r).message(), HasSubstr("eps"));
  LoaderOptions lo;
  lo.ppr = true;
  lo.fanouts = {8, 4};
  EXPECT_THROW(NodeLoader(local, {1}, lo), std::invalid_argument);
  lo.fanouts = {8};
  lo.labor = true;
  EXPECT_THROW(NodeLoader(local, {1}, lo), std::invalid_argument);
}

TEST_F(LoaderTest, LaborAndPinSageOptionsAreRefusedByName) {
  StartServers(2);
  auto cluster = ConnectCluster();
  std::vector<int64_t> seeds = Local()->SplitNodes(1);
  auto refused = [&](LoaderOptions o) {
    try {
      NodeLoader l(cluster, seeds, o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  LoaderOptions o;
  o.labor = true;
  o.replace = true;
  EXPECT_THAT(refused(o), HasSubstr("replace"));
  o = LoaderOptions();
  o.labor = true;
  o.input_time.assign(seeds.size(), 1);
  EXPECT_THAT(refused(o), HasSubstr("temporal"));
  o = LoaderOptions();
  o.pinsage = true;
  o.labor = true;
  EXPECT_THAT(refused(o), HasSubstr("PinSAGE"));
  o = LoaderOptions();
  o.pinsage = true;
  o.fanouts = {5, -1};
  EXPECT_THAT(refused(o), HasSubstr("hop 1"));
  o = LoaderOptions();
  o.pinsage = true;
  o.fanouts = {50};
  o.walk.num_walks = 2;
  o.walk.walk_length = 3;
  EXPECT_THAT(refused(o), HasSubstr("top_k 50"));
}

TEST_F(LoaderTest, HeteroOptionsAreRefusedByName) {
  StartServers(2);
  auto cora = ConnectCluster();
  LoaderOptions o;
  o.edge_type_fanouts = {{5, 5}};
  try {
    NodeLoader l(cora, {0, 1}, o);
    FAIL() << "per-type fanouts on a homogeneous dataset";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("heterogeneous"));
  }
  std::vector<std::unique_ptr<server::PartitionServer>> servers;
  auto ml = ServeAll(MovieLensDir(2), 2, &servers);
  const sampler::HeteroSchema& h = *ml->hetero();
  o.edge_type_fanouts = {{5, 5}};  // one list for six edge types
  EXPECT_THROW(NodeLoader(ml, {0}, o), std::invalid_argument);
  o.edge_type_fanouts = MovieLensFanouts(h, {{"rates", {5, 5}}});
  o.edge_type_fanouts[1] = {3};  // another hop count
  try {
    NodeLoader l(ml, {0}, o);
    FAIL() << "uneven hop counts";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("user,tags,movie"));
  }
  o.edge_type_fanouts = MovieLensFanouts(h, {{"rates", {5, 5}}});
  o.subgraph = true;
  EXPECT_THROW(NodeLoader(ml, {0}, o), std::invalid_argument);
  o.subgraph = false;
  // Link seeds on a heterogeneous dataset need their edge type, and must be of it.
  const int64_t user = 0, movie = h.NodesOfType(1).Id(0);
  o.negative.mode = sampler::NegativeMode::kBinary;
  try {
    LinkLoader l(ml, LinkSeeds{{user}, {movie}, {}}, o);
    FAIL() << "no link_edge_type";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("link_edge_type"));
  }
  o.link_edge_type = 0;
  try {
    LinkLoader l(ml, LinkSeeds{{movie}, {user}, {}}, o);
    FAIL() << "a seed edge of another type";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("user,rates,movie"));
  }
  for (auto& s : servers) s->Stop();
}

TEST_F(LoaderTest, GraphSageReachesPublishedAccuracyOnCora) {
  StartServers(2);
  auto cluster = ConnectCluster();
  double sum = 0;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    examples::TrainOptions o;
    o.epochs = 30;
    o.evaluate_every_epoch = false;
    o.seed = seed;
    auto r = examples::TrainGraphSage(cluster, o);
    std::printf("seed %llu: test accuracy %.3f\n", static_cast<unsigned long long>(seed),
                r.test_acc);
    sum += r.test_acc;
  }
  std::printf("mean test accuracy over 5 seeds: %.3f\n", sum / 5);
  EXPECT_GE(sum / 5, 0.77);
}

}  // namespace
}  // namespace fanout::client
