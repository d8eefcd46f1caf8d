// ClusterSession: one thread's view of the cluster. Each partition has one
// Link (its replica in use, Thrift client, data-plane peer, info, failover and
// fallback state); the session routes ids to partitions, sends, fails over,
// falls back and re-probes per link, and merges the replies. Internal to
// client/. Its pieces, one concept a file:
//   cluster_session_link.cc   link policy: open, failover, fallback, re-probe, go home, routing
//   cluster_session.cc        the calls and their per-method merge (Sample, Features, ...)
//   cluster_session_local.cc  partitions served here from their exports, and the
//                             hand-off of that work to the cluster's reporter
// The exchange templates (Exchange, WatchedReceive, WithFailover) stay here,
// where every call sees them.
#ifndef FANOUT_CLIENT_DETAIL_CLUSTER_SESSION_H_
#define FANOUT_CLIENT_DETAIL_CLUSTER_SESSION_H_

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/cluster.h"
#include "common/feature_dtype.h"
#include "common/id_range.h"
#include "rpc/codec.h"
#include "sampler/negative.h"
#include "sampler/temporal.h"
#include "sampler/walk.h"

namespace fanout::client {

class ClusterSession : public Session {
 public:
  // Scatter lists up to this long go to ucp_am_recv_data_nbx as an iov.
  static constexpr size_t kMaxDirectSegments = 16;

  // A session keeps its cluster (health checks, replicas, mappings) alive.
  // `mode`: kAuto = the cluster's own choice; kTcp = Thrift only (no data
  // plane, no export read here); kUcx = the UCX data plane, required (no
  // export read here).
  ClusterSession(std::shared_ptr<const Cluster> c, const SessionMode& mode)
      : c_(std::move(c)),
        use_local_(mode.data_plane == rpc::DataPlaneMode::kAuto),
        local_sampling_(mode.local_sampling < 0 ? c_->local_sampling() : mode.local_sampling > 0),
        ctx_(mode.data_plane == rpc::DataPlaneMode::kTcp ? nullptr : c_->data_ctx_),
        must_ucx_(mode.data_plane == rpc::DataPlaneMode::kUcx ||
                  c_->mode_ == rpc::DataPlaneMode::kUcx) {}
  ~ClusterSession() override {
    HandOffLocalWork(true);
    for (size_t p = 0; p < path_replica_.size(); ++p)
      c_->MovePath(static_cast<int>(p), path_replica_[p], path_route_[p], -1, -1);
  }

  Status Open();
  std::vector<PartitionPath> Paths() const override;
  Status Pin(const std::vector<int64_t>& versions) override;
  std::vector<int64_t> Pinned() const override { return pinned_; }
  Status Newest(std::vector<int64_t>* versions) override;

