// The client library against in-process servers: distributed sampling equals
// local sampling, fetches equal the stored data, bad cluster files and slow
// servers give clear errors.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "client/batch_loader.h"
#include "client/cached_source.h"
#include "client/cluster.h"
#include "client/source.h"
#include "client/update_writer.h"
#include "common/random.h"
#include "live/update_log.h"
#include "live/updates.h"
#include "tests/datasets/test_util.h"
#include "tests/server/child_server.h"
#include "tests/server/server_fixture.h"
#include "tests/server/test_certs.h"

namespace fanout::client {
namespace {

using server::testing::ServerTest;
using ::testing::HasSubstr;

std::vector<int64_t> Std(const PodVector<int64_t>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

// n seeds uniform over Cora's 2708 nodes, repeats included.
std::vector<int64_t> CoraSeeds(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int64_t> seeds(n);
  for (auto& s : seeds) s = static_cast<int64_t>(DrawBelow(rng.Next(), 2708));
  return seeds;
}

// The distributed subgraph equals the local one, field for field.
void ExpectSameSubgraph(const sampler::SampledSubgraph& dist, const sampler::SampledSubgraph& local,
                        const std::string& what) {
  EXPECT_EQ(Std(dist.n_id), Std(local.n_id)) << what;
  EXPECT_EQ(Std(dist.row), Std(local.row)) << what;
  EXPECT_EQ(Std(dist.col), Std(local.col)) << what;
  EXPECT_EQ(Std(dist.edge_id), Std(local.edge_id)) << what;
  EXPECT_EQ(dist.num_sampled_nodes, local.num_sampled_nodes) << what;
  EXPECT_EQ(dist.num_sampled_edges, local.num_sampled_edges) << what;
  EXPECT_EQ(dist.batch_size, local.batch_size) << what;
}

class ClusterTest : public ServerTest {
 protected:
  ClusterSpec Spec() const {
    ClusterSpec spec;
    for (const auto& s : servers_)
      spec.replicas.push_back({"127.0.0.1:" + std::to_string(s->port())});
    return spec;
  }
  std::shared_ptr<Cluster> ConnectCluster(rpc::RpcOptions ro = {}) {
    std::shared_ptr<Cluster> c;
    Status st = Cluster::Connect(Spec(), ro, &c);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return c;
  }
};

TEST_F(ClusterTest, DistributedSamplingEqualsLocalSamplingOnTheWholeGraph) {
  for (int k : {2, 3}) {
    servers_.clear();
    StartServers(k);
    auto cluster = ConnectCluster();
    ASSERT_EQ(cluster->num_parts(), k);
    std::unique_ptr<Session> session;
    ASSERT_TRUE(cluster->NewSession(&session).ok());
    for (auto fanouts : {std::vector<int64_t>{10, 10}, {15, 10, 5}, {-1, 3}, {5}}) {
      for (bool replace : {false, true}) {
        for (uint64_t seed : {1, 77, 123456789}) {
          sampler::MultiHopOptions mo;
          mo.fanouts = fanouts;
          mo.sampling.replace = replace;
          std::vector<int64_t> seeds = CoraSeeds(200, seed);
          sampler::SampledSubgraph dist, local;
          Status st = session->Sample(seeds, seed, mo, &dist);
          ASSERT_TRUE(st.ok()) << st.ToString();
          sampler::MultiHopSampler sampler(whole_.csr.View(), mo);
          ASSERT_TRUE(sampler.Sample(seeds, seed, &local).ok());
          ExpectSameSubgraph(dist, local,
                             "k=" + std::to_string(k) + " seed " + std::to_string(seed));
        }
      }
    }
    for (auto& s : servers_) s->Stop();
  }
}

// Subgraph mode: the same nodes as the node sampler, and every stored edge
// among them, distributed (2 and 3 servers) equal to local, edge ids included.
TEST_F(ClusterTest, DistributedInducedSubgraphsEqualLocalOnes) {
  for (int k : {2, 3}) {
    servers_.clear();
    StartServers(k);
    auto cluster = ConnectCluster();
    std::unique_ptr<Session> session;
    ASSERT_TRUE(cluster->NewSession(&session).ok());
    for (auto fanouts : {std::vector<int64_t>{10, 5}, {15, 10, 5}, {3}}) {
      for (uint64_t seed : {2, 99}) {
        sampler::MultiHopOptions mo;
        mo.fanouts = fanouts;
        mo.sampling.with_edge_ids = true;
        mo.induced = true;
        std::vector<int64_t> seeds = CoraSeeds(100, seed);
        sampler::SampledSubgraph dist, local, nodes_only;
        Status st = session->Sample(seeds, seed, mo, &dist);
        ASSERT_TRUE(st.ok()) << st.ToString();
        sampler::MultiHopSampler sampler(whole_.csr.View(), mo);
        ASSERT_TRUE(sampler.Sample(seeds, seed, &local).ok());
        ExpectSameSubgraph(dist, local,
                           "induced k=" + std::to_string(k) + " seed " + std::to_string(seed));
        mo.induced = false;
        ASSERT_TRUE(session->Sample(seeds, seed, mo, &nodes_only).ok());
        EXPECT_EQ(Std(dist.n_id), Std(nodes_only.n_id));  // the same nodes as the node loader
        EXPECT_GE(dist.row.size(), nodes_only.row.size() / 2);
      }
    }
    for (auto& s : servers_) s->Stop();
  }
}

// One local session asked in turn for node, induced and node samples gets
// each as asked (its sampler is rebuilt whenever any option changes).
TEST_F(ClusterTest, ALocalSessionFollowsEveryOptionChange) {
  StartServers(2);
  std::shared_ptr<LocalSource> local;
  ASSERT_TRUE(LocalSource::Open(dir_, &local).ok());
  std::unique_ptr<Session> s;
  ASSERT_TRUE(local->NewSession(&s).ok());
  sampler::MultiHopOptions mo;
  mo.fanouts = {5, 3};
  std::vector<int64_t> seeds = CoraSeeds(50, 4);
  sampler::SampledSubgraph a, b, c;
  ASSERT_TRUE(s->Sample(seeds, 1, mo, &a).ok());
  mo.induced = true;
  ASSERT_TRUE(s->Sample(seeds, 1, mo, &b).ok());
  mo.induced = false;
  ASSERT_TRUE(s->Sample(seeds, 1, mo, &c).ok());
  EXPECT_EQ(a.num_sampled_edges.size(), 2u);
  EXPECT_EQ(b.num_sampled_edges.size(), 1u);
  EXPECT_EQ(Std(b.n_id), Std(a.n_id));
  ExpectSameSubgraph(c, a, "node sample after an induced one");
}

// Edge existence through the servers (has_edges) equals the stored graph:
// every stored edge is found, random pairs agree with a scan of the row.
TEST_F(ClusterTest, DistributedEdgeExistenceEqualsTheStoredGraph) {
  for (int k : {2, 3}) {
    servers_.clear();
    StartServers(k);
    auto cluster = ConnectCluster();
    std::unique_ptr<Session> session;
    ASSERT_TRUE(cluster->NewSession(&session).ok());
    std::shared_ptr<LocalSource> local;
    ASSERT_TRUE(LocalSource::Open(dir_, &local).ok());
    std::unique_ptr<Session> ls;
    ASSERT_TRUE(local->NewSession(&ls).ok());
    const sampler::CsrArrays& g =
        whole_.csr;  // stored "in": row d holds the sources of edges s -> d
    std::vector<int64_t> src, dst;
    for (int64_t d = 0; d < g.num_nodes(); ++d)
      for (int64_t e = g.indptr[d]; e < g.indptr[d + 1]; ++e)
        src.push_back(g.indices[e]), dst.push_back(d);
    std::vector<uint8_t> found(src.size(), 7);
    Status st = session->HasEdges(src, dst, found.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(std::count(found.begin(), found.end(), 1), static_cast<int64_t>(src.size()));
    SplitMix64 rng(k);
    std::vector<int64_t> rs(5000), rd(5000);
    for (size_t i = 0; i < rs.size(); ++i)
      rs[i] = static_cast<int64_t>(DrawBelow(rng.Next(), 2708)),
      rd[i] = static_cast<int64_t>(DrawBelow(rng.Next(), 2708));
    std::vector<uint8_t> dist(rs.size()), loc(rs.size());
    ASSERT_TRUE(session->HasEdges(rs, rd, dist.data()).ok());
    ASSERT_TRUE(ls->HasEdges(rs, rd, loc.data()).ok());
    EXPECT_EQ(dist, loc);
    int64_t edges = 0;
    for (size_t i = 0; i < rs.size(); ++i) {
      bool scan = false;
      for (int64_t e = g.indptr[rd[i]]; e < g.indptr[rd[i] + 1]; ++e) scan |= g.indices[e] == rs[i];
      EXPECT_EQ(dist[i], scan ? 1 : 0) << rs[i] << " -> " << rd[i];
      edges += scan;
    }
    // Out-of-range ids are refused by name; mismatched lengths too.
    std::vector<int64_t> bad{0, 2708};
    st = session->HasEdges(bad, std::vector<int64_t>{1, 1}, found.data());
    EXPECT_THAT(st.message(), HasSubstr("2708"));
    st = session->HasEdges(std::vector<int64_t>{1, 2}, bad, found.data());
    EXPECT_THAT(st.message(), HasSubstr("2708"));
    EXPECT_THAT(session->HasEdges(std::vector<int64_t>{1}, bad, found.data()).message(),
                HasSubstr("1 sources but 2"));
    for (auto& s : servers_) s->Stop();
  }
}

// A sample request's keep list: the reply holds exactly the sampled
// neighbors in it (edge ids alongside); a bad list is refused by position.
TEST_F(ClusterTest, SampleRepliesKeepOnlyTheNeighborsAsked) {
  StartServers(2);
  auto client = Connect(0);
  std::vector<int64_t> nodes;
  for (int64_t v = 0; v < 300; ++v) nodes.push_back(v);
  rpc::SampleCall call;
  call.fanout = -1;
  rpc::SampleReply all, kept;
  ASSERT_TRUE(client->Sample(nodes, call, &all).ok());
  std::vector<int64_t> keep;
  for (int64_t v = 0; v < 2708; v += 3) keep.push_back(v);
  call.keep = keep;
  Status st = client->Sample(nodes, call, &kept);
  ASSERT_TRUE(st.ok()) << st.ToString();
  int64_t a = 0, k = 0, expect_total = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<int64_t> want, want_e, got, got_e;
    for (int32_t j = 0; j < all.Counts()[i]; ++j, ++a)
      if (all.Neighbors()[a] % 3 == 0)
        want.push_back(all.Neighbors()[a]), want_e.push_back(all.EdgeIds()[a]);
    for (int32_t j = 0; j < kept.Counts()[i]; ++j, ++k)
      got.push_back(kept.Neighbors()[k]), got_e.push_back(kept.EdgeIds()[k]);
    EXPECT_EQ(got, want) << "node " << nodes[i];
    EXPECT_EQ(got_e, want_e) << "node " << nodes[i];
    expect_total += static_cast<int64_t>(want.size());
  }
  EXPECT_GT(expect_total, 0);
  EXPECT_LT(expect_total, a);
  std::vector<int64_t> unsorted{5, 9, 7};
  call.keep = unsorted;
  EXPECT_THAT(client->Sample(nodes, call, &kept).message(), HasSubstr("7 at position 2 follows 9"));
  std::vector<int64_t> outside{5, 2708};
  call.keep = outside;
  EXPECT_THAT(client->Sample(nodes, call, &kept).message(),
              HasSubstr("keep id 2708 at position 1"));
}

TEST_F(ClusterTest, FetchesEqualTheLocalDataset) {
  StartServers(3);
  auto cluster = ConnectCluster();
  std::shared_ptr<LocalSource> local;
  ASSERT_TRUE(LocalSource::Open(dir_, &local).ok());
  std::unique_ptr<Session> a, b;
  ASSERT_TRUE(cluster->NewSession(&a).ok());
  ASSERT_TRUE(local->NewSession(&b).ok());
  std::vector<int64_t> ids = {2707, 0, 1500, 1500, 900, 2000};
  std::vector<float> fa(ids.size() * 1433), fb(ids.size() * 1433);
  ASSERT_TRUE(a->Features(ids, fa.data()).ok());
  ASSERT_TRUE(b->Features(ids, fb.data()).ok());
  EXPECT_EQ(fa, fb);
  std::vector<int64_t> la(ids.size()), lb(ids.size()), oa(ids.size()), ob(ids.size());
  ASSERT_TRUE(a->Labels(ids, la.data()).ok());
  ASSERT_TRUE(b->Labels(ids, lb.data()).ok());
  EXPECT_EQ(la, lb);
  ASSERT_TRUE(a->OriginalIds(ids, oa.data()).ok());
  ASSERT_TRUE(b->OriginalIds(ids, ob.data()).ok());
  EXPECT_EQ(oa, ob);
  for (int split : {1, 2, 3}) {
    std::vector<int64_t> sa, sb;
    ASSERT_TRUE(a->SplitNodes(split, &sa).ok());
    ASSERT_TRUE(b->SplitNodes(split, &sb).ok());
    EXPECT_EQ(sa, sb);
  }
  EXPECT_GT(a->stats().feature_bytes, 0);
  Status st = a->Features(std::vector<int64_t>{5000}, fa.data());
  EXPECT_THAT(st.message(), HasSubstr("node 5000 is outside [0, 2708)"));
}

TEST_F(ClusterTest, BadClusterFilesGiveClearErrors) {
  ClusterSpec spec;
  Status st = ParseClusterJson(
      "{\"partitions\": [{\"partition\": 0, \"replicas\": [\"a:1\"]}, "
      "{\"partition\": 2, \"replicas\": [\"b:2\"]}]}",
      "c.json", &spec);
  EXPECT_THAT(st.message(), HasSubstr("c.json: partition 1 is missing"));
  st = ParseClusterJson(
      "{\"partitions\": [{\"partition\": 0, \"replicas\": [\"a:1\"]}, "
      "{\"partition\": 0, \"replicas\": [\"b:2\"]}]}",
      "c.json", &spec);
  EXPECT_THAT(st.message(), HasSubstr("partition 0 is listed twice"));
  st = ParseClusterJson("{\"partitions\": [{\"partition\": 0, \"replicas\": [\"nocolon\"]}]}",
                        "c.json", &spec);
  EXPECT_THAT(st.message(), HasSubstr("'nocolon' is not host:port"));
  st = ParseClusterJson("{\"parts\": []}", "c.json", &spec);
  EXPECT_THAT(st.message(), HasSubstr("expected {\"partitions\""));
  st = ParseClusterJson("not json", "c.json", &spec);
  EXPECT_THAT(st.message(), HasSubstr("c.json: not valid JSON"));
  EXPECT_TRUE(ReadClusterFile("/nonexistent/cluster.json", &spec).IsNotFound());

  StartServers(2);
  std::shared_ptr<Cluster> c;
  // Servers listed under the wrong partitions (ranges would overlap/misalign).
  ClusterSpec swapped = Spec();
  std::swap(swapped.replicas[0], swapped.replicas[1]);
  st = Cluster::Connect(swapped, {}, &c);
  EXPECT_THAT(st.message(),
              HasSubstr("serves partition 1 but the cluster file lists it as partition 0"));
  // The same server for both partitions.
  ClusterSpec twice = Spec();
  twice.replicas[1] = twice.replicas[0];
  st = Cluster::Connect(twice, {}, &c);
  EXPECT_THAT(st.message(),
              HasSubstr("serves partition 0 but the cluster file lists it as partition 1"));
  // Fewer partitions than the dataset has.
  ClusterSpec one = Spec();
  one.replicas.pop_back();
  st = Cluster::Connect(one, {}, &c);
  EXPECT_THAT(st.message(), HasSubstr("dataset of 2 partitions but the cluster file lists 1"));
  // An unreachable server (nothing listens on the port of a stopped one).
  int dead_port = servers_[1]->port();
  ClusterSpec dead = Spec();
  servers_[1]->Stop();
  st = Cluster::Connect(dead, {}, &c);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("no replica of partition 1 answers"));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(dead_port)));
  // A second replica that answers is used.
  dead.replicas[1].push_back("127.0.0.1:" + std::to_string(servers_[0]->port()));
  st = Cluster::Connect(dead, {}, &c);
  EXPECT_THAT(st.message(),
              HasSubstr("serves partition 0"));  // it answered, but serves the wrong partition
}

