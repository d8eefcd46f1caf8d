// A live partition served over Thrift: updates acknowledged at a version,
// every read (hops, feature rows, labels) at a version, a restart that
// replays the log to the same versions, bad batches refused naming the
// operation with nothing applied, who may write, and kill -9 mid-ingest
// losing no acknowledged batch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "live/update_log.h"
#include "live/updates.h"
#include "rpc/codec.h"
#include "rpc/data_plane.h"
#include "server/live_replication.h"
#include "tests/server/child_server.h"
#include "tests/server/server_fixture.h"
#include "tests/server/test_certs.h"

namespace fanout::server {
namespace {

using ::testing::HasSubstr;
using testing::ServerTest;

class LiveServerTest : public ServerTest {
 protected:
  // Node u's neighbors at `version` (all of them, in row order).
  std::vector<int64_t> Row(rpc::RpcClient* c, int64_t u, int64_t version) {
    rpc::SampleCall call;
    call.fanout = -1;
    call.version = version;
    rpc::SampleReply r;
    const std::vector<int64_t> ids{u};
    Status st = c->Sample(ArrayView<const int64_t>(ids), call, &r);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (version >= 0) EXPECT_EQ(r.version, version);
    auto n = r.Neighbors();
    return std::vector<int64_t>(n.begin(), n.end());
  }
  int64_t Apply(rpc::RpcClient* c, const live::UpdateBatch& b) {
    int64_t version = -1;
    Status st = c->ApplyUpdates(live::EncodeUpdateBatch(b), &version);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return version;
  }
  datasets::testing::TempDir tmp_;
};

TEST_F(LiveServerTest, UpdatesAreReadAtTheirVersionsAndSurviveARestart) {
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  StartServers(1, o);
  auto c = Connect(0);
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(c->Info(&info).ok());
  EXPECT_EQ(info.live_version, 0);
  // Reads at a version go over Thrift and the UCX data plane (where built:
  // tests/dataplane); no same-host export yet.
  if (rpc::DataPlaneBuilt()) EXPECT_GT(info.data_port, 0);
  EXPECT_TRUE(info.local_socket.empty());
  // A node with neighbors.
  int64_t u = 0;
  while (whole_.csr.indptr[u + 1] - whole_.csr.indptr[u] < 2) ++u;
  const std::vector<int64_t> base(whole_.csr.indices.begin() + whole_.csr.indptr[u],
                                  whole_.csr.indices.begin() + whole_.csr.indptr[u + 1]);
  EXPECT_EQ(Row(c.get(), u, -1), base);
  // 1: two edges added; 2: the first base neighbor removed; 3: a label and a row.
  live::UpdateBatch b1;
  b1.add_edges = {{u, 7}, {u, 9}};
  ASSERT_EQ(Apply(c.get(), b1), 1);
  live::UpdateBatch b2;
  b2.remove_edges = {{u, base[0]}};
  ASSERT_EQ(Apply(c.get(), b2), 2);
  // has_edges (what negatives exclude) answers at the newest version.
  {
    const std::vector<int64_t> rows{u, u, u}, nbrs{7, base[0], base[1]};
    std::string exists;
    ASSERT_TRUE(
        c->HasEdges(ArrayView<const int64_t>(rows), ArrayView<const int64_t>(nbrs), &exists).ok());
    EXPECT_EQ(exists, std::string("\x01\x00\x01", 3));
  }
  std::string base_row;
  const std::vector<int64_t> uv{u};
  ASSERT_TRUE(c->Features(ArrayView<const int64_t>(uv), &base_row).ok());
  std::string base_label;
  ASSERT_TRUE(c->Labels(ArrayView<const int64_t>(uv), &base_label).ok());
  live::UpdateBatch b3;
  b3.feature_rows = {u};
  b3.row_bytes = static_cast<int64_t>(base_row.size());
  b3.feature_bytes = std::string(base_row.size(), '\x01');
  b3.label_rows = {u};
  b3.labels = {5};
  ASSERT_EQ(Apply(c.get(), b3), 3);

  std::vector<int64_t> v1 = base;
  v1.push_back(7);
  v1.push_back(9);
  std::vector<int64_t> v2;
  for (int64_t x : v1)
    if (x != base[0]) v2.push_back(x);
  auto expect_versions = [&](rpc::RpcClient* cl) {
    EXPECT_EQ(Row(cl, u, 0), base);
    EXPECT_EQ(Row(cl, u, 1), v1);
    EXPECT_EQ(Row(cl, u, 2), v2);
    EXPECT_EQ(Row(cl, u, -1), v2);
    std::string row, label;
    ASSERT_TRUE(cl->Features(ArrayView<const int64_t>(uv), &row, 2).ok());
    EXPECT_EQ(row, base_row);
    ASSERT_TRUE(cl->Features(ArrayView<const int64_t>(uv), &row, 3).ok());
    EXPECT_EQ(row, b3.feature_bytes);
    ASSERT_TRUE(cl->Labels(ArrayView<const int64_t>(uv), &label, 2).ok());
    EXPECT_EQ(label, base_label);
    ASSERT_TRUE(cl->Labels(ArrayView<const int64_t>(uv), &label, -1).ok());
    int64_t l = 0;
    std::memcpy(&l, label.data(), 8);
    EXPECT_EQ(l, 5);
    // A version not reached yet.
    rpc::SampleCall call;
    call.version = 4;
    rpc::SampleReply r;
    Status st = cl->Sample(ArrayView<const int64_t>(uv), call, &r);
    EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr("version 4 is not committed"));
  };
  expect_versions(c.get());
  const std::string stats = servers_[0]->StatsJson();
  EXPECT_THAT(stats, HasSubstr("\"committed_version\": 3"));
  EXPECT_THAT(stats, HasSubstr("\"added_edges\": 2"));