  // Sends one request to every partition with routed ids (over the data plane
  // where it is in use), then receives every reply. A data plane that fails
  // with Unavailable falls back to Thrift for that server: the same request
  // is sent again there (a pure function: same answer). On a failure,
  // connections with a reply still owed are dropped (reconnected on next
  // use), so no later call can read a stale reply. via_dp_[p] says which
  // path partition p's reply took. `base` null: Thrift only (a request the
  // data plane's wire does not carry).
  template <typename SinkFn, typename SendFn, typename ReceiveFn>
  Status Exchange(const rpc::DataRequest* base, SinkFn&& sink, SendFn&& send, ReceiveFn&& receive) {
    const int k = c_->num_parts();
    if (c_->health_checks_) GoHome();
    if (channel_) Reprobe();
    std::vector<char> owed(k, 0);  // 1 thrift, 2 data plane
    // Whatever ends this call (an error, or an exception from a sink or an
    // allocation), replies still owed are given up: no later call can read
    // a stale reply, and no peer stays busy.
    struct Abandoner {
      ClusterSession* s;
      std::vector<char>* owed;
      ~Abandoner() {
        for (size_t p = 0; p < owed->size(); ++p) {
          if ((*owed)[p] == 1) s->links_[p].client->Abandon();
          if ((*owed)[p] == 2) s->channel_->Abandon(s->links_[p].peer);
        }
      }
    } abandoner{this, &owed};
    via_dp_.assign(k, 0);
    Status st;
    for (int p = 0; p < k && st.ok(); ++p) {
      if (by_part_[p].empty() || served_[p]) continue;
      if (links_[p].peer >= 0 && base != nullptr) {
        // A live partition's data-plane request names its version (the
        // reply does not say which it read): one not pinned yet in this
        // batch is pinned at its newest first.
        if (!pinned_.empty() && pinned_[p] < 0) {
          st = NewestOf(p, &pinned_[p]);
          if (!st.ok()) break;
        }
        rpc::DataRequest r = PartRequest(*base, p);
        st = channel_->Post(links_[p].peer, r, sink(p));
        if (st.ok()) {
          owed[p] = 2;
          continue;
        }
        if (st.code() != Status::Code::kUnavailable) break;
        Fallback(p, st);
        st = Status::OK();
      }
      st = EnsureClient(p);
      if (!st.ok()) break;
      st = WithFailover(p, send(p), [&] { return send(p); });
      owed[p] = 1;
    }
    for (int p = 0; p < k && st.ok(); ++p) {
      if (owed[p] == 2) {
        // Where health checks run, a replica found down is given up at once
        // rather than waited on for the whole deadline.
        const int64_t given_up = channel_->stats().given_up,
                      aborted = channel_->stats().aborted_by_reset;
        const int r = links_[p].replica;
        const std::function<bool()> down_now =
            c_->health_checks_ ? std::function<bool()>([this, p, r] { return !c_->Healthy(p, r); })
                               : std::function<bool()>();
        st = channel_->Wait(links_[p].peer, down_now);
        if (!st.ok() && channel_->stats().aborted_by_reset > aborted) {
          // Lost to a reset for another server's timeout, not a failure of
          // this one: the same request again on its data plane (the endpoint
          // reopens), once.
          rpc::DataRequest again = PartRequest(*base, p);
          st = channel_->Post(links_[p].peer, again, sink(p));
          if (st.ok()) st = channel_->Wait(links_[p].peer, down_now);
        }
        owed[p] = 0;
        if (st.ok()) {
          via_dp_[p] = 1;
          continue;
        }
        if (DataFault(p, st)) {
          // This replica's data is damaged (its reply says which file and
          // block): another replica answers the same request over Thrift.
          st = WithFailover(p, st, [&] { return send(p); });
          if (!st.ok()) break;
          owed[p] = 1;
        } else {
          if (st.code() != Status::Code::kUnavailable &&
              st.code() != Status::Code::kDeadlineExceeded)
            break;
          const bool down = channel_->stats().given_up > given_up;
          if (c_->replicas_[p].size() > 1 &&
              (down || st.code() == Status::Code::kDeadlineExceeded)) {
            // Another replica answers the same request (a pure function: the
            // same answer) over Thrift now, and over its data plane from then
            // on; the one that timed out or failed its health check is not
            // asked again (counted as a deadline, so not retried first).
            if (down) ++stats_.health_abandons;
            st = WithFailover(p, Status::DeadlineExceeded(st.message()), [&] { return send(p); });
          } else {
            // A timeout resets the channel (its shared-memory FIFO may be
            // wedged by another server that died): resend over Thrift, which
            // has its own deadline for a server that really hangs.
            Fallback(p, st);
            st = WithFailover(p, send(p), [&] { return send(p); });
          }
          if (!st.ok()) break;
          owed[p] = 1;
        }
      }
      if (owed[p] == 1) {
        owed[p] = 0;
        st = WithFailover(p, WatchedReceive(p, receive), [&] {
          Status sent = send(p);
          return sent.ok() ? WatchedReceive(p, receive) : sent;
        });
        if (st.ok()) stats_.thrift_bytes += ThriftBytes(p);
      }
    }
    for (int p = 0; p < k; ++p)
      stats_.requests += !by_part_[p].empty() && !served_[p];  // sent, not served here
    return st;
  }

  // receive(p) on partition p's Thrift connection; where health checks run
  // and p has another replica, a health verdict against its replica ends the
  // wait at once (the socket is shut down) and the call fails as a deadline,
  // so that WithFailover moves it on rather than asking that replica again.
  template <typename ReceiveFn>
  Status WatchedReceive(int p, ReceiveFn&& receive) {
    const int r = links_[p].replica;
    const int fd = c_->health_checks_ && c_->replicas_[p].size() > 1 && links_[p].client
                       ? links_[p].client->DupSocket()
                       : -1;
    if (fd < 0) return receive(p);
    c_->WatchCall(p, r, fd);
    Status st = receive(p);
    c_->UnwatchCall(p, r, fd);
    if (!st.ok() && !c_->Healthy(p, r)) {
      ++stats_.health_abandons;
      return Status::DeadlineExceeded("server " + c_->replicas_[p][r] +
                                      " failed its health check while a call waited on it (" +
                                      st.message() + ")");
    }
    return st;
  }