TEST_F(ClusterTest, ServersOfDifferentDatasetsAreRefused) {
  StartServers(2);
  // The same graph partitioned again: a different dataset id.
  datasets::testing::TempDir tmp;
  std::string other = tmp.Sub("other");
  ASSERT_EQ(std::system((std::string(FANOUT_BIN_DIR) +
                         "/fanout-partition --quiet --format planetoid --input " +
                         datasets::testing::DataDir() + "/planetoid/cora --parts 2 --output " +
                         other + " > /dev/null")
                            .c_str()),
            0);
  server::ServerOptions o;
  o.dataset_dir = other;
  o.partition = 1;
  server::PartitionServer foreign(o);
  ASSERT_TRUE(foreign.Start().ok());
  ClusterSpec spec = Spec();
  spec.replicas[1] = {"127.0.0.1:" + std::to_string(foreign.port())};
  std::shared_ptr<Cluster> c;
  Status st = Cluster::Connect(spec, {}, &c);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("belong to different datasets"));
  foreign.Stop();
}

TEST_F(ClusterTest, AFailedCallLeavesNoStaleReplyOnHealthyConnections) {
  StartServers(2);
  auto cluster = ConnectCluster();
  std::unique_ptr<Session> s;
  ASSERT_TRUE(cluster->NewSession(&s).ok());
  const int64_t b1 = whole_.parts[1]->node_begin;
  servers_[0]->Stop();
  sampler::MultiHopOptions mo;
  mo.fanouts = {3};
  sampler::SampledSubgraph sub;
  // Both requests go out; partition 0's reply never comes, so the call fails
  // while partition 1's reply is still owed on its connection.
  Status st = s->Sample(std::vector<int64_t>{0, b1}, 1, mo, &sub);
  EXPECT_FALSE(st.ok());
  // Partition 1 still answers correctly: its owed sample reply is not read
  // as the reply to this feature request.
  std::vector<int64_t> ids = {b1, b1 + 1};
  std::vector<float> got(2 * 1433), want(2 * 1433);
  st = s->Features(ids, got.data());
  ASSERT_TRUE(st.ok()) << st.ToString();
  const datasets::PartitionData& d = *whole_.parts[1];
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 1433; ++j) want[r * 1433 + j] = d.Feature(r, j);
  EXPECT_EQ(got, want);
}

