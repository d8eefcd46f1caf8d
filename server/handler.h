// The Thrift handler: one per connection (it owns sampling scratch), sharing
// the read-only partition, the worker pool and the metrics. Internal to
// server/: generated Thrift types stay here.
#ifndef FANOUT_SERVER_HANDLER_H_
#define FANOUT_SERVER_HANDLER_H_

#include <memory>

#include "common/thread_pool.h"
#include "datasets/partition_store.h"
#include "gen-cpp/Fanout.h"
#include "sampler/neighbor_sampler.h"
#include "server/partition_server.h"
#include "server/server_metrics.h"

namespace fanout::server {

struct ServerState {
  ServerOptions options;
  std::shared_ptr<const datasets::PartitionData> data;
  sampler::CsrGraph graph;
  std::unique_ptr<ThreadPool> pool;
  ServerMetrics metrics;
};

class RpcHandler : public rpc::gen::FanoutIf {
 public:
  explicit RpcHandler(const ServerState* state) : s_(state), metrics_(const_cast<ServerMetrics*>(&state->metrics)) {}

  void partition_info(rpc::gen::PartitionInfo& out) override;
  void sample_neighbors(rpc::gen::SampleResponse& out, const rpc::gen::SampleRequest& req) override;
  void lookup_features(std::string& out, const std::string& nodes) override;
  void lookup_labels(std::string& out, const std::string& nodes) override;
  void lookup_degrees(std::string& out, const std::string& nodes) override;
  void lookup_splits(std::string& out, const std::string& nodes) override;
  void lookup_original_ids(std::string& out, const std::string& nodes) override;
  void ping(std::string& out, const std::string& text) override;

 private:
  // Unpacks and range-checks the ids of a request.
  Status CheckIds(const std::string& payload, ArrayView<const int64_t>* ids) const;
  template <typename Fn>
  void Serve(int method, Fn&& fn);
  // A per-node lookup: checks the ids, then out[i] = value_of_row(local row of ids[i]).
  template <typename T, typename Fn>
  void ServeLookup(int method, const std::string& nodes, std::string& out, Fn&& value_of_row);

  const ServerState* s_;
  ServerMetrics* metrics_;
  sampler::HopSampler sampler_;
  sampler::OneHopResult hop_;
};

class HandlerFactory : public rpc::gen::FanoutIfFactory {
 public:
  explicit HandlerFactory(const ServerState* state) : state_(state) {}
  rpc::gen::FanoutIf* getHandler(const apache::thrift::TConnectionInfo&) override { return new RpcHandler(state_); }
  void releaseHandler(rpc::gen::FanoutIf* h) override { delete h; }

 private:
  const ServerState* state_;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_HANDLER_H_