  // A restart replays the log to the same versions.
  servers_[0]->Stop();
  servers_.clear();
  StartServers(1, o);
  auto c2 = Connect(0);
  ASSERT_TRUE(c2->Info(&info).ok());
  EXPECT_EQ(info.live_version, 3);
  expect_versions(c2.get());
  EXPECT_THAT(servers_[0]->StatsJson(), HasSubstr("\"replayed_at_start\": 3"));
}

// Waits (up to a minute: not a timing assertion) for the server's live
// stats to say `compactions` compactions.
bool WaitForCompactions(PartitionServer* s, int64_t compactions) {
  for (int i = 0; i < 600; ++i) {
    const nlohmann::json j = nlohmann::json::parse(s->StatsJson());
    if (j["live"]["compaction"]["compactions"].get<int64_t>() >= compactions) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST_F(LiveServerTest, ACompactionFoldsTheDeltaIntoABaseEverySamplerReads) {
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  o.live_compact_ratio = 1e-9;  // every change is due
  o.live_retain_s = 3600;       // the generation before stays
  StartServers(1, o);
  auto c = Connect(0);
  int64_t u = 0;
  while (whole_.csr.indptr[u + 1] - whole_.csr.indptr[u] < 2) ++u;
  const std::vector<int64_t> base(whole_.csr.indices.begin() + whole_.csr.indptr[u],
                                  whole_.csr.indices.begin() + whole_.csr.indptr[u + 1]);
  live::UpdateBatch b1;
  b1.add_edges = {{u, 7}, {u, 9}};
  ASSERT_EQ(Apply(c.get(), b1), 1);
  ASSERT_TRUE(WaitForCompactions(servers_[0].get(), 1));
  std::vector<int64_t> v1 = base;
  v1.push_back(7);
  v1.push_back(9);
  EXPECT_EQ(Row(c.get(), u, 0), base);  // the generation before, kept
  EXPECT_EQ(Row(c.get(), u, 1), v1);    // the new base
  // A walk step reads the new base: the changed row is a base row there.
  auto walk = [&](rpc::RpcClient* cl, int64_t version, std::vector<int64_t>* to) {
    const std::vector<int64_t> ids(64, u);
    std::vector<uint64_t> keys(64);
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = 1000 + i;
    rpc::SampleCall call;
    call.walk_keys = ArrayView<const uint64_t>(keys);
    call.version = version;
    rpc::SampleReply r;
    Status st = cl->Sample(ArrayView<const int64_t>(ids), call, &r);
    auto n = r.Neighbors();
    to->assign(n.begin(), n.end());
    return st;
  };
  std::vector<int64_t> steps;
  ASSERT_TRUE(walk(c.get(), 1, &steps).ok());
  std::set<int64_t> seen(steps.begin(), steps.end());
  EXPECT_TRUE(seen.count(7) || seen.count(9)) << "64 steps from a row of " << v1.size();
  for (int64_t x : steps) EXPECT_TRUE(std::count(v1.begin(), v1.end(), x)) << x;
  // A change after the new base: uniform hops read it, and so do walks and
  // LABOR (through the changed row's merged edges; the kept generation
  // holds the next compaction back).
  live::UpdateBatch b2;
  b2.remove_edges = {{u, base[0]}};
  ASSERT_EQ(Apply(c.get(), b2), 2);
  std::vector<int64_t> v2;
  for (int64_t x : v1)
    if (x != base[0]) v2.push_back(x);
  EXPECT_EQ(Row(c.get(), u, 2), v2);
  ASSERT_TRUE(walk(c.get(), 2, &steps).ok());
  for (int64_t x : steps) EXPECT_TRUE(std::count(v2.begin(), v2.end(), x)) << x;
  {
    rpc::SampleCall call;
    call.fanout = -1;
    call.labor = true;
    call.version = 2;
    rpc::SampleReply r;
    const std::vector<int64_t> ids{u};
    ASSERT_TRUE(c->Sample(ArrayView<const int64_t>(ids), call, &r).ok());
    auto n = r.Neighbors();
    EXPECT_EQ(std::vector<int64_t>(n.begin(), n.end()), v2);  // LABOR at fanout -1: every edge
    call.version = 1;
    ASSERT_TRUE(c->Sample(ArrayView<const int64_t>(ids), call, &r).ok());
    n = r.Neighbors();
    EXPECT_EQ(std::vector<int64_t>(n.begin(), n.end()), v1);
  }
  // Asked for by name (fanout-ctl compact): refused while the generation
  // before is kept, naming it.
  int64_t cv = 0, ce = 0;
  double cs = 0;
  Status busy = c->Compact(&cv, &ce, &cs);
  EXPECT_EQ(busy.code(), Status::Code::kAborted) << busy.ToString();
  EXPECT_THAT(busy.message(), HasSubstr("is still kept for reads below version 1"));
  // Degrees answer at the newest version.
  {
    const std::vector<int64_t> uv{u};
    std::string degrees;
    ASSERT_TRUE(c->Degrees(ArrayView<const int64_t>(uv), &degrees).ok());
    int64_t d = 0;
    std::memcpy(&d, degrees.data(), 8);
    EXPECT_EQ(d, static_cast<int64_t>(v2.size()));
  }
  nlohmann::json j = nlohmann::json::parse(servers_[0]->StatsJson());
  EXPECT_EQ(j["live"]["compaction"]["base_version"], 1);
  EXPECT_EQ(j["live"]["compaction"]["retained_version"], 0);

  // Restarted with no retention: the log replays over the dataset's base,
  // a compaction folds both batches, the generation before is dropped and
  // version 0 is refused naming the oldest version kept.
  servers_[0]->Stop();
  servers_.clear();
  o.live_retain_s = 0;
  StartServers(1, o);
  auto c2 = Connect(0);
  ASSERT_TRUE(WaitForCompactions(servers_[0].get(), 1));
  for (int i = 0; i < 600; ++i) {
    j = nlohmann::json::parse(servers_[0]->StatsJson());
    if (j["live"]["compaction"]["retained_version"] == -1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(j["live"]["compaction"]["base_version"], 2);
  EXPECT_EQ(Row(c2.get(), u, 2), v2);
  ASSERT_TRUE(walk(c2.get(), 2, &steps).ok());
  rpc::SampleCall call;
  call.version = 0;
  rpc::SampleReply r;
  const std::vector<int64_t> uv{u};
  Status gone = c2->Sample(ArrayView<const int64_t>(uv), call, &r);
  EXPECT_EQ(gone.code(), Status::Code::kNotFound) << gone.ToString();
  EXPECT_THAT(gone.message(), HasSubstr("the oldest version it reads is 2"));
  // Nothing new to fold: said (up to date, the base's version), not an
  // error; a batch later, the compaction asked for runs.
  bool up_to_date = false;
  Status nothing = c2->Compact(&cv, &ce, &cs, &up_to_date);
  ASSERT_TRUE(nothing.ok()) << nothing.ToString();
  EXPECT_TRUE(up_to_date);
  EXPECT_EQ(cv, 2);
  live::UpdateBatch b3;
  b3.add_edges = {{u, 11}};
  ASSERT_EQ(Apply(c2.get(), b3), 3);
  // The trigger may have run first: then the generation before is kept for
  // a poll's time (retain 0), and the asked compaction finds nothing newer.
  for (int i = 0; i < 100; ++i) {
    Status st = c2->Compact(&cv, &ce, &cs);
    if (st.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  j = nlohmann::json::parse(servers_[0]->StatsJson());
  EXPECT_EQ(j["live"]["compaction"]["base_version"], 3);
  std::vector<int64_t> v3 = v2;
  v3.push_back(11);
  EXPECT_EQ(Row(c2.get(), u, 3), v3);
}

TEST_F(LiveServerTest, ARetriedBatchIsAnsweredNotAppliedAgainBeforeAndAfterARestart) {
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  StartServers(1, o);
  auto c = Connect(0);
  const int64_t u = 3;
  const std::vector<int64_t> base = Row(c.get(), u, -1);
  live::UpdateBatch b;
  b.add_edges = {{u, 11}};
  b.writer = 0xfeed;
  b.writer_seq = 1;
  const std::string bytes = live::EncodeUpdateBatch(b);
  int64_t v1 = -1, v2 = -1, ops = -1;
  bool retry = true;
  ASSERT_TRUE(c->ApplyUpdates(bytes, &v1, &ops, &retry).ok());
  EXPECT_FALSE(retry);
  ASSERT_TRUE(c->ApplyUpdates(bytes, &v2, &ops, &retry).ok());  // the same batch again
  EXPECT_TRUE(retry);
  EXPECT_GT(v2, v1);  // its own version, where the first copy is readable too
  std::vector<int64_t> once = base;
  once.push_back(11);
  EXPECT_EQ(Row(c.get(), u, -1), once);
  // Another writer's batch with the same number is new; so is this writer's next.
  live::UpdateBatch other = b;
  other.writer = 0xbeef;
  int64_t v = -1;
  ASSERT_TRUE(c->ApplyUpdates(live::EncodeUpdateBatch(other), &v, &ops, &retry).ok());
  EXPECT_FALSE(retry);
  live::UpdateBatch next = b;
  next.writer_seq = 2;
  next.add_edges = {{u, 12}};
  ASSERT_TRUE(c->ApplyUpdates(live::EncodeUpdateBatch(next), &v, &ops, &retry).ok());
  EXPECT_FALSE(retry);
  once.push_back(11);
  once.push_back(12);
  EXPECT_EQ(Row(c.get(), u, -1), once);
  // A batch without a writer is never taken for a retry.
  live::UpdateBatch anonymous;
  anonymous.add_edges = {{u, 13}};
  ASSERT_TRUE(c->ApplyUpdates(live::EncodeUpdateBatch(anonymous), &v, &ops, &retry).ok());
  ASSERT_TRUE(c->ApplyUpdates(live::EncodeUpdateBatch(anonymous), &v, &ops, &retry).ok());
  EXPECT_FALSE(retry);
  once.push_back(13);
  once.push_back(13);
  EXPECT_EQ(Row(c.get(), u, -1), once);
  EXPECT_THAT(servers_[0]->StatsJson(), HasSubstr("\"retries\": 1"));
  // After a restart the log's replay knows the writers again.
  servers_[0]->Stop();
  servers_.clear();
  StartServers(1, o);
  auto c2 = Connect(0);
  EXPECT_EQ(Row(c2.get(), u, -1), once);
  ASSERT_TRUE(c2->ApplyUpdates(bytes, &v, &ops, &retry).ok());
  EXPECT_TRUE(retry);
  ASSERT_TRUE(c2->ApplyUpdates(live::EncodeUpdateBatch(next), &v, &ops, &retry).ok());
  EXPECT_TRUE(retry);
  EXPECT_EQ(Row(c2.get(), u, -1), once);
}

TEST_F(LiveServerTest, ABadBatchIsRefusedNamingItsOperationAndNothingIsApplied) {
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  StartServers(1, o);
  auto c = Connect(0);
  const int64_t n = whole_.csr.indptr.size() - 1;
  live::UpdateBatch bad;
  bad.add_edges = {{0, 1}, {0, n}};  // the second names a node that does not exist
  int64_t version = -1;
  Status st = c->ApplyUpdates(live::EncodeUpdateBatch(bad), &version);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("added edge 1: destination " + std::to_string(n)));
  st = c->ApplyUpdates("junk that is no batch", &version);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(c->Info(&info).ok());
  EXPECT_EQ(info.live_version, 0);
  EXPECT_THAT(servers_[0]->StatsJson(), HasSubstr("\"refused\": 2"));
}

TEST_F(LiveServerTest, OnlyATenantWithWriteMayUpdateAndAStaticPartitionTakesNone) {
  const std::string writer = "token-of-the-writer-0001", reader = "token-of-the-reader-0001";
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  o.tenants_file = tmp_.Write("tenants.conf", "tenant w token=" + writer + " write=yes\n" +
                                                  "tenant r token=" + reader + "\n");
  StartServers(1, o);
  live::UpdateBatch b;
  b.add_edges = {{0, 1}};
  rpc::RpcOptions ro;
  ro.auth_token = reader;
  auto rc = Connect(0, ro);
  int64_t version = -1;
  Status st = rc->ApplyUpdates(live::EncodeUpdateBatch(b), &version);
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated);
  EXPECT_THAT(st.message(), HasSubstr("tenant 'r' may not write"));
  // Following the partition is a writer's power too (fetch_updates).
  rpc::RpcClient::UpdateFeed feed;
  st = rc->FetchUpdates(0, 0, "rogue", 1 << 20, &feed);
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated) << st.ToString();
  ro.auth_token = writer;
  auto wc = Connect(0, ro);
  ASSERT_TRUE(wc->ApplyUpdates(live::EncodeUpdateBatch(b), &version).ok());
  EXPECT_EQ(version, 1);
  ASSERT_TRUE(wc->FetchUpdates(0, 0, "replica-b", 1 << 20, &feed).ok());
  std::vector<FeedRecord> records;
  ASSERT_TRUE(ParseFeedRecords(feed.records, 1, &records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].batch, live::EncodeUpdateBatch(b));
  servers_[0]->Stop();
  servers_.clear();
  StartServers(1, {});
  auto sc = Connect(0);
  st = sc->ApplyUpdates(live::EncodeUpdateBatch(b), &version);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported);
  EXPECT_THAT(st.message(), HasSubstr("--live-dir"));
}

TEST_F(LiveServerTest, UpdateBytesCountAgainstTheWritersQuota) {
  const std::string writer = "token-of-the-writer-0002";
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  o.tenants_file = tmp_.Write(
      "tenants.conf", "tenant w token=" + writer + " write=yes max_update_bytes_per_s=4K\n");
  StartServers(1, o);
  rpc::RpcOptions ro;
  ro.auth_token = writer;
  auto c = Connect(0, ro);
  live::UpdateBatch b;
  for (int i = 0; i < 100; ++i) b.add_edges.push_back({0, i});  // 64 + 100 x 32 bytes
  const std::string bytes = live::EncodeUpdateBatch(b);
  ASSERT_LT(bytes.size(), 4096u);
  int64_t version = -1;
  ASSERT_TRUE(c->ApplyUpdates(bytes, &version).ok());
  Status st = c->ApplyUpdates(bytes, &version);  // the bucket holds a second's worth: 4 KiB
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("tenant 'w' is over its quota max_update_bytes_per_s"));
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(c->Info(&info).ok());
  EXPECT_EQ(info.live_version, 1);  // the refused batch is not logged
  const nlohmann::json stats = nlohmann::json::parse(servers_[0]->StatsJson());
  EXPECT_EQ(stats["tenants"]["tenants"][0]["update_bytes"], static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(stats["tenants"]["tenants"][0]["refused_quota"], 1);
  // A second later the bucket has refilled.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_TRUE(c->ApplyUpdates(bytes, &version).ok());
  EXPECT_EQ(version, 2);
}

// Replicas (server/live_replication.h): a follower applies its primary's log
// in the primary's order, and a write is acknowledged once the follower in
// sync holds it (readable there at once, at the same version, the same rows,
// feature rows and labels); the follower refuses writes naming its primary;
// one that was down falls out of sync (writes go on without it) and catches
// up before it serves again; a new one starts from nothing; one whose records
// the primary no longer keeps is refused at start, naming what to copy.
TEST_F(LiveServerTest, AFollowerHoldsEveryAcknowledgedBatchAndCatchesUpBeforeItServes) {
  const std::string dir = testing::CoraDir(1);
  auto start = [&](const std::string& live, const std::string& follow,
                   std::unique_ptr<PartitionServer>* out, int64_t checkpoint_mib = 64) {
    ServerOptions o;
    o.dataset_dir = dir;
    o.local_socket = "off";
    o.data_plane = false;
    o.live_dir = live;
    o.live_follow = follow;
    o.live_replica_wait_ms = 300;
    o.live_catch_up_s = 10;
    o.live_checkpoint_mib = checkpoint_mib;
    *out = std::make_unique<PartitionServer>(o);
    return (*out)->Start();
  };
  auto connect = [](const PartitionServer& s) {
    std::unique_ptr<rpc::RpcClient> c;
    EXPECT_TRUE(rpc::RpcClient::Connect("127.0.0.1", s.port(), {}, &c).ok());
    return c;
  };
  std::unique_ptr<PartitionServer> primary, follower;
  ASSERT_TRUE(start(tmp_.Sub("a"), "", &primary).ok());
  const std::string at = "127.0.0.1:" + std::to_string(primary->port());
  Status st = start(tmp_.Sub("b"), at, &follower);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto c = connect(*primary), f = connect(*follower);
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(f->Info(&info).ok());
  EXPECT_EQ(info.live_follows, at);
  ASSERT_TRUE(c->Info(&info).ok());
  EXPECT_EQ(info.live_follows, "");
  const int64_t n = info.num_nodes_total;
  std::string row0;
  const std::vector<int64_t> zero{0};
  ASSERT_TRUE(c->Features(ArrayView<const int64_t>(zero), &row0).ok());
  // Random batches: each acknowledged version is on the follower at once.
  std::mt19937_64 rng(11);
  std::vector<int64_t> watched;
  for (int i = 0; i < 12; ++i) watched.push_back(static_cast<int64_t>(rng() % n));
  auto batch = [&] {
    live::UpdateBatch b;
    for (int e = 0; e < 20; ++e) {
      const int64_t u = watched[rng() % watched.size()], v = static_cast<int64_t>(rng() % n);
      (rng() % 4 == 0 ? b.remove_edges : b.add_edges).push_back({u, v});
    }
    b.feature_rows = {watched[rng() % watched.size()]};
    b.row_bytes = static_cast<int64_t>(row0.size());
    b.feature_bytes = std::string(row0.size(), static_cast<char>(rng() % 100));
    b.label_rows = {watched[rng() % watched.size()]};
    b.labels = {static_cast<int64_t>(rng() % 7)};
    return b;
  };
  auto same = [&](rpc::RpcClient* a, rpc::RpcClient* b, int64_t upto, int64_t from = 0) {
    for (int64_t v = from; v <= upto; ++v) {
      for (int64_t u : watched) ASSERT_EQ(Row(a, u, v), Row(b, u, v)) << "node " << u << " v" << v;
      std::string ra, rb, la, lb;
      ASSERT_TRUE(a->Features(ArrayView<const int64_t>(watched), &ra, v).ok());
      ASSERT_TRUE(b->Features(ArrayView<const int64_t>(watched), &rb, v).ok());
      EXPECT_TRUE(ra == rb) << "features at v" << v;
      ASSERT_TRUE(a->Labels(ArrayView<const int64_t>(watched), &la, v).ok());
      ASSERT_TRUE(b->Labels(ArrayView<const int64_t>(watched), &lb, v).ok());
      EXPECT_TRUE(la == lb) << "labels at v" << v;
    }
  };
  int64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v = Apply(c.get(), batch());
    ASSERT_TRUE(f->Info(&info).ok());
    EXPECT_GE(info.live_version, v) << "acknowledged before the follower held it";
  }
  same(c.get(), f.get(), v);
  // The follower takes no write: the primary orders them.
  int64_t ignored = 0;
  st = f->ApplyUpdates(live::EncodeUpdateBatch(batch()), &ignored);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("follows the primary " + at));
  auto replication = [&] {
    return nlohmann::json::parse(primary->StatsJson())["live"]["replication"];
  };
  ASSERT_EQ(replication()["followers"].size(), 1u);
  EXPECT_TRUE(replication()["followers"][0]["in_sync"].get<bool>());
  EXPECT_EQ(replication()["followers"][0]["lag"].get<int64_t>(), 0);
  {
    httplib::Client http("127.0.0.1", primary->admin_port());
    auto metrics = http.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_THAT(metrics->body, HasSubstr("fanout_live_replica_lag{replica="));
    EXPECT_THAT(metrics->body, HasSubstr("fanout_live_replica_in_sync{replica="));
  }
  // Down: writes go on (the first waits out --live-replica-wait-ms), and
  // the follower is out of sync.
  f.reset();
  follower->Stop();
  follower.reset();
  for (int i = 0; i < 3; ++i) v = Apply(c.get(), batch());
  EXPECT_FALSE(replication()["followers"][0]["in_sync"].get<bool>());
  EXPECT_EQ(replication()["followers"][0]["fell_behind"].get<int64_t>(), 1);
  EXPECT_EQ(replication()["followers"][0]["lag"].get<int64_t>(), 3);
  // Back: caught up before it serves, then in sync again.
  ASSERT_TRUE(start(tmp_.Sub("b"), at, &follower).ok());
  f = connect(*follower);
  ASSERT_TRUE(f->Info(&info).ok());
  EXPECT_EQ(info.live_version, v);
  v = Apply(c.get(), batch());
  ASSERT_TRUE(f->Info(&info).ok());
  EXPECT_EQ(info.live_version, v);
  same(c.get(), f.get(), v);
  // A new follower starts from nothing.
  std::unique_ptr<PartitionServer> fresh;
  ASSERT_TRUE(start(tmp_.Sub("c"), at, &fresh).ok());
  auto g = connect(*fresh);
  same(c.get(), g.get(), v);
  EXPECT_EQ(nlohmann::json::parse(fresh->StatsJson())["live"]["replication"]["lag"].get<int64_t>(),
            0);
  g.reset();
  fresh->Stop();
  // A primary restarted after writing a compacted base keeps only the
  // records after it: a follower further behind is refused at start.
  c.reset();
  f.reset();
  follower->Stop();
  primary->Stop();
  ASSERT_TRUE(start(tmp_.Sub("a"), "", &primary, 0).ok());
  c = connect(*primary);
  int64_t version = 0, edges = 0;
  double seconds = 0;
  ASSERT_TRUE(c->Compact(&version, &edges, &seconds).ok());
  for (int i = 0; i < 200; ++i) {
    if (nlohmann::json::parse(primary->StatsJson())["live"]["base_file"]["version"] == v) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  c.reset();
  primary->Stop();
  ASSERT_TRUE(start(tmp_.Sub("a"), "", &primary).ok());
  const std::string at2 = "127.0.0.1:" + std::to_string(primary->port());
  st = start(tmp_.Sub("d"), at2, &fresh);
  EXPECT_EQ(st.code(), Status::Code::kNotFound) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("keeps records after version " + std::to_string(v)));
  EXPECT_THAT(st.message(), HasSubstr("copy of the primary's live folder"));
  // The follower that holds them all goes on.
  ASSERT_TRUE(start(tmp_.Sub("b"), at2, &follower).ok());
  c = connect(*primary);
  f = connect(*follower);
  v = Apply(c.get(), batch());
  ASSERT_TRUE(f->Info(&info).ok());
  EXPECT_EQ(info.live_version, v);
  same(c.get(), f.get(), v, v - 1);  // the primary reads from its base's version on
}

// fetch_updates from peers posing as followers: names, versions and sizes
// are refused by name or bounded, the followers tracked are bounded, rogue
// "followers" that stop fetching cost one write one wait, and junk feed
// bytes (a rogue primary's) are refused by the parser.
TEST_F(LiveServerTest, AFetchFromAPeerPosingAsAFollowerIsBounded) {
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  o.live_replica_wait_ms = 200;
  StartServers(1, o);
  auto c = Connect(0);
  live::UpdateBatch b;
  b.add_edges = {{0, 1}};
  ASSERT_EQ(Apply(c.get(), b), 1);
  rpc::RpcClient::UpdateFeed feed;
  Status st = c->FetchUpdates(0, 0, "a b", 1 << 20, &feed);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  st = c->FetchUpdates(0, 0, std::string(300, 'x'), 1 << 20, &feed);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  st = c->FetchUpdates(-1, 0, "x", 1 << 20, &feed);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  st = c->FetchUpdates(99, 0, "x", 1 << 20, &feed);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("holds records the primary does not"));
  ASSERT_TRUE(c->FetchUpdates(0, 0, "x", int64_t{2} << 30, &feed).ok());
  EXPECT_EQ(feed.committed, 1);
  // 64 in-sync "followers" that never fetch again: the 65th is refused...
  for (int i = 0; i < 64; ++i)
    ASSERT_TRUE(c->FetchUpdates(1, 0, "f" + std::to_string(i), 0, &feed).ok()) << i;
  st = c->FetchUpdates(1, 0, "one-more", 0, &feed);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted) << st.ToString();
  // ... a write waits for them once, then they are out of sync ...
  ASSERT_EQ(Apply(c.get(), b), 2);
  ASSERT_EQ(Apply(c.get(), b), 3);
  const auto j = nlohmann::json::parse(servers_[0]->StatsJson())["live"]["replication"];
  EXPECT_EQ(j["wait_timeouts"].get<int64_t>(), 1);
  for (const auto& f : j["followers"]) EXPECT_FALSE(f["in_sync"].get<bool>()) << f["name"];
  // ... and a new name takes an out-of-sync one's place.
  ASSERT_TRUE(c->FetchUpdates(3, 0, "one-more", 0, &feed).ok());
  // Junk feed bytes.
  std::vector<FeedRecord> records;
  EXPECT_FALSE(ParseFeedRecords(std::string(11, '\0'), 1, &records).ok());
  std::string rec(12, '\0');
  const uint64_t one = 1;
  const uint32_t big = 1000;
  std::memcpy(rec.data(), &one, 8);
  std::memcpy(rec.data() + 8, &big, 4);
  st = ParseFeedRecords(rec + "abc", 1, &records);
  EXPECT_THAT(st.message(), HasSubstr("runs past the reply"));
  std::string two(12, '\0');
  const uint64_t seven = 7;
  std::memcpy(two.data(), &seven, 8);
  st = ParseFeedRecords(two, 1, &records);
  EXPECT_THAT(st.message(), HasSubstr("record 7 where 1 was due"));
}