TEST_F(ClusterTest, CachedFetchesEqualUncachedForEveryPolicyAndSize) {
  StartServers(2);
  auto cluster = ConnectCluster();
  std::unique_ptr<Session> plain;
  ASSERT_TRUE(cluster->NewSession(&plain).ok());
  std::vector<int64_t> hot;
  ASSERT_TRUE(SelectHotByDegree(*plain, 2708, 500, &hot).ok());
  ASSERT_EQ(hot.size(), 500u);
  std::vector<int64_t> deg(2);
  ASSERT_TRUE(plain->Degrees(std::vector<int64_t>{hot[0], hot[499]}, deg.data()).ok());
  EXPECT_GE(deg[0], deg[1]);
  for (auto policy : {cache::Policy::kStatic, cache::Policy::kSieve}) {
    for (double fraction : {0.0, 0.05, 0.2, 1.0}) {
      cache::CacheOptions co;
      co.num_nodes = 2708;
      co.feature_dim = 1433;
      co.capacity_rows = cache::CacheOptions::RowsFromFraction(fraction, 2708);
      co.policy = policy;
      std::unique_ptr<cache::FeatureCache> fc;
      ASSERT_TRUE(cache::FeatureCache::Create(co, &fc).ok());
      ASSERT_TRUE(FillCache(*plain, hot, fc.get()).ok());
      auto cached = std::make_shared<CachedSource>(
          cluster, std::shared_ptr<cache::FeatureCache>(std::move(fc)));
      std::unique_ptr<Session> s;
      ASSERT_TRUE(cached->NewSession(&s).ok());
      SplitMix64 rng(11);
      for (int round = 0; round < 20; ++round) {
        std::vector<int64_t> ids(300);
        for (auto& v : ids) v = static_cast<int64_t>(DrawBelow(rng.Next(), 2708));
        std::vector<float> a(ids.size() * 1433), b(ids.size() * 1433);
        ASSERT_TRUE(s->Features(ids, a.data()).ok());
        ASSERT_TRUE(plain->Features(ids, b.data()).ok());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0)
            << cache::PolicyName(policy) << " " << fraction << " round " << round;
      }
      const SessionStats& st = s->stats();
      EXPECT_EQ(st.cache_lookups, 20 * 300);
      if (fraction == 0.0) {
        EXPECT_EQ(st.cache_hits, 0);
      } else {
        EXPECT_GT(st.cache_hits, 0);
      }
      EXPECT_EQ(st.cache_bytes, st.cache_hits * 1433 * 4);
      EXPECT_EQ(st.feature_bytes,
                (st.cache_lookups - st.cache_hits) * 1433 * 4);  // only misses crossed the wire
    }
  }
}

TEST(ClusterTimeoutTest, AServerThatDoesNotAnswerRaisesATimeoutNamingIt) {
  // A socket that accepts connections (the kernel's backlog) but never replies.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::string addr = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  ClusterSpec spec;
  spec.replicas = {{addr}};
  rpc::RpcOptions ro;
  ro.call_timeout_ms = 300;
  std::shared_ptr<Cluster> c;
  auto t0 = std::chrono::steady_clock::now();
  Status st = Cluster::Connect(spec, ro, &c);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st.code(), Status::Code::kDeadlineExceeded);
  EXPECT_THAT(st.message(),
              HasSubstr("server " + addr + " did not answer partition_info within 300 ms"));
  EXPECT_LT(secs, 10.0);  // a generous bound: the call must not hang
  close(fd);
}

}  // namespace
}  // namespace fanout::client

namespace fanout::client {
namespace {

// Runs a command; its exit status and what it printed (stdout and stderr).
int RunCommand(const std::string& cmd, std::string* out) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// fanout-ctl has-edges and sample --keep: the servers' answers, printed.
TEST_F(ClusterTest, FanoutCtlHasEdgesAndKeepShowWhatTheServerAnswers) {
  StartServers(1);
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl";
  const std::string addr = "127.0.0.1:" + std::to_string(servers_[0]->port());
  const sampler::CsrArrays& g = whole_.csr;
  const int64_t v = 5, u = g.indices[g.indptr[v]];  // u -> v is stored in row v
  int64_t absent = 0;
  while (std::find(g.indices.begin() + g.indptr[v], g.indices.begin() + g.indptr[v + 1], absent) !=
         g.indices.begin() + g.indptr[v + 1])
    ++absent;
  std::string out;
  ASSERT_EQ(RunCommand(ctl + " has-edges " + addr + " --rows " + std::to_string(v) + "," +
                           std::to_string(v) + " --neighbors " + std::to_string(u) + "," +
                           std::to_string(absent),
                       &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("row 5 holds " + std::to_string(u) + ": yes"));
  EXPECT_THAT(out, HasSubstr("row 5 holds " + std::to_string(absent) + ": no"));
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " has-edges " + addr + " --rows 1,2 --neighbors 3", &out), 1);
  EXPECT_THAT(out, HasSubstr("--rows has 2 ids but --neighbors 1"));
  out.clear();
  ASSERT_EQ(
      RunCommand(ctl + " sample " + addr + " --seeds 5 --fanout -1 --keep " + std::to_string(u),
                 &out),
      0)
      << out;
  EXPECT_THAT(out, HasSubstr("5 (" +
                             std::to_string(std::count(g.indices.begin() + g.indptr[v],
                                                       g.indices.begin() + g.indptr[v + 1], u)) +
                             "): " + std::to_string(u) + "["));
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " sample " + addr + " --seeds 5 --times 100", &out), 1);
  EXPECT_THAT(out, HasSubstr("--edge-times"));  // Cora has no timestamps
}

