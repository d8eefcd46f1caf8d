// A Cora (Planetoid split) dataset in 2 partitions, served in process.
#ifndef FANOUT_TESTS_SERVER_SERVER_FIXTURE_H_
#define FANOUT_TESTS_SERVER_SERVER_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "datasets/formats.h"
#include "datasets/partition_store.h"
#include "rpc/rpc_client.h"
#include "sampler/csr_graph.h"
#include "server/partition_server.h"
#include "tests/datasets/test_util.h"

namespace fanout::server::testing {

// How much slower than a plain build this run is: FANOUT_TEST_TIME_SCALE,
// which `./run test --sanitize` sets (the thread sanitizer slows servers
// several times). Deadlines a test gives its clients are multiplied by it;
// nothing is timed against it.
inline int TestTimeScale() {
  const char* v = std::getenv("FANOUT_TEST_TIME_SCALE");
  const int s = v ? std::atoi(v) : 1;
  return s >= 1 && s <= 100 ? s : 1;
}

// Partitions a dataset once per test binary.
inline const std::string& CoraDir(int parts) {
  static datasets::testing::TempDir tmp_dir;  // removed at exit
  static std::map<int, std::string> dirs;
  auto it = dirs.find(parts);
  if (it != dirs.end()) return it->second;
  datasets::RawDataset ds;
  datasets::LoadOptions lo;
  lo.quiet = true;
  std::vector<std::string> notes;
  EXPECT_TRUE(datasets::LoadDataset("planetoid", datasets::testing::DataDir() + "/planetoid/cora",
                                    lo, &ds, &notes)
                  .ok());
  datasets::PartitionOptions po;
  po.num_parts = parts;
  po.quiet = true;
  std::vector<int32_t> part;
  EXPECT_TRUE(datasets::ComputePartition(ds, po, &part, &notes).ok());
  datasets::WriteOptions wo;
  wo.quiet = true;
  std::string dir = tmp_dir.Sub("cora" + std::to_string(parts));
  EXPECT_TRUE(datasets::WritePartitionedDataset(ds, part, parts, wo, dir, nullptr).ok());
  return dirs[parts] = dir;
}

// All partitions of a dataset concatenated into the whole graph (new ids).
struct WholeGraph {
  std::vector<std::shared_ptr<datasets::PartitionData>> parts;
  sampler::CsrArrays csr;
};

inline WholeGraph LoadWhole(const std::string& dir, int k) {
  WholeGraph w;
  w.csr.indptr.assign(1, 0);
  for (int p = 0; p < k; ++p) {
    auto d = std::make_shared<datasets::PartitionData>();
    EXPECT_TRUE(datasets::OpenPartition(dir, p, {}, d.get()).ok());
    int64_t base = w.csr.indptr.back();
    for (int64_t i = 1; i < static_cast<int64_t>(d->indptr.size()); ++i)
      w.csr.indptr.push_back(base + d->indptr[i]);
    w.csr.indices.insert(w.csr.indices.end(), d->indices.begin(), d->indices.end());
    w.csr.edge_ids.insert(w.csr.edge_ids.end(), d->edge_ids.begin(), d->edge_ids.end());
    w.parts.push_back(d);
  }
  return w;
}

class ServerTest : public ::testing::Test {
 protected:
  // `export_local`: the servers export their partitions to this host (the
  // default path); otherwise (unless `base` names a socket) they do not, so
  // the clients of a test take the RPC paths.
  void StartServers(int k, ServerOptions base = {}, bool export_local = false) {
    dir_ = CoraDir(k);
    whole_ = LoadWhole(dir_, k);
    if (!export_local && base.local_socket.empty()) base.local_socket = "off";
    for (int p = 0; p < k; ++p) {
      ServerOptions o = base;
      o.dataset_dir = dir_;
      o.partition = p;
      servers_.push_back(std::make_unique<PartitionServer>(o));
      Status st = servers_.back()->Start();
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }
  std::unique_ptr<rpc::RpcClient> Connect(int p, rpc::RpcOptions ro = {}) {
    std::unique_ptr<rpc::RpcClient> c;
    Status st = rpc::RpcClient::Connect("127.0.0.1", servers_[p]->port(), ro, &c);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return c;
  }
  void TearDown() override {
    for (auto& s : servers_) s->Stop();
  }
  std::string dir_;
  WholeGraph whole_;
  std::vector<std::unique_ptr<PartitionServer>> servers_;
};

}  // namespace fanout::server::testing

#endif  // FANOUT_TESTS_SERVER_SERVER_FIXTURE_H_