// A follower of a primary that requires mutual TLS reaches it over TLS: the
// CA its own server trusts, and its own certificate as the client's.
TEST_F(LiveServerTest, AFollowerReachesAPrimaryThatRequiresMutualTls) {
  testing::TestCerts certs;
  const std::string cert_dir = tmp_.Sub("certs");
  ASSERT_EQ(::mkdir(cert_dir.c_str(), 0700), 0);
  ASSERT_TRUE(testing::MakeTestCerts(cert_dir, &certs));
  auto start = [&](const std::string& live, const std::string& follow,
                   std::unique_ptr<PartitionServer>* out) {
    ServerOptions o;
    o.dataset_dir = testing::CoraDir(1);
    o.local_socket = "off";
    o.data_plane = false;
    o.tls_cert = certs.server;
    o.tls_key = certs.server_key;
    o.tls_ca = certs.ca;
    o.live_dir = live;
    o.live_follow = follow;
    o.live_catch_up_s = 10;
    *out = std::make_unique<PartitionServer>(o);
    return (*out)->Start();
  };
  std::unique_ptr<PartitionServer> primary, follower;
  ASSERT_TRUE(start(tmp_.Sub("a"), "", &primary).ok());
  rpc::RpcOptions ro;
  ro.tls = {certs.ca, certs.client, certs.client_key};
  std::unique_ptr<rpc::RpcClient> c;
  ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", primary->port(), ro, &c).ok());
  live::UpdateBatch b;
  b.add_edges = {{0, 1}};
  ASSERT_EQ(Apply(c.get(), b), 1);
  Status st = start(tmp_.Sub("b"), "127.0.0.1:" + std::to_string(primary->port()), &follower);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(Apply(c.get(), b), 2);
  std::unique_ptr<rpc::RpcClient> f;
  ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", follower->port(), ro, &f).ok());
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(f->Info(&info).ok());
  EXPECT_EQ(info.live_version, 2);
}

