// A server that lies in its replies: a rogue Thrift server (the generated
// FanoutNull with a few methods answered wrongly) behind a real client.
// Every reply it gives is refused as Corruption naming the server; nothing
// is written past a buffer (run under the address sanitizer to see that).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/cluster.h"
#include "common/version.h"
#include "gen-cpp/Fanout.h"
#include "rpc/codec.h"
#include "rpc/rpc_client.h"
#include "sampler/multihop.h"

namespace fanout::client {
namespace {

using namespace apache::thrift;  // NOLINT: test-local
namespace gen = rpc::gen;

constexpr int64_t kNodes = 10;

enum class Lie {
  kNegativeCounts,
  kCountAboveFanout,
  kNeighborOutOfRange,
  kFeaturesHonest,  // lookup_features: each row's 4 floats are its id
  kFeaturesShort,   // ... one row fewer than asked
  kFeaturesLong,    // ... one row more
};
constexpr int kFeatureDim = 4;

class RogueHandler : public gen::FanoutNull {
 public:
  RogueHandler(std::atomic<int>* lie, const std::string* version, const std::atomic<int>* dim)
      : lie_(lie), version_(version), dim_(dim) {}
  void partition_info(gen::PartitionInfo& r) override {
    if (!version_->empty()) r.__set_server_version(*version_);
    r.partition = 0;
    r.num_parts = 1;
    r.node_begin = 0;
    r.node_end = kNodes;
    r.num_nodes_total = kNodes;
    r.feature_dim = dim_->load();
    r.feature_dtype = "float32";
    r.dataset_id = "rogue-ds";
    r.dataset_name = "rogue";
    r.direction = "in";
    std::vector<int64_t> off{0, kNodes};
    rpc::Pack(ArrayView<const int64_t>(off), &r.partition_offsets);
    r.max_ids_per_request = 1 << 20;
    r.max_fanout = 1000;
  }
  void ping(std::string& r, const std::string& text) override { r = text; }
  void lookup_features(std::string& r, const std::string& nodes, int64_t) override {
    const size_t n = nodes.size() / 8;
    const Lie lie = static_cast<Lie>(lie_->load());
    const size_t rows = lie == Lie::kFeaturesShort ? n - 1 : lie == Lie::kFeaturesLong ? n + 1 : n;
    std::vector<float> x(rows * kFeatureDim);
    for (size_t i = 0; i < rows; ++i) {
      int64_t id = 0;
      if (i < n) std::memcpy(&id, nodes.data() + i * 8, 8);
      for (int f = 0; f < kFeatureDim; ++f) x[i * kFeatureDim + f] = static_cast<float>(id);
    }
    r.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  }
  void sample_neighbors(gen::SampleResponse& r, const gen::SampleRequest& req) override {
    const size_t n = req.nodes.size() / 8;
    std::vector<int32_t> counts(n, 0);
    std::vector<int64_t> nbrs;
    switch (static_cast<Lie>(lie_->load())) {
      case Lie::kNegativeCounts:  // sums to the neighbors sent: [10, -2, 0...] with 8
        counts[0] = 10;
        if (n > 1) counts[1] = -2;
        nbrs.assign(8, 1);
        break;
      case Lie::kCountAboveFanout:
        counts[0] = static_cast<int32_t>(req.fanout + 5);
        nbrs.assign(counts[0], 2);
        break;
      case Lie::kNeighborOutOfRange:
        counts[0] = 1;
        nbrs.assign(1, kNodes + 1000);
        break;
    }
    rpc::Pack(ArrayView<const int32_t>(counts), &r.counts);
    rpc::Pack(ArrayView<const int64_t>(nbrs), &r.neighbors);
    if (req.with_edge_ids) r.edge_ids = r.neighbors;
  }