// fanout-ctl sample --sampler labor|walk: LABOR's edges with their weights
// (the in-process kernel's), one walk step per seed; bad names refused.
TEST_F(ClusterTest, FanoutCtlSamplesWithLaborAndWalkSteps) {
  StartServers(1);
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl";
  const std::string addr = "127.0.0.1:" + std::to_string(servers_[0]->port());
  std::string out;
  ASSERT_EQ(RunCommand(ctl + " sample " + addr + " --seeds 5,6 --fanout 2 --seed 3 --sampler labor",
                       &out),
            0)
      << out;
  sampler::SamplingOptions so;
  so.labor = true;
  sampler::OneHopResult r;
  std::vector<int64_t> nodes{5, 6};
  ASSERT_TRUE(sampler::SampleOneHop(whole_.csr.View(), nodes, 2, 0, 3, so, nullptr, &r).ok());
  EXPECT_THAT(out, HasSubstr("5 (" + std::to_string(r.offsets[1]) + "):"));
  EXPECT_THAT(out, HasSubstr("6 (" + std::to_string(r.offsets[2] - r.offsets[1]) + "):"));
  if (r.offsets[2] > 0) {
    EXPECT_THAT(out, HasSubstr(" w="));
  }
  out.clear();
  ASSERT_EQ(RunCommand(ctl + " sample " + addr + " --seeds 5,5,5 --seed 9 --sampler walk", &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("5 (1): "));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("(2)")));
  out.clear();
  EXPECT_NE(RunCommand(ctl + " sample " + addr + " --seeds 5 --sampler pagerank", &out), 0);
  EXPECT_THAT(out, HasSubstr("pagerank"));
}

// fanout-ctl on a heterogeneous dataset: info names the types, sample
// --type-fanout draws per edge type and names each edge's type, has-edges
// --edge-type looks at that type only; unknown types are named.
// MovieLens ml-latest-small (heterogeneous, undirected) in one partition at `dir`.
void PartitionMovieLens(const std::string& dir) {
  std::string out;
  ASSERT_EQ(RunCommand(std::string(FANOUT_BIN_DIR) +
                           "/fanout-partition --quiet --format movielens --input " +
                           datasets::testing::DataDir() +
                           "/movielens/ml-latest-small --undirected --parts 1 --method random "
                           "--output " +
                           dir,
                       &out),
            0)
      << out;
}

TEST(FanoutCtlHeteroTest, InfoSampleAndHasEdgesSpeakEdgeTypes) {
  datasets::testing::TempDir tmp;
  const std::string bin = std::string(FANOUT_BIN_DIR);
  std::string out;
  ASSERT_NO_FATAL_FAILURE(PartitionMovieLens(tmp.Sub("ml")));
  server::ServerOptions o;
  o.dataset_dir = tmp.Sub("ml");
  o.partition = 0;
  server::PartitionServer srv(o);
  ASSERT_TRUE(srv.Start().ok());
  const std::string ctl = bin + "/fanout-ctl", addr = "127.0.0.1:" + std::to_string(srv.port());
  out.clear();
  ASSERT_EQ(RunCommand(ctl + " info " + addr, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("node types (this partition's ids): user [0, 610) 0 features; movie "
                             "[610, 10352) 20 features"));
  EXPECT_THAT(out, HasSubstr("5 (genre,rev_has_genre,movie)"));
  // Movie 610 (Toy Story, five genres): 2 raters and every genre.
  out.clear();
  ASSERT_EQ(RunCommand(
                ctl + " sample " + addr +
                    " --seeds 610 --type-fanout rates=2 --type-fanout genre,rev_has_genre,movie=-1",
                &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("610 (7):"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '['), 7) << out;
  size_t rates = 0, genres = 0;
  for (size_t at = 0; (at = out.find("user,rates,movie]", at)) != std::string::npos; ++at) ++rates;
  for (size_t at = 0; (at = out.find("genre,rev_has_genre,movie]", at)) != std::string::npos; ++at)
    ++genres;
  EXPECT_EQ(rates, 2u) << out;
  EXPECT_EQ(genres, 5u) << out;
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " sample " + addr + " --seeds 610 --type-fanout likes=2", &out), 1);
  EXPECT_THAT(out, HasSubstr("edge type 'likes' is not one of the dataset's"));
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " sample " + addr + " --seeds 610 --type-fanout rates", &out), 1);
  EXPECT_THAT(out, HasSubstr("is not REL=N"));
  // A rater of Toy Story: an edge of type rates in row 610, and none of type tags (that user tagged
  // nothing there).
  out.clear();
  ASSERT_EQ(RunCommand(ctl + " sample " + addr + " --seeds 610 --type-fanout rates=1", &out), 0)
      << out;
  const size_t colon = out.find(": ");
  ASSERT_NE(colon, std::string::npos) << out;
  const std::string user = out.substr(colon + 2, out.find('[') - colon - 2);
  out.clear();
  ASSERT_EQ(RunCommand(ctl + " has-edges " + addr + " --rows 610,610 --neighbors " + user + "," +
                           user + " --edge-type rates",
                       &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("row 610 holds " + user + ": yes"));
  out.clear();
  ASSERT_EQ(RunCommand(ctl + " has-edges " + addr + " --rows 610 --neighbors " + user +
                           " --edge-type user,tags,movie",
                       &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("row 610 holds " + user + ": no"));
  srv.Stop();
}

// The in-flight quota is charged with the server's own bound of a reply, not a
// field the client may leave low: a heterogeneous request with fanout=0 and
// per-type fanouts of -1 (all edges) is charged its real draws (capped by the
// partition's largest degree) and refused over a small max_inflight_bytes.
TEST(TenantQuotaTest, AHeterogeneousRequestWithFanoutZeroIsChargedItsRealCost) {
  datasets::testing::TempDir tmp;
  const std::string bin = std::string(FANOUT_BIN_DIR);
  std::string out;
  ASSERT_NO_FATAL_FAILURE(PartitionMovieLens(tmp.Sub("ml")));
  const std::string token = "token-of-the-quota-tenant-01";
  {
    std::ofstream(tmp.Sub("tenants.conf"))
        << "tenant q token=" << token << " max_inflight_bytes=4096\ntenant default refuse\n";
    std::ofstream(tmp.Sub("token")) << token << "\n";
  }
  server::ServerOptions o;
  o.dataset_dir = tmp.Sub("ml");
  o.partition = 0;
  o.tenants_file = tmp.Sub("tenants.conf");
  server::PartitionServer srv(o);
  ASSERT_TRUE(srv.Start().ok());
  const std::string ctl = bin + "/fanout-ctl --auth-token-file " + tmp.Sub("token");
  const std::string addr = "127.0.0.1:" + std::to_string(srv.port());
  // Two raters of one movie: 12 + 2 x 16 bytes at most, under the quota.
  out.clear();
  EXPECT_EQ(
      RunCommand(ctl + " sample " + addr + " --seeds 610 --fanout 0 --type-fanout rates=2", &out),
      0)
      << out;
  // Every edge of every type (the Thrift fanout field says 0): bounded by the
  // largest degree (a user who rated thousands of movies), far over 4096 bytes.
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " sample " + addr +
                           " --seeds 610 --fanout 0 --type-fanout rates=-1 --type-fanout "
                           "genre,rev_has_genre,movie=-1",
                       &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("max_inflight_bytes")) << out;
  EXPECT_THAT(out, HasSubstr("'q'")) << out;
  srv.Stop();
}