TEST_F(LiveServerTest, ALogOfAnotherDatasetIsRefusedAtStart) {
  // A log whose batch names a node this partition does not have.
  const std::string dir = tmp_.Sub("live");
  ServerOptions o;
  o.live_dir = dir;
  StartServers(1, o);
  servers_[0]->Stop();
  servers_.clear();
  {
    live::LogReplayReport r;
    std::unique_ptr<live::UpdateLog> log;
    ASSERT_TRUE(live::UpdateLog::Open(dir + "/part-0.updates.log", {}, {}, &r, &log).ok());
    live::UpdateBatch b;
    b.add_edges = {{0, int64_t{1} << 40}};
    uint64_t seq = 0;
    ASSERT_TRUE(log->Append(live::EncodeUpdateBatch(b), &seq).ok());
  }
  ServerOptions so = o;
  so.dataset_dir = testing::CoraDir(1);
  so.partition = 0;
  so.local_socket = "off";
  PartitionServer s(so);
  Status st = s.Start();
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("record 1: this partition refuses it"));
}

// A compaction's base written to the live folder: the log cut at its
// version, a restart that reads it and replays only the records after it
// (the rows, edge ids, feature rows and labels at every version it keeps
// the same, and the writers' retries still told apart), and a damaged base
// file refused by name at start.
TEST_F(LiveServerTest, ACompactedBaseOnDiskIsReadAtRestartAndTheLogIsCut) {
  ServerOptions o;
  o.live_dir = tmp_.Sub("live");
  o.live_compact_ratio = 0;  // compactions when asked only
  o.live_compact_mib = 0;
  o.live_checkpoint_mib = 0;  // the base to disk after every compaction
  o.live_retain_s = 0;
  StartServers(1, o);
  auto c = Connect(0);
  int64_t u = 0;
  while (whole_.csr.indptr[u + 1] - whole_.csr.indptr[u] < 2) ++u;
  const std::vector<int64_t> uv{u};
  std::string base_row;
  ASSERT_TRUE(c->Features(ArrayView<const int64_t>(uv), &base_row).ok());
  live::UpdateBatch b1;
  b1.add_edges = {{u, 7}};
  b1.writer = 0xaaaa;  // heard from before the base alone: its table comes from the file
  b1.writer_seq = 1;
  b1.feature_rows = {u};
  b1.row_bytes = static_cast<int64_t>(base_row.size());
  b1.feature_bytes = std::string(base_row.size(), '\x02');
  b1.label_rows = {u};
  b1.labels = {4};
  ASSERT_EQ(Apply(c.get(), b1), 1);
  live::UpdateBatch b2;
  b2.add_edges = {{u, 9}};
  ASSERT_EQ(Apply(c.get(), b2), 2);
  int64_t cv = 0, ce = 0;
  double cs = 0;
  ASSERT_TRUE(c->Compact(&cv, &ce, &cs).ok());
  ASSERT_EQ(cv, 2);
  nlohmann::json j = nlohmann::json::parse(servers_[0]->StatsJson());
  EXPECT_EQ(j["live"]["base_file"]["version"], 2) << j["live"].dump();
  EXPECT_EQ(j["live"]["base_file"]["writes"], 1);
  EXPECT_EQ(j["live"]["base_file"]["bytes"].get<int64_t>(),
            static_cast<int64_t>(std::filesystem::file_size(o.live_dir + "/part-0.base")));
  EXPECT_EQ(j["live"]["log"]["base_version"], 2);
  EXPECT_EQ(j["live"]["log"]["bytes"], live::kLogHeaderBytes);  // every record is in the base
  // After the base: this writer's next batch (an edge in, a base edge out).
  live::UpdateBatch b3;
  b3.add_edges = {{u, 11}};
  const int64_t gone = whole_.csr.indices[whole_.csr.indptr[u]];
  b3.remove_edges = {{u, gone}};
  b3.writer = 0xfeed;
  b3.writer_seq = 2;
  ASSERT_EQ(Apply(c.get(), b3), 3);
  // Rows with their edge ids at versions 2 and 3, feature rows and labels.
  auto read = [&](rpc::RpcClient* cl, int64_t version) {
    rpc::SampleCall call;
    call.fanout = -1;
    call.version = version;
    rpc::SampleReply r;
    EXPECT_TRUE(cl->Sample(ArrayView<const int64_t>(uv), call, &r).ok());
    auto n = r.Neighbors();
    auto e = r.EdgeIds();
    std::string row, label;
    EXPECT_TRUE(cl->Features(ArrayView<const int64_t>(uv), &row, version).ok());
    EXPECT_TRUE(cl->Labels(ArrayView<const int64_t>(uv), &label, version).ok());
    return std::make_tuple(std::vector<int64_t>(n.begin(), n.end()),
                           std::vector<int64_t>(e.begin(), e.end()), row, label);
  };
  const auto at2 = read(c.get(), 2), at3 = read(c.get(), 3);
  EXPECT_EQ(std::get<2>(at3), b1.feature_bytes);
  EXPECT_NE(std::find(std::get<0>(at3).begin(), std::get<0>(at3).end(), 11),
            std::get<0>(at3).end());

  servers_[0]->Stop();
  servers_.clear();
  StartServers(1, o);
  auto c2 = Connect(0);
  j = nlohmann::json::parse(servers_[0]->StatsJson());
  EXPECT_EQ(j["live"]["base_file"]["read_at_start"], 2);
  EXPECT_EQ(j["live"]["base_file"]["bytes"].get<int64_t>(),
            static_cast<int64_t>(std::filesystem::file_size(o.live_dir + "/part-0.base")));
  EXPECT_EQ(j["live"]["log"]["replayed_at_start"], 1);  // record 3 alone
  EXPECT_EQ(j["live"]["committed_version"], 3);
  EXPECT_TRUE(read(c2.get(), 2) == at2);
  EXPECT_TRUE(read(c2.get(), 3) == at3);
  rpc::SampleCall call;
  call.version = 1;  // folded into the base on disk
  rpc::SampleReply r;
  Status folded = c2->Sample(ArrayView<const int64_t>(uv), call, &r);
  EXPECT_EQ(folded.code(), Status::Code::kNotFound) << folded.ToString();
  EXPECT_THAT(folded.message(), HasSubstr("the oldest version it reads is 2"));
  // Both batches are retries: the first writer's known from the base
  // file's table alone, the second's from the log's replay.
  int64_t v = -1, ops = -1;
  bool retry = false;
  ASSERT_TRUE(c2->ApplyUpdates(live::EncodeUpdateBatch(b1), &v, &ops, &retry).ok());
  EXPECT_TRUE(retry);
  ASSERT_TRUE(c2->ApplyUpdates(live::EncodeUpdateBatch(b3), &v, &ops, &retry).ok());
  EXPECT_TRUE(retry);
  EXPECT_TRUE(read(c2.get(), -1) == at3);
  // A new edge after the restart gets a new id (the ordinal came back too).
  live::UpdateBatch b6;
  b6.add_edges = {{u, 13}};
  ASSERT_EQ(Apply(c2.get(), b6), 6);
  const auto at6 = read(c2.get(), 6);
  std::set<int64_t> ids(std::get<1>(at6).begin(), std::get<1>(at6).end());
  EXPECT_EQ(ids.size(), std::get<1>(at6).size()) << "an edge id given twice";
  // A second compaction writes the base again and cuts the log again.
  ASSERT_TRUE(c2->Compact(&cv, &ce, &cs).ok());
  EXPECT_EQ(cv, 6);
  j = nlohmann::json::parse(servers_[0]->StatsJson());
  EXPECT_EQ(j["live"]["base_file"]["version"], 6);
  EXPECT_EQ(j["live"]["log"]["base_version"], 6);
  servers_[0]->Stop();
  servers_.clear();
  StartServers(1, o);
  auto c3 = Connect(0);
  EXPECT_TRUE(read(c3.get(), 6) == at6);
  servers_[0]->Stop();
  servers_.clear();

  // Damaged: a byte of its edges flipped. Refused naming the file; nothing served.
  const std::string path = o.live_dir + "/part-0.base";
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    f.seekp(size / 2);
    char x = 0;
    f.seekg(size / 2);
    f.read(&x, 1);
    x = static_cast<char>(x ^ 0x5a);
    f.seekp(size / 2);
    f.write(&x, 1);
  }
  ServerOptions so = o;
  so.dataset_dir = testing::CoraDir(1);
  so.partition = 0;
  so.local_socket = "off";
  PartitionServer s(so);
  Status st = s.Start();
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr(path));
}

}  // namespace
}  // namespace fanout::server

