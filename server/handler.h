// The Thrift handler: one per connection (it owns sampling scratch through
// its PartitionService), sharing the read-only partition, the worker pool and
// the metrics. Internal to server/: generated Thrift types stay here.
#ifndef FANOUT_SERVER_HANDLER_H_
#define FANOUT_SERVER_HANDLER_H_

#include <memory>

#include "gen-cpp/Fanout.h"
#include "rpc/framed_transport.h"
#include "server/service.h"
#include "server/tls_subject.h"

namespace fanout::server {

class RpcHandler : public rpc::gen::FanoutIf {
  friend class HandlerFactory;

 public:
  explicit RpcHandler(const ServerState* state)
      : svc_(state),
        authenticated_(state->tenants_file ? !state->tenancy->DefaultRefused()
                                           : state->options.auth_token.empty()) {
    // Without credentials a connection's requests are the default tenant's
    // (authenticate() names another).
    if (state->tenancy) {
      resolved_at_ = state->tenancy->generation();
      svc_.SetTenant(state->tenancy->DefaultId());
    }
    // This connection's own thread (TThreadedServer): a refusal's pace
    // holds no one else's request.
    svc_.SetPaceRefusals(true);
  }
  // Charges this connection to the tenant whose TLS client certificate
  // subject it presented (tenants file tls_subject), where one has it
  // (Resolve: else its token's tenant, else default).
  void SetTlsSubject(const std::string& subject);

  void partition_info(rpc::gen::PartitionInfo& out) override;
  void sample_neighbors(rpc::gen::SampleResponse& out, const rpc::gen::SampleRequest& req) override;
  void lookup_features(std::string& out, const std::string& nodes, int64_t version) override;
  void lookup_labels(std::string& out, const std::string& nodes, int64_t version) override;
  void apply_updates(rpc::gen::UpdateReply& out, const std::string& batch) override;
  void compact(rpc::gen::CompactReply& out) override;
  void fetch_updates(rpc::gen::UpdateFeed& out, int64_t after, int32_t wait_ms,
                     const std::string& follower, int64_t max_bytes) override;
  void lookup_degrees(std::string& out, const std::string& nodes) override;
  void lookup_splits(std::string& out, const std::string& nodes) override;
  void lookup_original_ids(std::string& out, const std::string& nodes) override;
  void lookup_original_names(std::vector<std::string>& out, const std::string& nodes) override;
  void ping(std::string& out, const std::string& text) override;
  void authenticate(const std::string& token) override;
  void note_failover(const rpc::gen::FailoverNote& note) override;
  void report_local(const rpc::gen::LocalReport& report) override;
  void ppr_push(rpc::gen::PprPushResponse& out, const rpc::gen::PprPushRequest& req) override;
  void has_edges(std::string& out, const std::string& rows, const std::string& neighbors,
                 const int32_t edge_type) override;

 private:
  // Unpacks a sample request's keep list: ids in range, ascending, distinct.
  Status CheckKeep(const std::string& payload, ArrayView<const int64_t>* keep) const;
  // The sample reply holding only neighbors in `keep` (and their edge ids).
  void PackKept(const sampler::OneHopResult& hop, size_t n, ArrayView<const int64_t> keep,
                bool eids, rpc::gen::SampleResponse* out);
  // A sampling request's size for its tenant's turn and quotas (its real draws).
  PartitionService::Work SampleWork(const rpc::gen::SampleRequest& req) const;
  // Unpacks and range-checks the ids of a request.
  Status CheckIds(const std::string& payload, ArrayView<const int64_t>* ids) const;
  // Runs fn as one Thrift request; a failed Status becomes the IDL exception.
  template <typename Fn>
  void Serve(int method, const size_t* reply_bytes, Fn&& fn, PartitionService::Work work = {});
  // A per-node lookup: checks the ids, then out[i] = value_of_row(local row of ids[i]).
  template <typename T, typename Fn>
  void ServeLookup(int method, const std::string& nodes, std::string& out, Fn&& value_of_row);

  // With tenants: the connection's tenant from the credentials it presented
  // (its TLS subject where a tenant has it, else its token, else default), as
  // the tenants file says now. Serve calls it whenever a reload moved the
  // tenancy's generation: a removed or rotated tenant, or `default refuse`,
  // takes effect on open connections at their next request.
  void Resolve();
  // Moves this connection's slot out of the anonymous pool to its tenant's
  // (ConnectionGuard::Bind; or to the authenticated with an auth token);
  // Unavailable naming the tenant when it holds all its slots, every one busy.
  void BindSlot();

  PartitionService svc_;
  bool authenticated_;        // this connection presented the token (or none is required)
  bool has_token_ = false;    // authenticate() named a tenant by token_
  std::string token_;         // the token it presented (tenants only)
  std::string subject_;       // its TLS client certificate's subject ("" = none)
  uint64_t resolved_at_ = 0;  // the tenancy generation Resolve last ran at
  std::string refused_why_;   // why a re-resolved connection is refused
  // A TLS connection: its client certificate's subject may name its tenant
  // (read at its first request, once the handshake is done).
  std::shared_ptr<SubjectSocket> tls_;
  bool tls_checked_ = false;
  // Its transport, holding the connection's admission (null off the server's
  // guarded transport), and the owner its slot is bound to ("" = pooled).
  std::shared_ptr<rpc::ResettingFramedTransport> framed_;
  bool bound_ = false;
  int bound_tenant_ = -1;  // the tenant id its slot is bound to (-1: the authenticated, no tenants)
  std::vector<uint64_t> keep_bits_;  // PackKept's bitmap, all zero between requests
};

class HandlerFactory : public rpc::gen::FanoutIfFactory {
 public:
  explicit HandlerFactory(const ServerState* state) : state_(state) {}
  rpc::gen::FanoutIf* getHandler(const apache::thrift::TConnectionInfo& info) override {
    auto* h = new RpcHandler(state_);
    h->tls_ = std::dynamic_pointer_cast<SubjectSocket>(info.transport);
    if (info.input)
      h->framed_ =
          std::dynamic_pointer_cast<rpc::ResettingFramedTransport>(info.input->getTransport());
    return h;
  }
  void releaseHandler(rpc::gen::FanoutIf* h) override { delete h; }

 private:
  const ServerState* state_;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_HANDLER_H_