TEST_F(ClusterTest, FanoutCtlHealthNamesEveryReplicaAndItsState) {
  server::ServerOptions so;
  so.admin_port = 0;
  StartServers(2, so);
  datasets::testing::TempDir tmp;
  const std::string file = tmp.Sub("cluster.json");
  const std::string a0 = "127.0.0.1:" + std::to_string(servers_[0]->port());
  const std::string a1 = "127.0.0.1:" + std::to_string(servers_[1]->port());
  {
    std::ofstream f(file);
    // Partition 1 has a replica that is not there; partition 0 lists partition 1's server.
    f << R"({"partitions": [{"partition": 0, "replicas": [")" << a0 << R"("]},
                             {"partition": 1, "replicas": [")"
      << a1 << R"(", "127.0.0.1:1", ")" << a0 << R"("]}]})";
  }
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl";
  std::string out;
  EXPECT_EQ(RunCommand(ctl + " health " + file + " --timeout-ms 1000", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("0     " + a0));
  EXPECT_THAT(out, HasSubstr("127.0.0.1:1 "));
  EXPECT_THAT(out, HasSubstr("serves partition 0, listed as 1"));
  EXPECT_THAT(
      out,
      HasSubstr("2 partitions, 1 replicas down, 1 serving something else, 0 partitions without a "
                "replica that answers"));
  // Every replica of partition 1 gone: exit 2.
  servers_[1]->Stop();
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " health " + file + " --timeout-ms 1000", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("1 partitions without a replica that answers"));
  // The stats view shows each server's connections.
  out.clear();
  EXPECT_EQ(RunCommand(ctl + " stats 127.0.0.1:" + std::to_string(servers_[0]->admin_port()), &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("connections: "));
  EXPECT_THAT(out, HasSubstr("refused at the limit"));
}

// A session that fails over tells the replica it moves to; fanout-ctl stats
// shows, per server, the retries and failovers clients made to it and, over
// all servers, the failovers away from each replica.
TEST_F(ClusterTest, FanoutCtlStatsShowsRetriesAndFailoversPerServer) {
  server::ServerOptions so;
  so.admin_port = 0;
  StartServers(1, so);
  server::ServerOptions bo = so;
  bo.dataset_dir = dir_;
  bo.partition = 0;
  auto backup = std::make_unique<server::PartitionServer>(bo);
  ASSERT_TRUE(backup->Start().ok());
  const std::string a0 = "127.0.0.1:" + std::to_string(servers_[0]->port());
  const std::string a1 = "127.0.0.1:" + std::to_string(backup->port());
  ClusterSpec spec;
  spec.replicas = {{a0, a1}};
  rpc::RpcOptions ro;
  ro.failover_backoff_ms = 10;
  std::shared_ptr<Cluster> c;
  ASSERT_TRUE(Cluster::Connect(spec, ro, &c).ok());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(c->NewSession(&session).ok());
  std::vector<int64_t> ids = {1, 2, 3};
  std::vector<float> rows(ids.size() * c->feature_dim());
  ASSERT_TRUE(session->Features(ids, rows.data()).ok());
  // Its replica goes away: the session moves to the other, which is told.
  servers_[0]->Stop();
  ASSERT_TRUE(session->Features(ids, rows.data()).ok());
  EXPECT_EQ(session->stats().failovers, 1);
  const nlohmann::json f = nlohmann::json::parse(backup->StatsJson())["failovers"];
  EXPECT_EQ(f["failovers_in"].get<int64_t>(), 1) << f.dump();
  EXPECT_EQ(f["from"][a0].get<int64_t>(), 1) << f.dump();
  EXPECT_THAT(f["last_reason"].get<std::string>(), HasSubstr(a0));
  std::string out;
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl";
  EXPECT_EQ(RunCommand(ctl + " stats 127.0.0.1:" + std::to_string(backup->admin_port()), &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("clients: 0 retries here after a failure, 1 failovers to here (from " +
                             a0 + " x1)"));
  EXPECT_THAT(out, HasSubstr("failovers away from each replica"));
  EXPECT_THAT(out, HasSubstr(a0));
  // A note for another partition is refused, naming both.
  std::unique_ptr<rpc::RpcClient> client;
  ASSERT_TRUE(rpc::RpcClient::Connect(a1, ro, &client).ok());
  Status st = client->NoteFailover(3, a0, "test", false);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("partition 3"));
  // Retries (the same replica again) are counted apart from failovers.
  ASSERT_TRUE(client->NoteFailover(0, a1, "closed as idle", true).ok());
  const nlohmann::json g = nlohmann::json::parse(backup->StatsJson())["failovers"];
  EXPECT_EQ(g["retries_in"].get<int64_t>(), 1) << g.dump();
  EXPECT_EQ(g["failovers_in"].get<int64_t>(), 1) << g.dump();
  // And in /metrics.
  httplib::Client http("127.0.0.1", backup->admin_port());
  auto m = http.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("fanout_client_failovers_in_total 1\n"));
  EXPECT_THAT(m->body, HasSubstr("fanout_client_retries_in_total 1\n"));
  backup->Stop();
}

}  // namespace
}  // namespace fanout::client

namespace fanout::client {
namespace {

// A replica of another dataset listed for a partition: fanout-ctl health
// calls it "wrong" (exit 1, not 0) and the cluster's health checks mark it
// down with the reason, as sessions would refuse it.
TEST_F(ClusterTest, AReplicaOfAnotherDatasetIsReportedAsSuchNotHealthy) {
  StartServers(2);
  server::ServerOptions other;
  other.dataset_dir = server::testing::CoraDir(3);  // another dataset id, other ranges
  other.partition = 1;
  other.local_socket = "off";
  server::PartitionServer stranger(other);
  ASSERT_TRUE(stranger.Start().ok());
  const std::string a0 = "127.0.0.1:" + std::to_string(servers_[0]->port());
  const std::string a1 = "127.0.0.1:" + std::to_string(servers_[1]->port());
  const std::string s1 = "127.0.0.1:" + std::to_string(stranger.port());
  datasets::testing::TempDir tmp;
  const std::string file =
      tmp.Write("cluster.json", R"({"partitions": [{"partition": 0, "replicas": [")" + a0 +
                                    R"("]}, {"partition": 1, "replicas": [")" + a1 + R"(", ")" +
                                    s1 + R"("]}]})");
  std::string out;
  EXPECT_EQ(
      RunCommand(std::string(FANOUT_BIN_DIR) + "/fanout-ctl health " + file + " --timeout-ms 2000",
                 &out),
      1)
      << out;
  EXPECT_THAT(out, HasSubstr(s1));
  EXPECT_THAT(out, HasSubstr("wrong"));
  EXPECT_THAT(out, HasSubstr("not the cluster's"));
  EXPECT_THAT(out, HasSubstr("0 replicas down, 1 serving something else, 0 partitions without"));
  // The cluster's own health checks.
  ClusterSpec spec;
  ASSERT_TRUE(ReadClusterFile(file, &spec).ok());
  rpc::RpcOptions ro;
  ro.health_check_ms = 100;
  std::shared_ptr<Cluster> c;
  ASSERT_TRUE(Cluster::Connect(spec, ro, &c).ok());
  ReplicaHealth h;
  for (int i = 0; i < 300; ++i) {
    for (const ReplicaHealth& r : c->Health())
      if (r.address == s1) h = r;
    // Down after two failed checks in a row: the first failure alone leaves it up.
    if (h.checks_failed > 0 && !h.healthy) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(h.healthy);
  EXPECT_GT(h.checks_failed, 0);
  EXPECT_THAT(h.last_error, HasSubstr("serves partition 1 of dataset"));
  for (const ReplicaHealth& r : c->Health()) {
    if (r.address != s1) {
      EXPECT_TRUE(r.healthy) << r.address << ": " << r.last_error;
    }
  }
}