namespace fanout::server {
namespace {

// A writer streams update batches to a live fanout-server process, which is
// killed with SIGKILL at a different point each round; after each restart
// every acknowledged batch is there, whole (every one of its edges), at a
// version at least the one it was acknowledged at.
TEST(LiveServerKillTest, KillNineMidIngestLosesNoAcknowledgedBatch) {
  datasets::testing::TempDir tmp;
  const std::string dir = testing::CoraDir(1), live = tmp.Sub("live");
  std::map<int64_t, live::UpdateBatch> acked;  // by version
  std::mt19937_64 rng(5);
  for (int round = 0; round < 8; ++round) {
    // Odd rounds compact whenever a batch came (each poll, the generation
    // before dropped at once): the kill lands in or between compactions, and
    // the checks after the restart read while the replayed delta is folded.
    std::vector<std::string> flags{"--live-dir", live};
    if (round % 2 == 1)
      flags.insert(flags.end(), {"--live-compact-ratio", "0.00001", "--live-retain-s", "0",
                                 "--live-checkpoint-mib", "0"});
    testing::Child child = testing::StartChild(dir, 0, flags);
    testing::Reaper reaper{{&child}};
    ASSERT_GT(child.port, 0) << "round " << round << ": the server did not start";
    std::unique_ptr<rpc::RpcClient> c;
    ASSERT_TRUE(rpc::RpcClient::Connect(child.address(), {}, &c).ok());
    rpc::RemotePartitionInfo info;
    ASSERT_TRUE(c->Info(&info).ok());
    // Every batch acknowledged before this restart is there, whole.
    int64_t newest = acked.empty() ? 0 : acked.rbegin()->first;
    EXPECT_GE(info.live_version, newest) << "round " << round;
    std::map<int64_t, std::vector<int64_t>> rows;
    for (const auto& [version, b] : acked)
      for (const live::EdgeUpdate& e : b.add_edges) {
        auto it = rows.find(e.src);
        if (it == rows.end()) {
          rpc::SampleCall call;
          call.fanout = -1;
          rpc::SampleReply r;
          const std::vector<int64_t> ids{e.src};
          ASSERT_TRUE(c->Sample(ArrayView<const int64_t>(ids), call, &r).ok());
          auto n = r.Neighbors();
          it = rows.emplace(e.src, std::vector<int64_t>(n.begin(), n.end())).first;
        }
        ASSERT_NE(std::find(it->second.begin(), it->second.end(), e.dst), it->second.end())
            << "round " << round << ": batch " << version << " lost edge " << e.src << " -> "
            << e.dst;
      }
    // A writer streams batches; the server dies under it.
    const int64_t n = info.num_nodes_total;
    std::mutex mu;
    std::thread writer([&, seed = rng()] {
      std::mt19937_64 wr(seed);
      std::unique_ptr<rpc::RpcClient> w;
      if (!rpc::RpcClient::Connect(child.address(), {}, &w).ok()) return;
      for (;;) {
        live::UpdateBatch b;
        for (int i = 0; i < 20; ++i)
          b.add_edges.push_back({static_cast<int64_t>(wr() % n), static_cast<int64_t>(wr() % n)});
        int64_t version = 0;
        if (!w->ApplyUpdates(live::EncodeUpdateBatch(b), &version).ok()) return;
        std::lock_guard<std::mutex> l(mu);
        acked[version] = b;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + 40 * round));
    kill(child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
    writer.join();
  }
  EXPECT_GT(acked.size(), 6u);
  // The compacting rounds wrote the base to disk (and later rounds read it).
  struct stat sb {};
  EXPECT_EQ(::stat((live + "/part-0.base").c_str(), &sb), 0);
}

// Replicas under kill -9: a follower killed again and again while its
// primary ingests (in a fetch, in an append, in odd rounds in a compaction
// and a base write of its own) restarts, has caught up before it serves (at
// least what the primary had committed when it started), and reads the
// versions it holds as the primary does, row for row.
TEST(LiveServerKillTest, AFollowerKilledMidIngestCatchesUpAndReadsAsThePrimary) {
  datasets::testing::TempDir tmp;
  const std::string dir = testing::CoraDir(1), follower_live = tmp.Sub("follower");
  ServerOptions po;
  po.dataset_dir = dir;
  po.local_socket = "off";
  po.data_plane = false;
  po.live_dir = tmp.Sub("primary");
  po.live_replica_wait_ms = 200;
  po.live_compact_ratio = 0;  // the primary keeps every version readable
  po.live_compact_mib = 0;
  PartitionServer primary(po);
  ASSERT_TRUE(primary.Start().ok());
  const std::string at = "127.0.0.1:" + std::to_string(primary.port());
  std::unique_ptr<rpc::RpcClient> p;
  ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", primary.port(), {}, &p).ok());
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(p->Info(&info).ok());
  const int64_t n = info.num_nodes_total;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acked{0};
  std::thread writer([&] {
    std::mt19937_64 wr(9);
    std::unique_ptr<rpc::RpcClient> w;
    if (!rpc::RpcClient::Connect("127.0.0.1", primary.port(), {}, &w).ok()) return;
    while (!stop.load()) {
      live::UpdateBatch b;
      for (int i = 0; i < 20; ++i)
        b.add_edges.push_back({static_cast<int64_t>(wr() % 64), static_cast<int64_t>(wr() % n)});
      int64_t version = 0;
      if (!w->ApplyUpdates(live::EncodeUpdateBatch(b), &version).ok()) return;
      acked = version;
    }
  });
  auto row = [](rpc::RpcClient* c, int64_t u, int64_t version, std::vector<int64_t>* out) {
    rpc::SampleCall call;
    call.fanout = -1;
    call.version = version;
    rpc::SampleReply r;
    const std::vector<int64_t> ids{u};
    FANOUT_RETURN_IF_ERROR(c->Sample(ArrayView<const int64_t>(ids), call, &r));
    auto nb = r.Neighbors();
    out->assign(nb.begin(), nb.end());
    return Status::OK();
  };
  for (int round = 0; round < 8; ++round) {
    std::vector<std::string> flags{"--live-dir", follower_live, "--live-follow", at};
    if (round % 2 == 1)
      flags.insert(flags.end(), {"--live-compact-ratio", "0.00001", "--live-retain-s", "0",
                                 "--live-checkpoint-mib", "0"});
    const int64_t before = acked.load();
    testing::Child child = testing::StartChild(dir, 0, flags);
    testing::Reaper reaper{{&child}};
    ASSERT_GT(child.port, 0) << "round " << round << ": the follower did not start";
    std::unique_ptr<rpc::RpcClient> f;
    ASSERT_TRUE(rpc::RpcClient::Connect(child.address(), {}, &f).ok());
    ASSERT_TRUE(f->Info(&info).ok());
    EXPECT_GE(info.live_version, before) << "round " << round << ": served before caught up";
    EXPECT_EQ(info.live_follows, at);
    const int64_t v = info.live_version;
    for (int64_t u = 0; u < 64; u += 7) {
      std::vector<int64_t> a, b;
      Status st = row(f.get(), u, v, &b);
      if (st.code() == Status::Code::kNotFound) continue;  // folded into the follower's new base
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_TRUE(row(p.get(), u, v, &a).ok());
      ASSERT_EQ(a, b) << "round " << round << ", node " << u << " at version " << v;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + 40 * round));
    kill(child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
  }
  stop = true;
  writer.join();
  EXPECT_GT(acked.load(), 8);
  p.reset();
  primary.Stop();
}

}  // namespace
}  // namespace fanout::server
