// In-process servers on loopback: every RPC equals the local computation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "rpc/codec.h"
#include "sampler/neighbor_sampler.h"
#include "tests/server/server_fixture.h"

namespace fanout::server {
namespace {

using ::testing::HasSubstr;
using testing::ServerTest;

std::vector<int64_t> Range(int64_t a, int64_t b) {
  std::vector<int64_t> v;
  for (int64_t i = a; i < b; ++i) v.push_back(i);
  return v;
}

TEST_F(ServerTest, PartitionInfoDescribesTheStore) {
  StartServers(2);
  for (int p = 0; p < 2; ++p) {
    rpc::RemotePartitionInfo info;
    ASSERT_TRUE(Connect(p)->Info(&info).ok());
    const datasets::PartitionData& d = *whole_.parts[p];
    EXPECT_EQ(info.partition, p);
    EXPECT_EQ(info.num_parts, 2);
    EXPECT_EQ(info.node_begin, d.node_begin);
    EXPECT_EQ(info.node_end, d.node_end);
    EXPECT_EQ(info.num_nodes_total, 2708);
    EXPECT_EQ(info.num_edges, static_cast<int64_t>(d.indices.size()));
    EXPECT_EQ(info.feature_dim, 1433);
    EXPECT_EQ(info.feature_dtype, "float32");
    EXPECT_EQ(info.num_classes, 7);
    EXPECT_EQ(info.dataset_id, d.meta.dataset_id);
    EXPECT_EQ(info.partition_offsets, d.meta.offsets);
    EXPECT_EQ(info.format_version, datasets::kStoreFormatVersion);
  }
}

TEST_F(ServerTest, SamplingEqualsTheLocalSamplerOnTheWholeGraph) {
  StartServers(2);
  sampler::CsrGraph g = whole_.csr.View();
  for (int p = 0; p < 2; ++p) {
    auto client = Connect(p);
    std::vector<int64_t> nodes = Range(whole_.parts[p]->node_begin, whole_.parts[p]->node_end);
    for (int64_t fanout : {3, 10, -1}) {
      for (bool replace : {false, true}) {
        rpc::SampleCall call;
        call.fanout = fanout;
        call.replace = replace;
        call.seed = 1234 + fanout;
        call.hop = 1;
        rpc::SampleReply reply;
        Status st = client->Sample(nodes, call, &reply);
        ASSERT_TRUE(st.ok()) << st.ToString();
        sampler::SamplingOptions so;
        so.replace = replace;
        sampler::OneHopResult local;
        ASSERT_TRUE(
            sampler::SampleOneHop(g, nodes, fanout, 1, call.seed, so, nullptr, &local).ok());
        auto counts = reply.Counts();
        ASSERT_EQ(counts.size(), nodes.size());
        for (size_t i = 0; i < nodes.size(); ++i)
          ASSERT_EQ(counts[i], local.offsets[i + 1] - local.offsets[i]);
        auto nbr = reply.Neighbors();
        auto eid = reply.EdgeIds();
        ASSERT_EQ(std::vector<int64_t>(nbr.begin(), nbr.end()),
                  std::vector<int64_t>(local.neighbors.begin(), local.neighbors.end()));
        ASSERT_EQ(std::vector<int64_t>(eid.begin(), eid.end()),
                  std::vector<int64_t>(local.edge_ids.begin(), local.edge_ids.end()));
      }
    }
  }
}

TEST_F(ServerTest, LookupsEqualTheStoredArrays) {
  StartServers(2);
  for (int p = 0; p < 2; ++p) {
    const datasets::PartitionData& d = *whole_.parts[p];
    auto client = Connect(p);
    std::vector<int64_t> ids = {d.node_end - 1, d.node_begin, d.node_begin + 7, d.node_begin + 7};
    std::string rows, labels, degrees, splits;
    ASSERT_TRUE(client->Features(ids, &rows).ok());
    ASSERT_TRUE(client->Labels(ids, &labels).ok());
    ASSERT_TRUE(client->Degrees(ids, &degrees).ok());
    ASSERT_TRUE(client->Splits(ids, &splits).ok());
    const size_t row = 1433 * 4;
    ASSERT_EQ(rows.size(), ids.size() * row);
    for (size_t i = 0; i < ids.size(); ++i) {
      int64_t r = ids[i] - d.node_begin;
      EXPECT_EQ(std::memcmp(rows.data() + i * row, d.features.data() + r * row, row), 0);
      EXPECT_EQ(reinterpret_cast<const int64_t*>(labels.data())[i], d.labels[r]);
      EXPECT_EQ(reinterpret_cast<const int64_t*>(degrees.data())[i], d.indptr[r + 1] - d.indptr[r]);
      EXPECT_EQ(static_cast<uint8_t>(splits[i]), d.split[r]);
    }
    std::string pong;
    ASSERT_TRUE(client->Ping("hello", &pong).ok());
    EXPECT_EQ(pong, "hello");
  }
}

TEST_F(ServerTest, BadRequestsGetClearErrorsAndTheServerKeepsServing) {
  ServerOptions o;
  o.max_ids_per_request = 100;
  o.max_fanout = 50;
  StartServers(2, o);
  auto client = Connect(1);
  const datasets::PartitionData& d = *whole_.parts[1];
  rpc::SampleReply reply;
  rpc::SampleCall call;
  call.fanout = 5;
  Status st = client->Sample(std::vector<int64_t>{d.node_begin, 3}, call, &reply);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(),
              HasSubstr("node 3 (position 1) is outside this partition's range [" +
                        std::to_string(d.node_begin) + ", " + std::to_string(d.node_end) + ")"));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:"));  // names the server
  std::string rows;
  st = client->Features(std::vector<int64_t>{99999}, &rows);
  EXPECT_THAT(st.message(), HasSubstr("node 99999"));
  st = client->Sample(Range(d.node_begin, d.node_begin + 101), call, &reply);
  EXPECT_THAT(st.message(), HasSubstr("101 ids, more than the limit of 100"));
  call.fanout = 51;
  st = client->Sample(std::vector<int64_t>{d.node_begin}, call, &reply);
  EXPECT_THAT(st.message(), HasSubstr("fanout 51 is outside [-1, 50]"));
  call.fanout = -2;
  st = client->Sample(std::vector<int64_t>{d.node_begin}, call, &reply);
  EXPECT_TRUE(st.IsInvalidArgument());
  call.fanout = 3;
  call.weighted = true;
  st = client->Sample(std::vector<int64_t>{d.node_begin}, call, &reply);
  EXPECT_THAT(st.message(), HasSubstr("no edge weights"));
  // The same connection still works.
  call.weighted = false;
  EXPECT_TRUE(client->Sample(std::vector<int64_t>{d.node_begin}, call, &reply).ok());
  EXPECT_EQ(servers_[1]->metrics().Requests(kSampleNeighbors, kInvalidArgument), 5);
  EXPECT_EQ(servers_[1]->metrics().Requests(kLookupFeatures, kInvalidArgument), 1);
}

TEST_F(ServerTest, ConcurrentClientsGetCorrectAnswersAndMetricsAddUp) {
  StartServers(2);
  sampler::CsrGraph g = whole_.csr.View();
  const datasets::PartitionData& d = *whole_.parts[0];
  constexpr int kThreads = 24, kRequests = 40;
  std::atomic<int> wrong{0};
  std::atomic<int64_t> edges{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = Connect(0);
      for (int r = 0; r < kRequests; ++r) {
        std::vector<int64_t> nodes;
        for (int i = 0; i < 64; ++i)
          nodes.push_back(d.node_begin + (t * 131 + r * 17 + i * 7) % d.num_nodes());
        rpc::SampleCall call;
        call.fanout = 5;
        call.seed = t * 1000 + r;
        rpc::SampleReply reply;
        if (!client->Sample(nodes, call, &reply).ok()) {
          ++wrong;
          continue;
        }
        sampler::OneHopResult local;
        (void)sampler::SampleOneHop(g, nodes, 5, 0, call.seed, {}, nullptr, &local);
        auto nbr = reply.Neighbors();
        if (std::vector<int64_t>(nbr.begin(), nbr.end()) !=
            std::vector<int64_t>(local.neighbors.begin(), local.neighbors.end()))
          ++wrong;
        edges += static_cast<int64_t>(nbr.size());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const ServerMetrics& m = servers_[0]->metrics();
  EXPECT_EQ(m.Requests(kSampleNeighbors, kOk), kThreads * kRequests);
  EXPECT_EQ(m.SampledNodes(), kThreads * kRequests * 64);
  EXPECT_EQ(m.SampledEdges(), edges.load());
  EXPECT_EQ(m.InFlight(), 0);
}

TEST_F(ServerTest, HundredsOfOpenConnectionsAreAllServed) {
  StartServers(1);
  std::vector<std::unique_ptr<rpc::RpcClient>> clients;
  for (int i = 0; i < 300; ++i) clients.push_back(Connect(0));  // all open at once
  int answered = 0;
  for (size_t i = 0; i < clients.size(); ++i) {
    std::string pong;
    answered += clients[i]->Ping(std::to_string(i), &pong).ok() && pong == std::to_string(i);
  }
  EXPECT_EQ(answered, 300);
  clients.clear();
  EXPECT_EQ(servers_[0]->metrics().Requests(kPing, kOk), 300);
}

TEST_F(ServerTest, AdminEndpointReportsHealthMetricsAndStats) {
  StartServers(1);
  auto client = Connect(0);
  std::string rows;
  ASSERT_TRUE(client->Features(std::vector<int64_t>{1, 2, 3}, &rows).ok());
  httplib::Client http("127.0.0.1", servers_[0]->admin_port());
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body,
              HasSubstr("fanout_requests_total{method=\"lookup_features\",outcome=\"ok\"} 1"));
  EXPECT_THAT(metrics->body, HasSubstr("fanout_feature_rows_total 3"));
  EXPECT_THAT(metrics->body,
              HasSubstr("fanout_feature_bytes_total " + std::to_string(3 * 1433 * 4)));
  EXPECT_THAT(metrics->body,
              HasSubstr("fanout_request_duration_seconds_count{method=\"lookup_features\"} 1"));
  EXPECT_THAT(metrics->body,
              HasSubstr("# TYPE fanout_request_cpu_seconds_total counter\n"
                        "fanout_request_cpu_seconds_total{method=\"partition_info\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("fanout_process_resident_memory_bytes"));
  auto stats = http.Get("/stats");
  ASSERT_TRUE(stats);
  nlohmann::json j = nlohmann::json::parse(stats->body);
  EXPECT_EQ(j["state"], "serving");
  EXPECT_EQ(j["partition"]["num_parts"], 1);
  EXPECT_EQ(j["totals"]["feature_rows"], 3);
  EXPECT_TRUE(j["throughput"].contains("1s"));
  EXPECT_TRUE(j["throughput"].contains("60s"));
  EXPECT_EQ(j["latency"]["lookup_features"]["count"], 1);
  EXPECT_GT(j["memory"]["array_bytes"].get<int64_t>(), 2708 * 1433 * 4);
  auto page = http.Get("/");
  ASSERT_TRUE(page);
  EXPECT_THAT(page->body, HasSubstr("Fanout sampling server"));
  servers_[0]->Stop();
  EXPECT_FALSE(http.Get("/healthz"));  // the admin endpoint is gone after Stop
}

TEST_F(ServerTest, StartFailsClearlyOnAMissingDatasetOrATakenPort) {
  ServerOptions o;
  o.dataset_dir = "/nonexistent/dataset";
  PartitionServer bad(o);
  Status st = bad.Start();
  EXPECT_TRUE(st.IsNotFound());
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/dataset"));
  StartServers(1);
  ServerOptions taken;
  taken.dataset_dir = dir_;
  taken.port = servers_[0]->port();
  taken.admin_port = -1;
  PartitionServer second(taken);
  st = second.Start();
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr(std::to_string(taken.port)));
}

}  // namespace
}  // namespace fanout::server

namespace fanout::server {
namespace {

// The per-second history behind the admin page's charts: each Tick adds a
// point with the rates and latency since the previous one and the RSS given.
TEST(ServerMetricsHistoryTest, EachTickAddsThePointSinceThePreviousOne) {
  ServerMetrics m;
  EXPECT_EQ(nlohmann::json::parse(m.HistoryJson(600))["points"].size(), 0u);
  m.Tick(100);  // the first snapshot: no interval yet
  EXPECT_EQ(nlohmann::json::parse(m.HistoryJson(600))["points"].size(), 0u);
  m.RecordSample(10, 500);
  m.RecordFeatures(3, 3000);
  m.BeginRequest();
  m.EndRequest(kSampleNeighbors, kOk, 0.002);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  m.Tick(200);
  m.Tick(300);  // an interval without requests
  const nlohmann::json h = nlohmann::json::parse(m.HistoryJson(600));
  ASSERT_EQ(h["points"].size(), 2u);
  const nlohmann::json& p = h["points"][0];
  // 500 edges in a bit over 50 ms: a rate between 500/s and 10000/s.
  EXPECT_GT(p["sampled_edges_per_s"].get<double>(), 500);
  EXPECT_LT(p["sampled_edges_per_s"].get<double>(), 10000);
  EXPECT_NEAR(p["feature_bytes_per_s"].get<double>() / p["sampled_edges_per_s"].get<double>(), 6.0,
              1e-9);
  EXPECT_GE(p["p50_ms"].get<double>(), 2.0);  // bucket upper bounds: at least the time recorded
  EXPECT_EQ(p["rss_bytes"].get<int64_t>(), 200);
  const nlohmann::json& q = h["points"][1];
  EXPECT_EQ(q["sampled_edges_per_s"].get<double>(), 0.0);
  EXPECT_TRUE(q["p50_ms"].is_null());
  EXPECT_EQ(q["rss_bytes"].get<int64_t>(), 300);
  EXPECT_LE(p["t"].get<double>(), q["t"].get<double>());
  // Only the last `seconds`; at most kHistoryPoints kept.
  EXPECT_EQ(nlohmann::json::parse(m.HistoryJson(1e-9))["points"].size(), 0u);
  for (int i = 0; i < ServerMetrics::kHistoryPoints + 10; ++i) m.Tick(1);
  EXPECT_EQ(nlohmann::json::parse(m.HistoryJson(86400))["points"].size(),
            static_cast<size_t>(ServerMetrics::kHistoryPoints));
}

}  // namespace
}  // namespace fanout::server