// A cluster file carries TLS and the auth token (paths relative to the file):
// a cluster of TLS servers that require both is used like any other.
TEST_F(ClusterTest, AClusterFileWithTlsAndATokenReachesServersThatRequireThem) {
  datasets::testing::TempDir tmp;
  server::testing::TestCerts certs;
  ASSERT_TRUE(server::testing::MakeTestCerts(tmp.path(), &certs));
  server::ServerOptions so;
  so.tls_cert = certs.server;
  so.tls_key = certs.server_key;
  so.tls_ca = certs.ca;
  so.auth_token = "cluster-file-token-0123456789";
  StartServers(2, so);
  tmp.Write("token", so.auth_token + "\n");
  std::string text = R"({"partitions": [{"partition": 0, "replicas": ["127.0.0.1:)" +
                     std::to_string(servers_[0]->port()) +
                     R"("]}, {"partition": 1, "replicas": ["127.0.0.1:)" +
                     std::to_string(servers_[1]->port()) +
                     R"("]}], "tls": {"ca": "ca.pem", "cert": "client.pem", "key": "client.key"},
                     "auth_token_file": "token"})";
  const std::string file = tmp.Write("cluster.json", text);
  ClusterSpec spec;
  ASSERT_TRUE(ReadClusterFile(file, &spec).ok());
  EXPECT_EQ(spec.tls.ca, certs.ca);
  std::shared_ptr<Cluster> c;
  Status st = Cluster::Connect(spec, {}, &c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<Session> s;
  ASSERT_TRUE(c->NewSession(&s).ok());
  std::vector<int64_t> ids = {3, 2700};
  std::vector<int64_t> labels(2);
  ASSERT_TRUE(s->Labels(ids, labels.data()).ok());
  // fanout-ctl health reads the same file.
  std::string out;
  EXPECT_EQ(RunCommand(std::string(FANOUT_BIN_DIR) + "/fanout-ctl health " + file, &out), 0) << out;
  // Without the token's file: refused, saying why.
  tmp.Write("plain.json", text.substr(0, text.find(", \"tls\"")) + "}");
  ASSERT_TRUE(ReadClusterFile(tmp.Sub("plain.json"), &spec).ok());
  st = Cluster::Connect(spec, {}, &c);
  EXPECT_FALSE(st.ok());
  // Bad entries name the file.
  tmp.Write(
      "bad.json",
      R"({"partitions": [{"partition": 0, "replicas": ["127.0.0.1:1"]}], "tls": {"cert": "x"}})");
  st = ReadClusterFile(tmp.Sub("bad.json"), &spec);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("bad.json"));
  EXPECT_THAT(st.message(), HasSubstr("\"tls\""));
}

}  // namespace
}  // namespace fanout::client

namespace fanout::client {
namespace {

// Row `row`'s neighbors at the newest version, from its owner.
std::vector<int64_t> LiveRow(rpc::RpcClient* c, int64_t row) {
  rpc::SampleCall call;
  call.fanout = -1;
  rpc::SampleReply r;
  const std::vector<int64_t> ids{row};
  EXPECT_TRUE(c->Sample(ArrayView<const int64_t>(ids), call, &r).ok());
  auto n = r.Neighbors();
  return std::vector<int64_t>(n.begin(), n.end());
}

TEST_F(ClusterTest, FanoutCtlUpdateRoutesEachOperationToItsPartitionAndNamesABadLine) {
  datasets::testing::TempDir tmp;
  server::ServerOptions so;
  so.live_dir = tmp.Sub("live");
  StartServers(2, so);
  const std::string file = tmp.Sub("cluster.json");
  {
    std::ofstream f(file);
    f << R"({"partitions": [{"partition": 0, "replicas": ["127.0.0.1:)" << servers_[0]->port()
      << R"("]}, {"partition": 1, "replicas": ["127.0.0.1:)" << servers_[1]->port() << R"("]}]})";
  }
  rpc::RemotePartitionInfo info;
  auto c0 = Connect(0), c1 = Connect(1);
  ASSERT_TRUE(c0->Info(&info).ok());
  const int64_t mid = info.partition_offsets[1];  // partition 1's first node
  const bool in = info.direction == "in";
  // An edge between the partitions, both directions; a label in each.
  const int64_t a = 3, b = mid + 5;
  {
    std::ofstream f(tmp.Sub("updates.csv"));
    f << "# two edges and two labels\nadd," << a << "," << b << "\n\nlabel," << a << ",6\nlabel,"
      << b << ",4\n";
  }
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl update " + file;
  std::string out;
  ASSERT_EQ(RunCommand(ctl + " " + tmp.Sub("updates.csv") + " --undirected --batch 2", &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("3 operations in 2 batches"));
  // a -> b and b -> a, each in its owner's row (whatever the stored direction).
  (void)in;
  const std::vector<int64_t> ra = LiveRow(c0.get(), a), rb = LiveRow(c1.get(), b);
  EXPECT_EQ(ra.back(), b);
  EXPECT_EQ(rb.back(), a);
  std::string labels;
  const std::vector<int64_t> av{a}, bv{b};
  ASSERT_TRUE(c0->Labels(ArrayView<const int64_t>(av), &labels).ok());
  EXPECT_EQ(reinterpret_cast<const int64_t*>(labels.data())[0], 6);
  ASSERT_TRUE(c1->Labels(ArrayView<const int64_t>(bv), &labels).ok());
  EXPECT_EQ(reinterpret_cast<const int64_t*>(labels.data())[0], 4);
  // From standard input: a removal; then a malformed line is named.
  out.clear();
  ASSERT_EQ(RunCommand("printf 'remove," + std::to_string(a) + "," + std::to_string(b) + "\\n' | " +
                           ctl + " --undirected --quiet",
                       &out),
            0)
      << out;
  EXPECT_NE(LiveRow(c0.get(), a).back(), b);
  out.clear();
  EXPECT_EQ(RunCommand("printf 'add,1,2\\nadd,1,x\\n' | " + ctl, &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("stdin line 2: SRC and DST must be integers"));
  out.clear();
  EXPECT_EQ(RunCommand("printf 'add,1,999999999\\n' | " + ctl, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("names a node outside"));
  // A static cluster is refused by name.
  servers_.clear();
  StartServers(2);
  {
    std::ofstream f(file);
    f << R"({"partitions": [{"partition": 0, "replicas": ["127.0.0.1:)" << servers_[0]->port()
      << R"("]}, {"partition": 1, "replicas": ["127.0.0.1:)" << servers_[1]->port() << R"("]}]})";
  }
  out.clear();
  EXPECT_EQ(RunCommand("printf 'add,1,2\\n' | " + ctl, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("serves a static partition: start it with --live-dir"));
}

}  // namespace
}  // namespace fanout::client