 private:
  std::atomic<int>* lie_;
  const std::string* version_;  // "" = says none (a server before 0.4)
  const std::atomic<int>* dim_;
};

class HostileReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A free port (bound, then released for the server to take).
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    close(s);
    auto handler = std::make_shared<RogueHandler>(&lie_, &version_, &dim_);
    server_ = std::make_unique<server::TThreadedServer>(
        std::make_shared<gen::FanoutProcessor>(handler),
        std::make_shared<transport::TServerSocket>("127.0.0.1", port_),
        std::make_shared<transport::TFramedTransportFactory>(),
        std::make_shared<protocol::TBinaryProtocolFactory>());
    thread_ = std::thread([this] { server_->serve(); });
    // Up once it answers a ping.
    for (int i = 0; i < 200; ++i) {
      std::unique_ptr<rpc::RpcClient> c;
      std::string pong;
      if (rpc::RpcClient::Connect("127.0.0.1", port_, {}, &c).ok() && c->Ping("x", &pong).ok())
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "the rogue server did not come up";
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  std::atomic<int> lie_{0};
  std::atomic<int> dim_{0};  // the feature dimension it serves (set before a client connects)
  std::string version_;      // set before a client connects
  int port_ = 0;
  std::unique_ptr<server::TThreadedServer> server_;
  std::thread thread_;
};

TEST_F(HostileReplyTest, NegativeCountsAreRefusedByTheRpcClient) {
  lie_ = static_cast<int>(Lie::kNegativeCounts);
  std::unique_ptr<rpc::RpcClient> c;
  ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", port_, {}, &c).ok());
  std::vector<int64_t> nodes{0, 1};
  rpc::SampleCall call;
  call.fanout = 10;
  call.with_edge_ids = false;
  rpc::SampleReply reply;
  Status st = c->Sample(nodes, call, &reply);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("negative count"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(address()), std::string::npos) << st.message();
}

TEST_F(HostileReplyTest, ASessionRefusesEveryLieBeforeItMerges) {
  ClusterSpec spec;
  spec.replicas = {{address()}};
  spec.has_data_plane = true;
  spec.data_plane = rpc::DataPlaneMode::kTcp;
  std::shared_ptr<Cluster> cluster;
  Status st = Cluster::Connect(spec, {}, &cluster);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<Session> s;
  ASSERT_TRUE(cluster->NewSession(&s).ok());
  const std::vector<std::pair<Lie, const char*>> lies = {
      {Lie::kNegativeCounts, "negative count"},
      {Lie::kCountAboveFanout, "above the request's fanout"},
      {Lie::kNeighborOutOfRange, "outside the dataset"}};
  for (const auto& [lie, says] : lies) {
    lie_ = static_cast<int>(lie);
    sampler::MultiHopOptions o;
    o.fanouts = {3, 2};
    o.sampling.with_edge_ids = false;
    std::vector<int64_t> seeds{0, 1, 2};
    sampler::SampledSubgraph out;
    st = s->Sample(seeds, 7, o, &out);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << says << ": " << st.ToString();
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(address()), std::string::npos) << st.message();
  }
}

// Feature rows come over Thrift straight into the caller's memory where the
// reply has exactly the rows asked for; a reply of any other size is refused
// as Corruption (and writes nothing past the caller's rows).
TEST_F(HostileReplyTest, FeatureRowsLandInPlaceOnlyWhenTheReplyHasTheirSize) {
  dim_ = kFeatureDim;
  ClusterSpec spec;
  spec.replicas = {{address()}};
  spec.has_data_plane = true;
  spec.data_plane = rpc::DataPlaneMode::kTcp;
  std::shared_ptr<Cluster> cluster;
  ASSERT_TRUE(Cluster::Connect(spec, {}, &cluster).ok());
  std::unique_ptr<Session> s;
  ASSERT_TRUE(cluster->NewSession(&s).ok());
  const std::vector<int64_t> ids{3, 1, 4, 1, 5};
  // Room for the rows and a guard row after them that nothing may touch.
  std::vector<float> x((ids.size() + 1) * kFeatureDim, -7.0f);
  lie_ = static_cast<int>(Lie::kFeaturesHonest);
  Status st = s->Features(ids, x.data());
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t i = 0; i < ids.size(); ++i)
    for (int f = 0; f < kFeatureDim; ++f)
      EXPECT_EQ(x[i * kFeatureDim + f], static_cast<float>(ids[i])) << i;
  EXPECT_EQ(s->stats().thrift_bytes >= static_cast<int64_t>(ids.size() * kFeatureDim * 4), true);
  for (Lie lie : {Lie::kFeaturesShort, Lie::kFeaturesLong}) {
    lie_ = static_cast<int>(lie);
    st = s->Features(ids, x.data());
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find("feature reply of"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(address()), std::string::npos) << st.message();
    for (int f = 0; f < kFeatureDim; ++f)
      EXPECT_EQ(x[ids.size() * kFeatureDim + f], -7.0f);  // the guard row
  }
  // The connection is still in step: an honest reply after the lies.
  lie_ = static_cast<int>(Lie::kFeaturesHonest);
  std::fill(x.begin(), x.end(), 0.0f);
  st = s->Features(ids, x.data());
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(x[2 * kFeatureDim], 4.0f);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(HostileReplyTest, AServerOfAnotherVersionIsLoggedOnceWithItsVersionMadePrintable) {
  ClusterSpec spec;
  spec.replicas = {{address()}};
  spec.has_data_plane = true;
  spec.data_plane = rpc::DataPlaneMode::kTcp;
  // A server before versions says none.
  testing::internal::CaptureStderr();
  {
    std::shared_ptr<Cluster> cluster;
    ASSERT_TRUE(Cluster::Connect(spec, {}, &cluster).ok());
    std::unique_ptr<Session> s;
    ASSERT_TRUE(cluster->NewSession(&s).ok());
    std::vector<int64_t> ids{0};
    std::vector<int64_t> labels(1);
    (void)s->Labels(ids, labels.data());  // a call: the session's link is up
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(err, "server " + address() + " runs Fanout"), 1u) << err;
  EXPECT_NE(err.find("does not say its version"), std::string::npos) << err;
  EXPECT_NE(err.find(VersionString()), std::string::npos) << err;
  // Another version, with terminal escapes in it: named once per cluster, escaped.
  version_ = "9.9.9\x1b[2J+gforged\nfanout: fake line";
  testing::internal::CaptureStderr();
  {
    std::shared_ptr<Cluster> cluster;
    ASSERT_TRUE(Cluster::Connect(spec, {}, &cluster).ok());
    std::unique_ptr<Session> a, b;
    ASSERT_TRUE(cluster->NewSession(&a).ok());
    ASSERT_TRUE(cluster->NewSession(&b).ok());
  }
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(err, "runs Fanout 9.9.9"), 1u) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_EQ(err.find("\nfanout: fake line"), std::string::npos) << err;
  // The client's own version: nothing to say.
  version_ = VersionString();
  testing::internal::CaptureStderr();
  {
    std::shared_ptr<Cluster> cluster;
    ASSERT_TRUE(Cluster::Connect(spec, {}, &cluster).ok());
  }
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("runs Fanout"), std::string::npos) << err;
}

}  // namespace
}  // namespace fanout::client