  // `st` is what partition p's replica answered; where that is Unavailable
  // or DeadlineExceeded, moves p to another replica and runs `again` there
  // (the same request, unchanged: sampling is a pure function of it, so the
  // same answer), at most RpcOptions::max_failovers times. When no replica
  // answers, the error names every address tried and why.
  // A data fault (Corruption or IOError from the replica's own storage: a
  // damaged block) moves p on too where p has another replica; when every
  // replica refuses, the error names each one and its file and block.
  template <typename AgainFn>
  Status WithFailover(int p, Status st, AgainFn&& again) {
    std::vector<std::string> tried;
    for (int attempt = 0;
         (Retryable(st) || DataFault(p, st)) && attempt < c_->options_.max_failovers; ++attempt) {
      if (DataFault(p, st)) ++stats_.data_faults;
      Status moved = Failover(p, st, &tried);
      if (!moved.ok()) return moved;
      ++stats_.retries;
      st = again();
    }
    if (DataFault(p, st) && !tried.empty())
      return Status::FromCode(static_cast<int>(st.code()),
                              "partition " + std::to_string(p) + ": every replica refused: " +
                                  Join(tried) + "; " + Address(p) + ": " + st.message());
    return st;
  }
  bool DataFault(int p, const Status& st) const {
    return (st.code() == Status::Code::kCorruption || st.code() == Status::Code::kIOError) &&
           c_->replicas_[p].size() > 1;
  }

  // A session that failed over returns to its own replica once that passes
  // its health checks again (tried at most once per check interval), so the
  // load spreads again after a restart.
  void GoHome();

  // Partition p's Thrift client, connected now where it was not (a
  // co-located partition's link connects only when a call needs its server).
  Status EnsureClient(int p);

  // The address of partition p's replica in use.
  const std::string& Address(int p) const { return c_->replicas_[p][links_[p].replica]; }
  // InvalidArgument naming a server whose dataset has no edge weights, where
  // `weighted` asks for them (`what`: "weighted sampling", ...).
  Status CheckWeights(bool weighted, const char* what) const;

  // Opens the data plane to partition p's replica in use.
  Status ConnectDataPlane(int p);

  static bool Retryable(const Status& st) {
    return st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kDeadlineExceeded;
  }