namespace fanout::client {
namespace {

std::vector<int64_t> Values(const Array& a) {
  const int64_t* p = a.ptr<int64_t>();
  return std::vector<int64_t>(p, p + a.numel());
}

// Operators see a live partition's writes: /metrics, /stats and fanout-ctl
// stats report its committed version, updates, retries, log and delta.
TEST_F(ClusterTest, OperatorsSeeALivePartitionsWritesInMetricsStatsAndCtl) {
  datasets::testing::TempDir tmp;
  server::ServerOptions so;
  so.live_dir = tmp.Sub("live");
  StartServers(2, so);
  std::unique_ptr<UpdateWriter> w;
  ASSERT_TRUE(UpdateWriter::Connect(Spec(), {}, &w).ok());
  const int64_t mid = w->info(1).node_begin;
  GraphUpdates u;
  u.add_edges = {
      {1, 2}, {3, 4}, {mid, 0}};  // two to partition 0's rows, one to 1's (or the reverse)
  u.label_nodes = {1};
  u.labels = {2};
  std::vector<int64_t> versions;
  ASSERT_TRUE(w->Apply(u, false, &versions).ok());
  u.add_edges = {{1, 5}};
  u.label_nodes.clear();
  u.labels.clear();
  ASSERT_TRUE(w->Apply(u, false, &versions).ok());
  const auto j = nlohmann::json::parse(servers_[0]->StatsJson());
  const auto& lv = j["live"];
  EXPECT_EQ(lv["committed_version"], versions[0] >= 0 ? versions[0] : 1) << lv.dump();
  const int64_t batches = lv["batches"].get<int64_t>(), ops = lv["operations"].get<int64_t>();
  EXPECT_GE(batches, 1);
  EXPECT_GT(lv["log"]["bytes"].get<int64_t>(), live::kLogHeaderBytes);
  EXPECT_GT(lv["delta"]["bytes"].get<int64_t>(), 0);
  httplib::Client http("127.0.0.1", servers_[0]->admin_port());
  auto m = http.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("fanout_updates_total " + std::to_string(ops) + "\n"));
  EXPECT_THAT(m->body, HasSubstr("fanout_live_batches_total " + std::to_string(batches) + "\n"));
  EXPECT_THAT(m->body,
              HasSubstr("fanout_live_committed_version " + lv["committed_version"].dump() + "\n"));
  EXPECT_THAT(m->body, HasSubstr("fanout_live_log_bytes "));
  EXPECT_THAT(m->body, HasSubstr("fanout_live_delta_rows "));
  std::string out;
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl";
  EXPECT_EQ(RunCommand(ctl + " stats 127.0.0.1:" + std::to_string(servers_[0]->admin_port()), &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("live: version " + lv["committed_version"].dump() + " committed"));
  EXPECT_THAT(out, HasSubstr(std::to_string(batches) + " batches (0 retries, 0 refused)"));
}

// Loaders over live partitions: each batch reads one version per partition
// and says which; a snapshot of versions gives the same batches whatever is
// written meanwhile, and version 0 gives the static graph's batches.
TEST_F(ClusterTest, LoaderBatchesReadOneVersionPerPartitionAndASnapshotStaysPut) {
  datasets::testing::TempDir tmp;
  server::ServerOptions so;
  so.live_dir = tmp.Sub("live");
  StartServers(2, so);
  auto cluster = ConnectCluster();
  std::vector<int64_t> seeds(64);
  std::iota(seeds.begin(), seeds.end(), int64_t{0});
  LoaderOptions o;
  o.batch_size = 32;
  o.fanouts = {5, 3};
  o.shuffle = false;
  o.num_workers = 1;
  auto epoch = [&](const LoaderOptions& lo, std::vector<Batch>* out) {
    BatchLoader loader(cluster, seeds, lo);
    Batch b;
    out->clear();
    while (loader.Next(&b)) out->push_back(b);
  };
  std::vector<Batch> static_batches, before, after, pinned;
  epoch(o, &static_batches);
  ASSERT_EQ(static_batches.size(), 2u);
  EXPECT_EQ(static_batches[0].versions, (std::vector<int64_t>{0, 0}));
  // Updates to both partitions: every seed of the first batch gains an edge.
  auto c0 = Connect(0), c1 = Connect(1);
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(c0->Info(&info).ok());
  const int64_t mid = info.partition_offsets[1];
  live::UpdateBatch b0;
  for (int64_t s = 0; s < 32; ++s) b0.add_edges.push_back({s, mid + s});
  int64_t v = 0;
  ASSERT_TRUE(c0->ApplyUpdates(live::EncodeUpdateBatch(b0), &v).ok());
  ASSERT_EQ(v, 1);
  epoch(o, &after);
  EXPECT_EQ(after[0].versions[0], 1);
  EXPECT_NE(Values(after[0].edge_index), Values(static_batches[0].edge_index));
  // Pinned at the base: the static graph's batches, whatever is written now.
  LoaderOptions at0 = o;
  at0.snapshot = {0, 0};
  epoch(at0, &pinned);
  for (size_t i = 0; i < pinned.size(); ++i) {
    EXPECT_EQ(pinned[i].versions, (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(Values(pinned[i].edge_index), Values(static_batches[i].edge_index)) << i;
    EXPECT_EQ(Values(pinned[i].n_id), Values(static_batches[i].n_id)) << i;
  }
  // Pinned at version 1 while another batch is written: the same batches.
  LoaderOptions at1 = o;
  at1.snapshot = {1, 0};
  epoch(at1, &before);
  live::UpdateBatch more;
  for (int64_t s = 0; s < 32; ++s) more.remove_edges.push_back({s, mid + s});
  ASSERT_TRUE(c0->ApplyUpdates(live::EncodeUpdateBatch(more), &v).ok());
  epoch(at1, &pinned);
  for (size_t i = 0; i < pinned.size(); ++i)
    EXPECT_EQ(Values(pinned[i].edge_index), Values(before[i].edge_index)) << i;
  EXPECT_EQ(Values(before[0].edge_index), Values(after[0].edge_index));
  // snapshot_epoch: an update in the middle of an epoch is seen from the
  // next epoch on, never by the rest of this one.
  LoaderOptions per_epoch = o;
  per_epoch.snapshot_epoch = true;
  {
    BatchLoader loader(cluster, seeds, per_epoch);
    Batch first, second;
    ASSERT_TRUE(loader.Next(&first));
    const std::vector<int64_t> pinned_at = first.versions;
    ASSERT_EQ(pinned_at, (std::vector<int64_t>{2, 0}));
    ASSERT_TRUE(c0->ApplyUpdates(live::EncodeUpdateBatch(b0), &v).ok());  // version 3
    ASSERT_TRUE(c1->ApplyUpdates(live::EncodeUpdateBatch(live::UpdateBatch{{{mid, 0}}}), &v).ok());
    ASSERT_TRUE(loader.Next(&second));
    EXPECT_EQ(second.versions, pinned_at);
    ASSERT_FALSE(loader.Next(&second));  // the epoch ends
    ASSERT_TRUE(loader.Next(&second));   // the next one pins the newest
    EXPECT_EQ(second.versions, (std::vector<int64_t>{3, 1}));
  }
  // A version no partition has reached yet fails the batch, naming it.
  LoaderOptions ahead = o;
  ahead.snapshot = {9, 0};
  BatchLoader loader(cluster, seeds, ahead);
  Batch b;
  EXPECT_THROW(
      {
        while (loader.Next(&b)) {
        }
      },
      std::exception);
}

// Replicas of live partitions: the writer finds each partition's primary
// whatever the order the cluster file lists them in, an acknowledged batch
// is on the followers already, a loader pinned at a snapshot gives the same
// batches when the replica it reads is stopped in the middle of an epoch
// (it fails over to the other, which holds the same versions), writes go on
// without a stopped follower, and a partition with two primaries is refused.
TEST_F(ClusterTest, ReplicasOfALivePartitionAgreeAndFailoverMidEpochChangesNoPinnedBatch) {
  datasets::testing::TempDir tmp;
  server::ServerOptions so;
  so.live_dir = tmp.Sub("primaries");
  so.live_replica_wait_ms = 300;
  StartServers(2, so);
  std::vector<std::unique_ptr<server::PartitionServer>> followers;
  for (int p = 0; p < 2; ++p) {
    server::ServerOptions o = so;
    o.dataset_dir = dir_;
    o.partition = p;
    o.local_socket = "off";
    o.live_dir = tmp.Sub("followers");
    o.live_follow = "127.0.0.1:" + std::to_string(servers_[p]->port());
    followers.push_back(std::make_unique<server::PartitionServer>(o));
    Status st = followers.back()->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto addr = [](const server::PartitionServer& s) {
    return "127.0.0.1:" + std::to_string(s.port());
  };
  ClusterSpec spec;
  spec.replicas = {{addr(*followers[0]), addr(*servers_[0])},
                   {addr(*servers_[1]), addr(*followers[1])}};
  std::unique_ptr<UpdateWriter> w;
  Status st = UpdateWriter::Connect(spec, {}, &w);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const int64_t mid = w->info(1).node_begin;
  std::vector<int64_t> versions;
  for (int i = 0; i < 4; ++i) {
    GraphUpdates u;
    for (int64_t s = 0; s < 16; ++s) {
      u.add_edges.push_back({s + 16 * i, mid + s});
      u.add_edges.push_back({mid + s + 16 * i, s});
    }
    ASSERT_TRUE(w->Apply(u, false, &versions).ok());
  }
  ASSERT_EQ(versions, (std::vector<int64_t>{4, 4}));
  for (int p = 0; p < 2; ++p) {
    std::unique_ptr<rpc::RpcClient> c;
    ASSERT_TRUE(rpc::RpcClient::Connect(addr(*followers[p]), {}, &c).ok());
    rpc::RemotePartitionInfo info;
    ASSERT_TRUE(c->Info(&info).ok());
    EXPECT_EQ(info.live_version, 4) << "partition " << p;
  }
  // Operators see who follows whom.
  const std::string ctl = std::string(FANOUT_BIN_DIR) + "/fanout-ctl";
  std::string out;
  EXPECT_EQ(RunCommand(ctl + " stats 127.0.0.1:" + std::to_string(servers_[1]->admin_port()), &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("live replicas (primary):"));
  EXPECT_THAT(out, HasSubstr("in sync (0 behind)"));
  out.clear();
  EXPECT_EQ(
      RunCommand(ctl + " stats 127.0.0.1:" + std::to_string(followers[1]->admin_port()), &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("live replica: follows " + addr(*servers_[1])));
  EXPECT_THAT(out, HasSubstr("following, 0 versions behind"));
  rpc::RpcOptions ro;
  ro.data_plane = rpc::DataPlaneMode::kTcp;
  std::shared_ptr<Cluster> cluster;
  ASSERT_TRUE(Cluster::Connect(spec, ro, &cluster).ok());
  std::vector<int64_t> seeds;
  for (int64_t s = 0; s < 64; ++s) seeds.insert(seeds.end(), {s, mid + s});
  LoaderOptions o;
  o.batch_size = 32;
  o.fanouts = {5, 3};
  o.shuffle = false;
  o.num_workers = 1;
  o.prefetch = 1;  // the batches after the stop are sampled after it
  o.snapshot = {3, 2};
  std::vector<Batch> reference;
  {
    BatchLoader loader(cluster, seeds, o);
    Batch b;
    while (loader.Next(&b)) reference.push_back(b);
  }
  ASSERT_EQ(reference.size(), 4u);
  // The same epoch, the replica partition 0 is read from stopped after the
  // first batch (the session fails over to the other), and partition 1's
  // follower stopped too, with a write to partition 1 meanwhile (it goes on
  // without its follower, after the wait).
  std::vector<Batch> again;
  {
    BatchLoader loader(cluster, seeds, o);
    Batch b;
    ASSERT_TRUE(loader.Next(&b));
    again.push_back(b);
    std::string used;
    for (const PartitionPath& path : loader.stats().paths)
      if (path.partition == 0) used = path.replica;
    ASSERT_TRUE(used == addr(*followers[0]) || used == addr(*servers_[0])) << used;
    (used == addr(*followers[0]) ? followers[0] : servers_[0])->Stop();
    followers[1]->Stop();
    GraphUpdates u;
    u.add_edges = {{mid + 1, mid + 2}};
    ASSERT_TRUE(w->Apply(u, false, &versions).ok());
    EXPECT_EQ(versions[1], 5);
    while (loader.Next(&b)) again.push_back(b);
    EXPECT_GE(loader.stats().failovers, 1);
  }
  ASSERT_EQ(again.size(), reference.size());
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(again[i].versions, (std::vector<int64_t>{3, 2})) << i;
    EXPECT_EQ(Values(again[i].n_id), Values(reference[i].n_id)) << i;
    EXPECT_EQ(Values(again[i].edge_index), Values(reference[i].edge_index)) << i;
  }
  // Two primaries for one partition: refused by name (partition 0's primary
  // again, should the loader above have stopped it).
  servers_[0]->Stop();
  servers_[0] = std::make_unique<server::PartitionServer>([&] {
    server::ServerOptions o0 = so;
    o0.dataset_dir = dir_;
    o0.partition = 0;
    o0.local_socket = "off";
    return o0;
  }());
  ASSERT_TRUE(servers_[0]->Start().ok());
  server::ServerOptions other = so;
  other.dataset_dir = dir_;
  other.partition = 0;
  other.local_socket = "off";
  other.live_dir = tmp.Sub("other");
  server::PartitionServer second(other);
  ASSERT_TRUE(second.Start().ok());
  ClusterSpec two = spec;
  two.replicas[0] = {addr(*servers_[0]), addr(second)};
  std::unique_ptr<UpdateWriter> refused;
  st = UpdateWriter::Connect(two, {}, &refused);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("two primaries"));
  second.Stop();
  for (auto& f : followers) f->Stop();
}

}  // namespace
}  // namespace fanout::client

namespace fanout::client {
namespace {

// A writer whose server stops answering (SIGSTOP) sends its batch again
// until it is answered; the copies the server finds in its sockets when it
// runs again apply once: the edge is there once, not once per copy.
TEST(UpdateWriterRetryTest, AServerThatStopsAnsweringAppliesARetriedBatchOnce) {
  datasets::testing::TempDir tmp;
  server::testing::Child child =
      server::testing::StartChild(server::testing::CoraDir(1), 0, {"--live-dir", tmp.Sub("live")});
  server::testing::Reaper reaper{{&child}};
  ASSERT_GT(child.port, 0);
  ClusterSpec spec;
  spec.replicas = {{child.address()}};
  rpc::RpcOptions ro;
  ro.call_timeout_ms = 300;
  std::unique_ptr<UpdateWriter> w;
  ASSERT_TRUE(UpdateWriter::Connect(spec, ro, &w).ok());
  EXPECT_NE(w->writer_id(), 0u);
  GraphUpdates u;
  u.add_edges = {{5, 6}};
  std::vector<int64_t> versions;
  ASSERT_TRUE(w->Apply(u, false, &versions).ok());
  server::testing::StopProcess(child.pid);
  u.add_edges = {{5, 1234}};
  Status st;
  std::thread writer([&] { st = w->Apply(u, false, &versions); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // several tries time out
  ASSERT_EQ(kill(child.pid, SIGCONT), 0);
  writer.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_GE(w->resent(), 2);
  std::unique_ptr<rpc::RpcClient> c;
  ASSERT_TRUE(rpc::RpcClient::Connect(child.address(), {}, &c).ok());
  // The row that stores src -> dst (the destination's where rows hold in-neighbors).
  const bool in = w->info(0).direction == "in";
  auto copies = [&](int64_t src, int64_t dst) -> int64_t {
    rpc::SampleCall call;
    call.fanout = -1;
    rpc::SampleReply r;
    const std::vector<int64_t> ids{in ? dst : src};
    EXPECT_TRUE(c->Sample(ArrayView<const int64_t>(ids), call, &r).ok());
    auto n = r.Neighbors();
    return std::count(n.begin(), n.end(), in ? src : dst);
  };
  EXPECT_EQ(copies(5, 1234), 1);
  EXPECT_EQ(copies(5, 6), 1);
  // Every copy the server read was logged (one version each), one applied:
  // wait until the copies still in its sockets are logged, then count again.
  rpc::RemotePartitionInfo info;
  const int64_t logged = 2 + w->resent();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(c->Info(&info).ok());
    if (info.live_version >= logged) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(info.live_version, logged);
  EXPECT_EQ(copies(5, 1234), 1);
  // An update whose part is over a batch's limit is refused whole, before anything is sent.
  {
    UpdateWriterOptions small;
    small.max_batch_operations = 2;
    std::unique_ptr<UpdateWriter> w3;
    ASSERT_TRUE(UpdateWriter::Connect(spec, ro, &w3, small).ok());
    GraphUpdates big;
    big.add_edges = {{7, 1}, {7, 2}, {7, 3}};
    ASSERT_TRUE(c->Info(&info).ok());
    const int64_t before = info.live_version;
    Status over = w3->Apply(big, false, &versions);
    EXPECT_EQ(over.code(), Status::Code::kInvalidArgument) << over.ToString();
    EXPECT_THAT(over.message(), HasSubstr("partition 0's part of this update holds 3 operations"));
    EXPECT_THAT(over.message(), HasSubstr("nothing was sent"));
    ASSERT_TRUE(c->Info(&info).ok());
    EXPECT_EQ(info.live_version, before);
  }
  // A writer told not to retry gives up at the first silence.
  UpdateWriterOptions once;
  once.retry_ms = 0;
  std::unique_ptr<UpdateWriter> w2;
  ASSERT_TRUE(UpdateWriter::Connect(spec, ro, &w2, once).ok());
  server::testing::StopProcess(child.pid);
  st = w2->Apply(u, false, &versions);
  EXPECT_EQ(st.code(), Status::Code::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(w2->resent(), 0);
  kill(child.pid, SIGCONT);
}

}  // namespace
}  // namespace fanout::client