  static std::string Join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : "; ") + s;
    return out;
  }

  // Moves partition p to its next replica that answers (and to its data
  // plane, where this session uses one) after `why` from the current one;
  // each address tried and why goes into *tried. Waits backoff, 2x backoff,
  // ... between rounds over all replicas. `why` itself with one replica;
  // `why`'s code, naming every address tried, when none answers.
  Status Failover(int p, const Status& why, std::vector<std::string>* tried);

  void Fallback(int p, const Status& why);

  std::chrono::milliseconds ReprobeInterval() const;

  // A server whose data plane failed is asked again once per interval
  // (health_check_ms; only while its health checks pass, where they run) and
  // is back on the data plane once it answers: one slow moment does not keep
  // it on Thrift for the rest of the session.
  void Reprobe();

  // Reply bytes of partition p's last Thrift exchange.
  int64_t ThriftBytes(int p) const {
    const rpc::SampleReply& r = replies_[p];
    return static_cast<int64_t>(r.counts.size() + r.neighbors.size() + r.edge_ids.size());
  }

  // Groups ids by owning partition (positions kept) and range-checks them.
  Status Route(ArrayView<const int64_t> ids);

  // `base` for partition p: its ids (and a walk step's keys).
  rpc::DataRequest PartRequest(const rpc::DataRequest& base, int p) const;

  // A sink that grows partition p's data-plane buffer to the reply's size.
  rpc::ReplySink GrowSink(int p) { return rpc::ReplySink::Grow(&dp_replies_[p]); }

  // Partition p's rows of `out` (float32 rows of d values, at pos_[p]) as
  // runs of consecutive positions: emit(first row's address, bytes) per run.
  template <typename Emit>
  void ForEachRowRun(int p, float* out, int64_t d, Emit&& emit) const {
    const auto& pos = pos_[p];
    const size_t row = static_cast<size_t>(d) * 4;
    for (size_t j = 0; j < pos.size();) {
      size_t e = j + 1;
      while (e < pos.size() && pos[e] == pos[e - 1] + 1) ++e;
      emit(out + pos[j] * d, (e - j) * row);
      j = e;
    }
  }

  // Views of partition p's one-hop reply, whichever path it came by.
  struct HopView {
    const int32_t* counts = nullptr;
    const int64_t* neighbors = nullptr;
    const int64_t* edge_ids = nullptr;
    const float* edge_weights = nullptr;  // LABOR hops
  };

  Status ViewDataPlaneSample(int p, bool eids, bool weights, HopView* v);

  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                const sampler::MultiHopOptions& options, sampler::SampledSubgraph* out) override;

  Status SampleTemporal(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                        uint64_t request_seed, const sampler::MultiHopOptions& options,
                        sampler::SampledSubgraph* out) override;

  // One hop for `frontier` from the servers owning it, merged into hop_ in
  // frontier order.
  Status FetchHop(ArrayView<const int64_t> frontier, int64_t fanout, int32_t hop,
                  uint64_t request_seed, const sampler::SamplingOptions& sampling,
                  ArrayView<const int64_t> keep = {}, ArrayView<const int64_t> times = {},
                  const char* strategy = "uniform", ArrayView<const int64_t> type_fanouts = {},
                  ArrayView<const uint64_t> walk_keys = {});

  Status Features(ArrayView<const int64_t> ids, float* out) override;

  Status FeaturesToDevice(ArrayView<const int64_t> ids, float* d_out, int device) override;

  Status Labels(ArrayView<const int64_t> ids, int64_t* out) override;

  Status OriginalIds(ArrayView<const int64_t> ids, int64_t* out) override;

  Status Degrees(ArrayView<const int64_t> ids, int64_t* out) override;

  void UseThreadPool(ThreadPool* pool) override { pool_ = pool; }

  Status WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys, bool weighted,
                  int64_t* next, int edge_type = -1) override;
  bool StoresIncoming() const override { return c_->info_[0].direction != "out"; }

  Status HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst, uint8_t* exists,
                  int edge_type) override;

  Status SplitNodes(int split, std::vector<int64_t>* out) override;

  Status PprPush(const sampler::PprPushRequest& in, sampler::PprPushResult* out) override;

 private:
  // Partition p's part of this call is read from its mapped export here.
  // Partition p's mapped export where this session reads exports, else null.
  const LocalPartition* Local(int p) const { return use_local_ ? c_->local(p) : nullptr; }
  // Partition p's way now (Cluster::Route) and the replica it names.
  int RouteOf(int p) const;
  int RouteReplica(int p) const;
  // Tells the cluster where partition p's link is now (Cluster::Paths):
  // after every change of its replica or data-plane peer.
  void SyncPath(int p);
  bool LocalSampling() const { return use_local_ && local_sampling_; }

  bool Here(int p) const { return !by_part_[p].empty() && Local(p) != nullptr; }

  // Counts what was done here for partition p (SessionStats and the next
  // report to its server).
  void NoteLocal(int p, int64_t bytes, int64_t feature_rows, int64_t feature_bytes, int64_t nodes,
                 int64_t edges);

  // Hands what this session did on the exports to the cluster's reporter
  // (cluster.h: a background thread tells the servers), at most four times a
  // second and when the session closes. No call: a stopped server costs a
  // batch nothing.
  void HandOffLocalWork(bool now);

  // Lookup `value_of_row(local row)` of partition p's ids from its export.
  template <typename T, typename Fn>
  void LookupHere(int p, T* out, Fn&& value_of_row) {
    const int64_t base = Local(p)->view().node_begin;
    const auto& ids = by_part_[p];
    for (size_t j = 0; j < ids.size(); ++j) out[pos_[p][j]] = value_of_row(ids[j] - base);
    NoteLocal(p, static_cast<int64_t>(ids.size() * sizeof(T)), 0, 0, 0, 0);
  }

  // One hop of partition p's frontier sampled here, as its server would
  // (server/service.cc runs the same kernels on the same memory).
  Status SampleHere(int p, int64_t fanout, int32_t hop, uint64_t request_seed,
                    const sampler::SamplingOptions& sampling, ArrayView<const int64_t> times,
                    const char* strategy, ArrayView<const int64_t> type_fanouts,
                    ArrayView<const uint64_t> walk_keys);

  const std::shared_ptr<const Cluster> c_;
  const bool use_local_;                              // read co-located exports here
  const bool local_sampling_;                         // ... and sample their hops here
  const std::shared_ptr<rpc::DataPlaneContext> ctx_;  // the data plane used (null: Thrift only)
  const bool must_ucx_;                               // the data plane is required
  // Partition p's link: the one owner of everything about reaching it (the
  // replica in use, its connections, its info, failover and fallback state);
  // every message names links_[p]'s replica (Address(p)).
  struct Link {
    int replica = 0;  // index into c_->replicas_[p] of the replica in use
    int home = 0;     // ... of the replica this session started on (its share of the load)
    std::chrono::steady_clock::time_point next_home_try;  // when to try going home again
    std::chrono::steady_clock::time_point reprobe_at;     // when to try its data plane again
    std::unique_ptr<rpc::RpcClient> client;  // Thrift; null when everything is read here
    int peer = -1;                           // data-plane peer, -1 = Thrift
    rpc::RemotePartitionInfo info;           // of the replica in use
  };
  std::vector<Link> links_;
  // Per partition: the version this session reads it at until the next Pin
  // (-1: the newest, pinned at its first read).
  std::vector<int64_t> pinned_;
  // Partition p's newest committed version, asked of the replica in use
  // (-1, and no call, for a static partition).
  Status NewestOf(int p, int64_t* version);
  // Pins the live partitions of this call's routed ids that no read has
  // pinned yet (NewestOf): before lookups, whose replies do not say their
  // version.
  Status PinUnread();
  std::vector<int> path_replica_, path_route_;  // per partition: as the cluster counts it (-1: not)
  std::vector<char> served_;  // per partition: this call's part was served here (not sent)
  // Co-located partitions whose features are on disk: this session's reads.
  std::vector<std::unique_ptr<storage::BlockReader>> disk_readers_;  // per partition, on first use
  std::vector<int64_t> disk_rows_;
  std::vector<char> disk_buffer_;
  std::vector<sampler::OneHopResult> local_hops_;   // per partition: its hop sampled here
  std::vector<std::vector<int32_t>> local_counts_;  // ... and its per-node counts
  sampler::HopSampler local_sampler_;
  ThreadPool* pool_ = nullptr;        // UseThreadPool's (large local hops split over it)
  std::vector<rpc::LocalWork> work_;  // per partition: done here since the last hand-off
  std::chrono::steady_clock::time_point last_handoff_;
  std::vector<char> via_dp_;  // per partition: the last Exchange's reply came over the data plane
  std::vector<std::vector<iovec>> thrift_segments_;  // per partition: Features' direct receive
  std::vector<std::vector<int64_t>> by_part_, pos_;
  // PprPush: per partition, its entries' queries and residuals (by_part_'s
  // order), the replies, and scratch for pushes run here.
  std::vector<std::vector<int32_t>> ppr_queries_;
  std::vector<std::vector<uint64_t>> ppr_residuals_;
  std::vector<rpc::PprPushReply> ppr_replies_;
  sampler::PprPushResult ppr_here_;
  sampler::detail::IdMap ppr_map_;
  std::vector<rpc::SampleReply> replies_;
  std::vector<PodVector<char>> dp_replies_;
  std::vector<HopView> views_;
  sampler::OneHopResult hop_;
  sampler::SubgraphBuilder builder_;
  std::vector<int64_t> keep_;                        // the induced pass's node set, ascending
  std::vector<std::vector<int64_t>> times_by_part_;  // a temporal hop's times, routed as by_part_
  std::vector<std::vector<uint64_t>> walk_keys_by_part_;  // a walk step's keys, routed as by_part_
  sampler::TemporalBuilder temporal_;
  // Last, so that it goes first: UCX may still read the send ids (by_part_)
  // and write into the sinks (dp_replies_, views_) until the channel is gone.
  std::unique_ptr<rpc::DataPlaneChannel> channel_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_DETAIL_CLUSTER_SESSION_H_
